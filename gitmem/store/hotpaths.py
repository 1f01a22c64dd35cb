"""The files the agent touched lately, per project (``local/hotpaths/<project>.jsonl``, machine-local): up to
:data:`MAX_HOT_PATHS` paths with counts that decay with a half-life of :data:`HOT_HALF_LIFE_DAYS` days, kept as a
log of uses (one line appended per use, cheap for the per-tool-call hook) folded into one line per path past
:data:`HOT_LOG_BYTES`. A session start shows the top ones and recall searches by them; a project scan lists them."""

from __future__ import annotations

import os
import time

from gitmem.store.local import append_line, read_json, rewrite_log
from gitmem.text import quickjson

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs every tool call's hook process
if TYPE_CHECKING:
    from gitmem.store.local import Where

MAX_HOT_PATHS = 50
HOT_HALF_LIFE_DAYS = 7.0
#: past this size the log of a project's hot paths is folded into one line per path (at most MAX_HOT_PATHS)
HOT_LOG_BYTES = 32 * 1024


def _hot_file(local: Where, project: str) -> str:
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in project)[:100] or "_"
    return os.path.join(local, "hotpaths", f"{safe}.jsonl")


def _decayed(score: float, then: float, now: float) -> float:
    factor: float = 0.5 ** (max(0.0, now - then) / (HOT_HALF_LIFE_DAYS * 86400))  # not math.pow: one import less
    return score * factor


def touch_hot_path(local: Where, project: str, path: str, now: float | None = None, *,
                   max_log_bytes: int = HOT_LOG_BYTES) -> None:
    """Count one use of ``path`` (its older counts decay with a half-life of a week); the top 50 are kept.

    The use is one line appended to the project's log (``[path, 1, time]``): rewriting a file costs a tool call's
    hook ~3 ms (ext4 flushes a file replaced by a rename), an append ~10 µs. Past ``max_log_bytes`` the log is
    folded into one line per path, the same counts :func:`hot_paths` reads."""
    file = _hot_file(local, project)
    if append_line(file, [path, 1.0, time.time() if now is None else now]) > max_log_bytes:
        _fold_hot_paths(file)


def _hot_counts(data: bytes) -> dict[str, list[float]]:
    """``{path: [score, time]}`` from the lines of a hot-path log, replayed in order as each use was counted:
    the score decays to the line's time and grows by its count, and past MAX_HOT_PATHS the lowest goes."""
    counts: dict[str, list[float]] = {}
    for line in data.splitlines():
        try:
            path, count, moment = quickjson.loads(line.decode("utf-8", "replace"))
            count, moment = float(count), float(moment)
        except (ValueError, TypeError, RecursionError):  # a damaged line (a crash mid-write) counts for nothing
            continue
        if not isinstance(path, str):
            continue
        entry = counts.get(path)
        counts[path] = [(_decayed(entry[0], entry[1], moment) if entry else 0.0) + count, moment]
        if len(counts) > MAX_HOT_PATHS:
            del counts[min(counts, key=lambda p: _decayed(counts[p][0], counts[p][1], moment))]
    return counts


def _earlier_lines(file: str) -> bytes:
    """The counts an earlier version kept in ``<project>.json`` (one ``[score, time]`` per path) as log lines."""
    return "".join(quickjson.dumps([path, entry[0], entry[1]]) + "\n" for path, entry in read_json(file[:-1]).items()
                   if isinstance(entry, list) and len(entry) == 2).encode("utf-8")


def _read_hot_log(file: str) -> bytes:
    """The lines an earlier version kept (:func:`_earlier_lines`), then the log's; missing or unreadable files count
    as empty (derived state)."""
    try:
        with open(file, "rb") as fh:
            return _earlier_lines(file) + fh.read()
    except OSError:
        return _earlier_lines(file)


def _fold_hot_paths(file: str) -> None:
    """Rewrite a hot-path log as one line per path, under a lock; best effort (a busy lock leaves it for later)."""
    from pathlib import Path

    from gitmem.files.locks import LockTimeout, file_lock

    def fold(data: bytes) -> bytes:
        return "".join(quickjson.dumps([path, score, moment]) + "\n"
                       for path, (score, moment) in _hot_counts(earlier + data).items()).encode("utf-8")

    try:
        with file_lock(Path(file + ".lock"), 1.0):
            earlier = _earlier_lines(file)
            rewrite_log(file, fold)
            if earlier:
                os.unlink(file[:-1])
    except (LockTimeout, FileNotFoundError):
        pass


def hot_paths(local: Where, project: str, cwd: str = "", limit: int = 10, now: float | None = None) -> list[str]:
    """The most used paths, scored by decayed count and closeness to ``cwd`` (inside it scores highest)."""
    from pathlib import Path

    moment = time.time() if now is None else now
    scored: list[tuple[float, str]] = []
    for path, (count, then) in _hot_counts(_read_hot_log(_hot_file(local, project))).items():
        score = _decayed(count, then, moment)
        if cwd:
            try:
                common = os.path.commonpath([cwd, path])
                distance = len(Path(cwd).parts) - len(Path(common).parts)
            except ValueError:
                distance = 10
            score /= 1.0 + distance
        scored.append((score, path))
    return [p for _, p in sorted(scored, reverse=True)[:limit]]
