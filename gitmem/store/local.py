"""Machine-local hook state in ``<memory repo>/local/`` (git-ignored: never committed, never pushed).

- ``observations.jsonl``: one line per observed tool call (session, time, phase, tool, truncated and redacted
  input and output summary, cwd, project). Past :data:`MAX_BYTES` or :data:`MAX_LINES` it is rotated: lines older
  than :data:`KEEP_DAYS` days (and, if that is not enough, the oldest lines until half the limits remain) move to
  monthly archives ``observations/YYYY-MM.jsonl``.
- ``candidates.jsonl``: corrections and other captures waiting for the learning loop.
- ``sessions.json``: per-session state (project, injected projects, directives not committed yet), the last
  :data:`MAX_SESSIONS` sessions, oldest dropped first.
- ``cwd-projects.json`` (in the repository's derived folder, ``.cache/``, not here: a cache, which a user who
  cannot write the repository keeps too): project id per working directory, so the per-tool-call hook need not
  open the code repo.
- ``hotpaths/<project>.jsonl``: the files the agent touched (:mod:`gitmem.store.hotpaths`); ``usage.json`` and
  ``usage.jsonl``: how often each memory was recalled (:mod:`gitmem.store.usage`).

Everything here uses the standard library and :mod:`gitmem.redact` only: it runs on every tool call, so it does
not import ``pathlib``, ``contextlib`` or the lock module at load time (they cost a tool call's hook process ~5 ms),
and its functions take a folder as a ``str`` or a ``Path`` alike (the files inside are named with ``os.path``).
"""

from __future__ import annotations

import os
import time

from gitmem.redact.engine import redact, redact_value
from gitmem.text import quickjson

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs every tool call's hook process
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator
    from pathlib import Path
    from typing import Any, TypeAlias

    #: a folder or file, as the hooks' fast path (``str``) or the rest of gitmem (``Path``) names it
    Where: TypeAlias = "str | os.PathLike[str]"

MAX_BYTES = 5 * 1024 * 1024
MAX_LINES = 8000
KEEP_DAYS = 30
MAX_SESSIONS = 100
#: where ``gitmem serve`` records its URL and pid (:mod:`gitmem.serve.runner`) for the hooks to ask it
SERVER_FILE = "server.json"
#: the session notepads' folder (:mod:`gitmem.router.notepad`); a prompt's hook looks for it before loading them
NOTEPAD_DIR = "notepad"
SUMMARY_CHARS = 500
#: every observation line is at least this long, so a file below MAX_LINES * this cannot hold MAX_LINES lines
_MIN_LINE = 60


def local_dir(repo: Path) -> Path:
    return repo / "local"


def now_iso(now: float | None = None) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if now is None else now))


def _parse_iso(value: Any) -> float | None:
    if not isinstance(value, str):
        return None
    import calendar

    try:
        return float(calendar.timegm(time.strptime(value[:19], "%Y-%m-%dT%H:%M:%S")))
    except ValueError:
        return None


def summarise(value: Any, limit: int = SUMMARY_CHARS, extra_patterns: tuple[str, ...] = ()) -> str:
    """A one-line, secret-free, truncated text form of a tool input or output."""
    if value is None:
        return ""
    cut = limit * 4 + 1024  # the text that may reach the summary; more is cut before redacting
    if isinstance(value, str):
        text = _clip(value, cut, limit * 4)
    else:
        # Redact the parsed values first, line breaks and all: in JSON text, escaped quotes and newlines would
        # hide ``{"api_key": "..."}`` or a quoted password inside a command from the rules. Only as much of them
        # as may reach the summary: a Read's output is the whole file.
        value = redact_value(_clip_strings(value, cut, limit * 4, [cut]), extra_patterns=extra_patterns)[0]
        try:
            text = _clip(quickjson.dumps(value, default=str), cut, limit * 4)
        except (TypeError, ValueError):
            text = _clip(str(value), cut, limit * 4)
    if isinstance(value, str):  # before the line breaks go (a YAML block value needs them)
        text = redact(text, extra_patterns=extra_patterns).text
    text = redact(" ".join(text.split()), extra_patterns=extra_patterns).text
    if len(text) > limit:
        text = text[:limit] + f"…[+{len(text) - limit}]"
    return text


def _clip(text: str, cut: int, least: int) -> str:
    """``text`` cut to at most ``cut`` characters, at the last space or line break past ``least`` if there is one,
    so that no secret is cut into a prefix the rules no longer recognise."""
    if len(text) <= cut:
        return text
    space = max(text.rfind(" ", 0, cut), text.rfind("\n", 0, cut))
    return text[: space if space > least else cut]


