"""The write-ahead journal of the memory repository, and the recovery it makes possible.

Before a write touches the work tree, :class:`Recording` names in ``.git/gitmem-journal.json`` the paths it will touch
and who writes them (pid, host, time); the record goes when the write ends. A process killed in between (kill -9,
a power cut) leaves it behind, and the next writer, or a reader, rolls those paths and their index entries back to
HEAD (:func:`recover`), removes the temporary files and git lock files the dead writer left, and writes one
``recovered:`` line to ``local/gitmem.log``: files of a commit that never happened are never seen.
"""

from __future__ import annotations

import os
import time

from gitmem.errors import RepoError
from gitmem.git.head import JOURNAL_NAME
from gitmem.git.store import LOCK_NAME
from gitmem.git.worktree import check_path, put_file, update_index

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: a hook process that writes imports this module
if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path
    from typing import Any

    from gitmem.git.store import GitStore

#: a git lock file older than this, with no gitmem writer running, is left over from a killed process
STALE_LOCK_SECONDS = 120.0
_HOST = os.uname().nodename if hasattr(os, "uname") else ""


class Recording:
    """``with Recording(store, paths):`` a write of ``paths`` under the journal. Nested inside another (a
    commit's :meth:`~gitmem.git.store.GitStore.move_to`), it records nothing: the outer record covers it. A plain
    class rather than :func:`contextlib.contextmanager`, which costs a hook process ~5 ms to import."""

    def __init__(self, store: GitStore, paths: Iterable[str]) -> None:
        self.store, self.paths, self.outer = store, paths, False

    def __enter__(self) -> None:
        import json

        if self.store.journaling:
            return
        # written in place, not through a temporary file: a kill while writing it leaves a cut record (read as
        # "no paths", which is right: nothing else was written yet) and no temporary file behind
        (self.store.git_dir / JOURNAL_NAME).write_bytes(json.dumps(
            {"pid": os.getpid(), "host": _HOST, "time": time.time(), "paths": sorted(self.paths)}).encode())
        self.store.journaling = self.outer = True

    def __exit__(self, *exc: object) -> None:
        if not self.outer:
            return
        import contextlib

        self.store.journaling = False
        with contextlib.suppress(FileNotFoundError):
            (self.store.git_dir / JOURNAL_NAME).unlink()


def recover_unless_writing(store: GitStore) -> None:
    """:func:`recover` when no writer holds the lock: a reader found a journal
    (:meth:`~gitmem.git.store.GitStore.recover_if_interrupted`) and must not show files of a commit that does not
    exist; a writer running now is left alone."""
    from gitmem.files.locks import LockTimeout, file_lock

    try:
        with file_lock(store.git_dir / LOCK_NAME, 0):
            recover(store)
    except (LockTimeout, OSError):
        pass


def recover(store: GitStore) -> None:
    """Under the writer lock: roll back what a dead writer left (see :class:`Recording`) and remove git lock
    files that no live process holds; each recovery is one line in ``local/gitmem.log``."""
    journal = store.git_dir / JOURNAL_NAME
    notes: list[str] = []
    since: float | None = None
    try:
        raw = journal.read_bytes()
    except FileNotFoundError:
        raw = None
    owner = parse_journal(raw) if raw is not None else {}
    if raw is not None:
        if store.journaling:  # this thread's own write, with the lock taken again inside it
            return
        since = float(owner.get("time") or 0) - 1
    from gitmem.git.plumbing import sweep_git_locks

    removed = sweep_git_locks(store.git_dir, since=since, stale_after=STALE_LOCK_SECONDS, objects=raw is not None)
    if raw is not None:
        paths = [p for p in owner.get("paths") or [] if isinstance(p, str)]
        restored = roll_back(store, paths)
        notes.append(f"rolled back an interrupted write by pid {owner.get('pid')} on {owner.get('host')} "
                     f"({restored} of {len(paths)} files restored to HEAD)")
    if removed:
        notes.append("removed stale git lock files: " + ", ".join(removed[:5])
                     + (f" and {len(removed) - 5} more" if len(removed) > 5 else ""))
    if raw is not None:
        journal.unlink()
    if notes:
        _note(store, "; ".join(notes))


def roll_back(store: GitStore, paths: list[str]) -> int:
    """Put the work-tree files and index entries of ``paths`` back to what HEAD holds, and remove the temporary
    files a killed writer left next to them. Returns how many files changed."""
    import contextlib

    from dulwich.objects import Blob, ObjectID


    changed = 0
    blobs: dict[str, Blob | None] = {}
    at_head = store.tree_files()
    repo = store.open()
    for rel in paths:
        try:
            check_path(rel)
            target = store.target(rel)
        except RepoError:
            continue
        sha = at_head.get(rel)
        committed = repo.object_store[ObjectID(sha.encode())].as_raw_string() if sha else None
        for stray in target.parent.glob(f".{target.name}.*.tmp") if target.parent.is_dir() else []:
            with contextlib.suppress(OSError):
                stray.unlink()
        try:
            current: bytes | None = target.read_bytes()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            current = None
        if current != committed:
            changed += 1
            if committed is None:
                with contextlib.suppress(OSError):  # a file the dead writer added: gone, whatever stands in the way
                    put_file(target, None, store.path)
            else:
                put_file(target, committed, store.path)
        blobs[rel] = Blob.from_string(committed) if committed is not None else None
    index_path = store.git_dir / "index"
    with repo:
        update_index(store, repo, blobs, index_path.read_bytes() if index_path.exists() else None)
    return changed


def parse_journal(raw: bytes) -> dict[str, Any]:
    """The journal's record (``pid``, ``host``, ``time``, ``paths``), {} when cut short or unreadable."""
    import json

    try:
        data = json.loads(raw)
    except ValueError:  # cut short by the kill: the paths are lost, but the locks can still be swept
        return {}
    return data if isinstance(data, dict) else {}


def owner_note(journal: Path) -> str:
    """`` (pid P on host H, writing since T)`` from a journal, for a lock-timeout message; "" without one."""
    try:
        owner = parse_journal(journal.read_bytes())
    except OSError:
        return ""
    if not owner:
        return ""
    started = time.strftime("%H:%M:%S", time.localtime(float(owner.get("time") or 0)))
    return f" (pid {owner.get('pid')} on {owner.get('host')}, writing since {started})"


def _note(store: GitStore, line: str) -> None:
    """One ``recovered:`` line in the repository's ``local/gitmem.log``."""
    import contextlib
    from datetime import UTC, datetime

    log = store.path / "local" / "gitmem.log"
    with contextlib.suppress(OSError):
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("a", encoding="utf-8") as fh:
            fh.write(f"{datetime.now(UTC).isoformat(timespec='seconds')} recovered: {line}\n")
