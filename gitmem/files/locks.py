"""A cross-process exclusive lock that costs nothing to import.

``flock`` on a lock file where the platform has ``fcntl`` (Linux, macOS); the ``filelock`` package elsewhere.
Importing ``filelock`` costs ~25 ms (it pulls in ``logging`` and more), which the hook processes that run at
every session start and tool call should not pay. The lock is released when the descriptor closes, so a
crashed process never leaves a stale lock behind.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

# Locks this thread already holds, with their depth: taking a held lock again in the same thread is free
# (re-entrant, as with ``filelock``); another thread of the process waits like another process would, because
# its flock on a second descriptor of the same file conflicts.
_held: dict[tuple[str, int], int] = {}
_guard = threading.Lock()


class LockTimeout(TimeoutError):
    """The lock stayed held by another process for longer than the timeout."""


@contextlib.contextmanager
def file_lock(path: Path, timeout: float = 3.0) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if needed), waiting up to ``timeout`` seconds for it;
    raises :class:`LockTimeout` after that. Re-entrant within a thread."""
    key = (os.path.realpath(path), threading.get_ident())
    with _guard:
        if _held.get(key):
            _held[key] += 1
            nested = True
        else:
            nested = False
    if nested:
        try:
            yield
        finally:
            with _guard:
                _held[key] -= 1
        return
    with _acquire(path, timeout):
        with _guard:
            _held[key] = 1
        try:
            yield
        finally:
            with _guard:
                _held.pop(key, None)


@contextlib.contextmanager
def _acquire(path: Path, timeout: float) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        from filelock import FileLock, Timeout

        try:
            with FileLock(str(path), timeout=timeout):
                yield
        except Timeout:
            raise LockTimeout(f"{path} stayed locked for {timeout:g} s") from None
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + timeout
        delay = 0.002
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LockTimeout(f"{path} stayed locked for {timeout:g} s") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.05)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock
