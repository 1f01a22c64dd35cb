"""Atomic file writes (readers see the old content or the new, never half of it), reads that never follow a
symbolic link out of the memory repository, and the test-only crash points of the write path."""

from __future__ import annotations

import os

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the per-tool-call hook imports this module (no pathlib either)
if TYPE_CHECKING:
    from pathlib import Path


def atomic_write(target: str | os.PathLike[str], content: bytes, *, mode: int | None = None) -> None:
    """Write ``content`` to ``target`` through a temporary file in the same folder and a rename.

    ``mode`` sets the permission bits (e.g. ``0o755`` for a hook script). The temporary name is unique per
    process and call, so concurrent writers never share one; a failure removes it."""
    folder, name = os.path.split(os.fspath(target))
    if folder:
        os.makedirs(folder, exist_ok=True)
    # os.urandom, not the secrets module: importing that costs ~8 ms in every hook process
    tmp = os.path.join(folder, f".{name}.{os.getpid()}.{os.urandom(3).hex()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(content)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        try:  # noqa: SIM105 - not contextlib: the per-tool-call hook would import it for this line alone
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def settled(mtime_ns: int, seen_ns: int) -> bool:
    """Whether what was read at ``seen_ns`` from a file or folder last changed at ``mtime_ns`` can be trusted
    while its mtime stays the same: a change within the same timestamp tick would not move the mtime. File
    systems with sub-second timestamps tick in milliseconds (50 ms of margin); whole-second ones (FAT, HFS+,
    ext3) need two seconds."""
    window = 2_000_000_000 if mtime_ns % 1_000_000_000 == 0 else 50_000_000
    return seen_ns - mtime_ns > window


def inside(root: Path, rel: str) -> Path:
    """``root / rel``, refusing a path that would leave ``root`` through a symbolic link: any folder on the way,
    or the file itself, being a link (planted by hand or arriving with a pull) raises :class:`UnsafePathError`.
    Folders that do not exist yet are fine (they will be created as real folders)."""
    current = root
    for part in rel.split("/"):
        current = current / part
        if os.path.islink(current):
            raise UnsafePathError(current.relative_to(root).as_posix())
    return current


def read_inside(root: Path, rel: str) -> bytes:
    """The bytes of ``root / rel`` without following a symbolic link anywhere on the way (see :func:`inside`)."""
    path = inside(root, rel)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as fh:
        return fh.read()


def read_text_inside(root: Path, rel: str) -> str:
    """The UTF-8 text of the repository file ``rel`` (:func:`read_inside`). Raises
    :class:`~gitmem.errors.DocumentError` naming the file and what stops it being read: not UTF-8, a symbolic
    link (never followed), no permission."""
    from gitmem.errors import DocumentError

    try:
        return read_inside(root, rel).decode("utf-8")
    except UnicodeDecodeError:
        raise DocumentError(f"{rel}: not UTF-8 text", "re-save it as UTF-8 or restore it from git history") from None
    except OSError as exc:
        if os.path.islink(root / rel) or getattr(exc, "rel", None):
            raise DocumentError(f"{rel}: a symbolic link, which gitmem never follows",
                                f"remove it: git -C {root} rm {getattr(exc, 'rel', rel)}") from None
        raise DocumentError(f"{rel}: cannot be read ({exc.strerror or exc})", "check its permissions") from None


class UnsafePathError(OSError):
    """A path inside the memory repository goes through a symbolic link; gitmem never follows one."""

    def __init__(self, rel: str) -> None:
        super().__init__(f"{rel} is a symbolic link")
        self.rel = rel


# test-only crash point: the step to die at and how many more times it may pass first ("" in normal runs)
_crash_step = ""
_crash_left = 0


def crash_point(step: str) -> None:
    """Die at once (``os._exit``, as a kill -9 would) when the tests asked for a crash at ``step``.

    The entry points arm it from ``GITMEM_TEST_CRASH=step[:n]``; unarmed, this is one comparison."""
    global _crash_left
    if step != _crash_step:
        return
    _crash_left -= 1
    if _crash_left <= 0:
        os._exit(137)


def set_crash_point(spec: str) -> None:
    """Arm :func:`crash_point` from ``step`` or ``step:n`` (die the n-th time ``step`` is reached)."""
    global _crash_step, _crash_left
    step, _, count = spec.partition(":")
    _crash_step, _crash_left = step, int(count) if count.isdigit() else 1