def _clip_strings(value: Any, cut: int, least: int, budget: list[int], depth: int = 0) -> Any:
    """``value`` with its strings clipped (:func:`_clip`) and, once the strings so far hold ``cut`` characters
    (``budget`` counts down), the later ones emptied: in its JSON text they start past the part that is kept."""
    if isinstance(value, str):
        clipped = _clip(value, cut, least) if budget[0] > 0 else ""
        budget[0] -= len(clipped)
        return clipped
    if depth > 64:  # deeper than any tool's output: redact_value redacts it whole
        return value
    if isinstance(value, dict):
        return {key: _clip_strings(item, cut, least, budget, depth + 1) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_clip_strings(item, cut, least, budget, depth + 1) for item in value]
    return value


def append_line(path: Where, record: Any) -> int:
    """Append one JSON line with a single ``write`` on an ``O_APPEND`` descriptor (parallel hooks never mix);
    returns the file's size after it. The write holds the file's record lock, so it waits for a fold under way
    (:func:`rewrite_log`) and, when that fold replaced the file meanwhile, appends to the new one: no line is lost."""
    data = (quickjson.dumps(record) + "\n").encode("utf-8")
    waits = 0
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        except FileNotFoundError:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            if _LOCKF and waits < 4:  # a fold per 64 kB of log: a second wait is rare, a fifth never comes
                # os.lockf, not fcntl.flock: os is loaded already, fcntl would cost every tool call's hook an import
                os.lockf(fd, os.F_LOCK, 0)
                if not _same_file(fd, path):  # a fold replaced the file while this waited: append to the new one
                    waits += 1
                    continue
            os.write(fd, data)
            return os.lseek(fd, 0, os.SEEK_CUR)  # O_APPEND wrote at the end: this is where the file ends now
        finally:
            os.close(fd)  # releases the lock


def _same_file(fd: int, path: Where) -> bool:
    try:
        return os.fstat(fd).st_ino == os.stat(path).st_ino
    except FileNotFoundError:
        return False


def rewrite_log(path: Where, fold: Callable[[bytes], bytes]) -> None:
    """Replace the log at ``path`` (one :func:`append_line` line per record) with ``fold(its content)``, while no
    append is under way: appends wait for the file's record lock, and one that opened the old file writes to the
    new one (:func:`append_line`). The caller keeps other folders out (a lock file of its own); FileNotFoundError
    when there is no log."""
    from gitmem.files.atomic import atomic_write

    fd = os.open(path, os.O_RDWR)
    try:
        if _LOCKF:
            os.lockf(fd, os.F_LOCK, 0)
        # read through the locked descriptor: closing any other one on the file would release a POSIX record lock
        chunks = list(iter(lambda: os.read(fd, 1 << 20), b""))
        atomic_write(path, fold(b"".join(chunks)))
    finally:
        os.close(fd)


#: POSIX record locks, where the platform has them (not on Windows: there appends take no lock)
_LOCKF = hasattr(os, "lockf")


# -- observations ---------------------------------------------------------------------------------------
def observations_path(local: Where) -> str:
    return os.path.join(local, "observations.jsonl")


def append_observation(local: Where, record: dict[str, Any], *, max_bytes: int = MAX_BYTES,
                       max_lines: int = MAX_LINES, keep_days: int = KEEP_DAYS, now: float | None = None) -> None:
    """Append ``record`` to the observation log, rotating it first when it is past the limits."""
    path = observations_path(local)
    try:
        size = os.stat(path).st_size
        if size > max_bytes or (size >= max_lines * _MIN_LINE and _count_lines(path) >= max_lines):
            rotate(local, max_bytes=max_bytes, max_lines=max_lines, keep_days=keep_days, now=now)
    except FileNotFoundError:
        pass
    append_line(path, record)


def _count_lines(path: Where) -> int:
    count = 0
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            count += block.count(b"\n")
    return count


