"""Atomic file writes: readers see the old content or the new, never half of it."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def atomic_write(target: Path, content: bytes, *, mode: int | None = None) -> None:
    """Write ``content`` to ``target`` through a temporary file in the same folder and a rename.

    ``mode`` sets the permission bits (e.g. ``0o755`` for a hook script). The temporary name is unique per
    process and call, so concurrent writers never share one; a failure removes it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    # os.urandom, not the secrets module: importing that costs ~8 ms in every hook process
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{os.urandom(3).hex()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(content)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


def settled(mtime_ns: int, seen_ns: int) -> bool:
    """Whether what was read at ``seen_ns`` from a file or folder last changed at ``mtime_ns`` can be trusted
    while its mtime stays the same: a change within the same timestamp tick would not move the mtime. File
    systems with sub-second timestamps tick in milliseconds (50 ms of margin); whole-second ones (FAT, HFS+,
    ext3) need two seconds."""
    window = 2_000_000_000 if mtime_ns % 1_000_000_000 == 0 else 50_000_000
    return seen_ns - mtime_ns > window
