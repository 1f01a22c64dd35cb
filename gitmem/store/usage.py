"""How often each memory was recalled, and when last (``local/usage.json``, machine-local: never committed): a use
is one line appended to ``local/usage.jsonl`` (a prompt's hook pays ~10 µs), folded into ``usage.json`` past
:data:`USAGE_LOG_BYTES`. ``gitmem gc`` reads it to find memories nobody uses; it is derived state, rebuilt from
nothing (an unreadable file counts as empty)."""

from __future__ import annotations

import os

from gitmem.store.local import append_line, now_iso, read_json, rewrite_log, write_json
from gitmem.text import quickjson

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs every tool call's hook process
if TYPE_CHECKING:
    from datetime import datetime
    from typing import Any

    from gitmem.store.local import Where

#: past this size the log of uses is folded into ``usage.json``
USAGE_LOG_BYTES = 64 * 1024


def usage_path(repo_path: Where) -> str:
    return os.path.join(repo_path, "local", "usage.json")


def _usage_log(repo_path: Where) -> str:
    return os.path.join(repo_path, "local", "usage.jsonl")


def _count_uses(data: dict[str, Any], log: bytes) -> dict[str, Any]:
    """``data`` (``usage.json``'s counts) with the uses of the log's lines (``[time, id, ...]``) added in order."""
    for line in log.splitlines():
        try:
            stamp, *ids = quickjson.loads(line.decode("utf-8", "replace"))
        except (ValueError, TypeError, RecursionError):  # a damaged line (a crash mid-write) counts for nothing
            continue
        for memory_id in ids:
            entry = data.setdefault(str(memory_id), {"count": 0})
            entry["count"] = int(entry.get("count", 0)) + 1
            entry["last_used"] = str(stamp)
    return data


def read_usage(repo_path: Where) -> dict[str, dict[str, Any]]:
    """``{id: {"count": n, "last_used": iso}}``; an unreadable file counts as empty (it is derived state)."""
    try:
        with open(_usage_log(repo_path), "rb") as fh:
            log = fh.read()
    except OSError:
        log = b""
    return _count_uses(read_json(usage_path(repo_path)), log)


def bump_usage(repo_path: Where, ids: list[str], now: datetime | None = None) -> None:
    """Count one use of each id: one line appended to ``local/usage.jsonl`` (a prompt's hook pays ~10 µs, where
    rewriting ``usage.json`` under its lock cost milliseconds), folded into ``usage.json`` past
    :data:`USAGE_LOG_BYTES`: a busy lock leaves the fold for a later use, and a use appended while a fold runs waits
    for it and lands in the new log (:func:`~gitmem.store.local.rewrite_log`)."""
    if not ids:
        return
    log = _usage_log(repo_path)
    if append_line(log, [now_iso(now.timestamp() if now is not None else None), *ids]) <= USAGE_LOG_BYTES:
        return
    from gitmem.files.locks import LockTimeout, file_lock

    def fold(data: bytes) -> bytes:
        write_json(usage_path(repo_path), _count_uses(read_json(usage_path(repo_path)), data))
        return b""

    try:
        with file_lock(usage_path(repo_path) + ".lock", 1.0):
            rewrite_log(log, fold)
    except (LockTimeout, FileNotFoundError):
        pass