def rotate(local: Where, *, max_bytes: int = MAX_BYTES, max_lines: int = MAX_LINES, keep_days: int = KEEP_DAYS,
           now: float | None = None) -> int:
    """Move old observations into monthly archives; returns how many lines moved.

    Lines older than ``keep_days`` always move; if the rest is still past half of either limit, the oldest of
    them move too, so a busy month does not rotate on every call. Runs under a lock, one rotation at a time; an
    append waits for it and lands in the rotated file (:func:`rewrite_log`)."""
    from pathlib import Path

    from gitmem.files.locks import file_lock

    path = Path(observations_path(local))
    moved: list[int] = [0]

    def archive(data: bytes) -> bytes:
        lines = data.splitlines(keepends=True)
        cutoff = (time.time() if now is None else now) - keep_days * 86400
        stamped = [(_parse_iso(_field(line, "time")), line) for line in lines]
        old: list[tuple[float | None, bytes]] = [(t, line) for t, line in stamped if t is not None and t < cutoff]
        keep = [(t, line) for t, line in stamped if t is None or t >= cutoff]
        while keep and (len(keep) > max_lines // 2 or sum(len(line) for _, line in keep) > max_bytes // 2):
            old.append(keep.pop(0))
        by_month: dict[str, list[bytes]] = {}
        for stamp, line in old:
            month = time.strftime("%Y-%m", time.gmtime(stamp)) if stamp is not None else "unknown"
            by_month.setdefault(month, []).append(line if line.endswith(b"\n") else line + b"\n")
        folder = Path(local, "observations")
        folder.mkdir(parents=True, exist_ok=True)
        for month, chunk in sorted(by_month.items()):
            with (folder / f"{month}.jsonl").open("ab") as fh:
                fh.write(b"".join(chunk))
        moved[0] = len(old)
        return b"".join(line for _, line in keep)

    with file_lock(Path(local, "observations.lock"), 5.0):
        try:
            rewrite_log(path, archive)
        except FileNotFoundError:
            return 0
    return moved[0]


def _field(line: bytes, name: str) -> Any:
    try:
        data = quickjson.loads(line.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return None
    return data.get(name) if isinstance(data, dict) else None


def read_observations(local: Where) -> Iterator[dict[str, Any]]:
    """The observations in the main file (unreadable lines skipped)."""
    try:
        fh = open(observations_path(local), encoding="utf-8")  # noqa: SIM115 - a generator closes it below
    except FileNotFoundError:
        return
    with fh:
        for line in fh:
            try:
                data = quickjson.loads(line)
            except (ValueError, RecursionError):
                continue
            if isinstance(data, dict):
                yield data


# -- small JSON state files ----------------------------------------------------------------------------
def read_json(path: Where) -> dict[str, Any]:
    """A JSON object from ``path``; missing or damaged files count as empty (all of this is derived state)."""
    return _read_object(path)[0]


def _read_object(path: Where) -> tuple[dict[str, Any], bool]:
    """The JSON object in ``path`` ({} when there is none) and whether the file is there but damaged (not UTF-8,
    not JSON, not an object, a folder)."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        return {}, False
    except (OSError, ValueError):
        return {}, True
    try:
        data = quickjson.loads(text)
    except (ValueError, RecursionError):
        return {}, bool(text.strip())
    return (data, False) if isinstance(data, dict) else ({}, True)


#: the name a damaged machine-local JSON file is kept under when it is written anew
DAMAGED_SUFFIX = ".damaged"


def write_json(path: Where, data: dict[str, Any]) -> None:
    from gitmem.files.atomic import atomic_write

    # no indent: the C encoder serves only unindented output, and the sessions file (the last 100 sessions with
    # what each was given) is rewritten by every prompt hook; indented, encoding it took ~10 ms of each one
    atomic_write(path, quickjson.dumps(data, sort_keys=True).encode("utf-8"))


def update_json(path: Where, change: Callable[[dict[str, Any]], Any], timeout: float = 3.0) -> Any:
    """Read-modify-write ``path`` under a lock; returns what ``change`` returned."""
    from gitmem.files.locks import file_lock

    target = os.fspath(path)
    os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
    with file_lock(target + ".lock", timeout):
        data, damaged = _read_object(target)
        if damaged:
            # written over below: the damaged file is kept beside it (a session's directives not committed yet
            # exist only here), once, replacing an older copy
            os.replace(target, target + DAMAGED_SUFFIX)
        result = change(data)
        write_json(target, data)
        return result


# -- sessions ------------------------------------------------------------------------------------------
def sessions_path(local: Where) -> str:
    return os.path.join(local, "sessions.json")


def get_session(local: Where, session_id: str) -> dict[str, Any]:
    entry = read_json(sessions_path(local)).get("sessions", {}).get(session_id)
    return entry if isinstance(entry, dict) else {}


def update_session(local: Where, session_id: str, change: Callable[[dict[str, Any]], Any],
                   max_sessions: int = MAX_SESSIONS) -> Any:
    """Change one session's entry; a new session goes to the end and the oldest beyond ``max_sessions`` drop."""

    def apply(data: dict[str, Any]) -> Any:
        sessions = data.get("sessions")
        if not isinstance(sessions, dict):
            sessions = data["sessions"] = {}
        order = [s for s in data.get("order", []) if s in sessions]
        entry = sessions.get(session_id)
        if not isinstance(entry, dict):
            entry = sessions[session_id] = {"created": now_iso()}
            order.append(session_id)
        result = change(entry)
        while len(order) > max_sessions:
            # the oldest first, but not one holding directives not committed yet: they exist nowhere else
            drop = next((s for s in order if not (isinstance(sessions.get(s), dict) and sessions[s].get("pending"))),
                        None)
            if drop is None:
                break
            order.remove(drop)
            sessions.pop(drop, None)
        data["order"] = order
        return result

    return update_json(sessions_path(local), apply)


def pending_sessions(local: Where) -> list[str]:
    """The sessions whose entry holds directives not committed yet, oldest first."""
    data = read_json(sessions_path(local))
    sessions = data.get("sessions")
    if not isinstance(sessions, dict):
        return []
    return [s for s in data.get("order", []) if isinstance(sessions.get(s), dict) and sessions[s].get("pending")]


#: the longest memory id a session's entry passes on (``gitmem serve``'s hook requests take none longer); the
#: ids gitmem makes are far shorter, so a longer one is junk in a hand-edited file
MAX_ID_CHARS = 200
#: memories (and parts of long ones) a session's entry remembers having given
MAX_GIVEN = 500


def read_parts(value: Any) -> list[tuple[str, int]]:
    """``(id, n)`` pairs read from JSON (a session's entry, a cached block, a server's answer): lists of an id
    and a part number; anything else is skipped."""
    if not isinstance(value, list):
        return []
    return [(p[0], p[1]) for p in value
            if isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) and 0 < len(p[0]) <= MAX_ID_CHARS
            and isinstance(p[1], int) and not isinstance(p[1], bool) and p[1] > 0]


def read_ids(value: Any) -> list[str]:
    """Memory ids read from JSON (as :func:`read_parts`)."""
    if not isinstance(value, list):
        return []
    return [i for i in value if isinstance(i, str) and 0 < len(i) <= MAX_ID_CHARS]


def record_given(entry: dict[str, Any], ids: Iterable[str], parts: Iterable[tuple[str, int]]) -> None:
    """Note in a session's entry what its context was given: ``ids`` of memories shown whole, ``(id, n)`` of
    long ones shown by their part ``n`` (a later prompt may bring another part, never the same one again)."""
    ids, parts = list(ids), list(parts)
    if ids:
        entry["recalled"] = list(dict.fromkeys([*read_ids(entry.get("recalled")), *ids]))[-MAX_GIVEN:]
    if parts:
        entry["parts"] = [list(p) for p in dict.fromkeys([*read_parts(entry.get("parts")), *parts])][-MAX_GIVEN:]


def forget_given(entry: dict[str, Any]) -> None:
    """Note that a session's context lost what it was given (a compaction, ``/clear``): the next prompts may bring
    those memories again, as they would in a new session."""
    entry.pop("recalled", None)
    entry.pop("parts", None)


def all_sessions(local: Where) -> dict[str, dict[str, Any]]:
    sessions = read_json(sessions_path(local)).get("sessions", {})
    return {k: v for k, v in sessions.items() if isinstance(v, dict)} if isinstance(sessions, dict) else {}


# -- project ids by working directory ---------------------------------------------------------------
def cwd_projects_path(folder: Where) -> str:
    """The project-per-directory cache in ``folder`` (the repository's derived folder)."""
    return os.path.join(folder, "cwd-projects.json")


def cached_project(folder: Where, cwd: str, max_age: float = 86400.0, now: float | None = None) -> str | None:
    entry = read_json(cwd_projects_path(folder)).get(cwd)
    if not isinstance(entry, dict) or not isinstance(entry.get("project"), str):
        return None
    if (time.time() if now is None else now) - float(entry.get("at", 0)) > max_age:
        return None
    return str(entry["project"])


def remember_project(folder: Where, cwd: str, project: str, limit: int = 500) -> None:
    def apply(data: dict[str, Any]) -> None:
        data.pop(cwd, None)
        data[cwd] = {"project": project, "at": time.time()}
        for key in list(data)[: max(0, len(data) - limit)]:
            del data[key]

    try:  # noqa: SIM105 - not contextlib: the hooks would import it for this line alone
        update_json(cwd_projects_path(folder), apply, timeout=1.0)
    except Exception:  # a cache that cannot be written only costs time
        pass
