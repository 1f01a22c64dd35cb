"""A cross-process exclusive lock that costs nothing to import.

``flock`` on a lock file where the platform has ``fcntl`` (Linux, macOS); the ``filelock`` package elsewhere.
Importing ``filelock`` costs ~25 ms (it pulls in ``logging`` and more), which the hook processes that run at
every session start and tool call should not pay; so do ``threading``, ``contextlib`` and ``pathlib`` (~4, ~5 and
~18 ms), so the lock is a plain context-manager class over ``_thread`` and ``os`` that takes a ``str`` path as
well as a Path. The lock is released when the descriptor closes, so a crashed process never leaves a stale lock
behind.
"""

from __future__ import annotations

import _thread
import os
import time

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the prompt hook takes this lock to write its session's state
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import TracebackType
    from typing import Any

# Locks this thread already holds, with their depth: taking a held lock again in the same thread is free
# (re-entrant, as with ``filelock``); another thread of the process waits like another process would, because
# its flock on a second descriptor of the same file conflicts.
_held: dict[tuple[str, int], int] = {}
_guard = _thread.allocate_lock()


class LockTimeout(TimeoutError):
    """The lock stayed held by another process for longer than the timeout."""


#: seconds of waiting for a lock before ``on_wait`` hears of it
NOTICE_AFTER = 1.0


def lock_owner(path: str | os.PathLike[str]) -> int | None:
    """The pid the holder of a lock taken with ``record_owner`` wrote into its file (None when unknown)."""
    try:
        with open(path, "rb") as fh:
            text = fh.read(32).strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


class file_lock:
    """Hold an exclusive lock on ``path`` (created if needed), waiting up to ``timeout`` seconds for it;
    raises :class:`LockTimeout` after that. Re-entrant within a thread.

    ``record_owner`` writes this process's pid into the lock file once it is held (a lock file that holds
    nothing else), so that a waiter can name it; ``on_wait`` is called once, with that pid (or None), when the
    lock is still held by another process after :data:`NOTICE_AFTER` seconds of waiting. Nothing is printed
    here: the caller decides whether anyone is told."""

    def __init__(self, path: str | os.PathLike[str], timeout: float = 3.0, *, record_owner: bool = False,
                 on_wait: Callable[[int | None], object] | None = None) -> None:
        self.path = os.fspath(path)
        self.timeout = timeout
        self.record_owner = record_owner
        self.on_wait = on_wait
        self._key = ("", 0)
        self._fd = -1
        self._other: Any = None  # the filelock package's lock, where there is no fcntl

    def __enter__(self) -> None:
        self._key = key = (os.path.realpath(self.path), _thread.get_ident())
        with _guard:
            if _held.get(key):
                _held[key] += 1
                return
        self._acquire()
        with _guard:
            _held[key] = 1

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        with _guard:
            depth = _held.get(self._key, 0) - 1
            if depth > 0:
                _held[self._key] = depth
                return
            _held.pop(self._key, None)
        self._release()

    def _acquire(self) -> None:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            from filelock import FileLock, Timeout

            self._other = FileLock(self.path, timeout=self.timeout)
            try:
                self._other.acquire()
            except Timeout:
                raise LockTimeout(f"{self.path} stayed locked for {self.timeout:g} s") from None
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            started = time.monotonic()
            deadline = started + self.timeout
            notice = self.on_wait
            delay = 0.002
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    now = time.monotonic()
                    if now >= deadline:
                        raise LockTimeout(f"{self.path} stayed locked for {self.timeout:g} s") from None
                    if notice is not None and now - started >= NOTICE_AFTER:
                        notice(lock_owner(self.path))
                        notice = None
                    time.sleep(delay)
                    delay = min(delay * 2, 0.05)
            if self.record_owner:
                try:
                    os.ftruncate(fd, 0)
                    os.pwrite(fd, b"%d\n" % os.getpid(), 0)
                except OSError:  # a full disk: the lock is held all the same, only its owner goes unnamed
                    pass
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def _release(self) -> None:
        if self._other is not None:  # pragma: no cover - Windows
            self._other.release()
            self._other = None
        elif self._fd >= 0:
            os.close(self._fd)  # closing the descriptor releases the lock
            self._fd = -1
