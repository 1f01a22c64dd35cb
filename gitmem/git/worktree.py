"""The work tree and the index of the memory repository, as a commit, a merge or a recovery changes them (part of
the repository layer): files written atomically and put back on failure, index entries spliced in place.

Imported when a write runs, never by a read; like :mod:`gitmem.git.store` it loads neither pathlib, contextlib nor
dulwich at import.
"""

from __future__ import annotations

import os

from gitmem.errors import RepoError
from gitmem.files.atomic import crash_point

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from dulwich.objects import Blob
    from dulwich.repo import Repo

    from gitmem.git.store import GitStore

__all__ = ["check_path", "prune_empty_dirs", "put_file", "restore", "update_index", "write_files"]


def write_files(store: GitStore, changes: Mapping[str, bytes | None]) -> dict[Path, bytes | None]:
    """Write ``changes`` (path → content, None removes) to the work tree; returns what each file held before, for
    :func:`restore`. A path through a symbolic link is refused before anything is written; on any failure the
    files written so far are put back."""
    targets = {path: store.target(path) for path in changes}  # refuse a link before writing anything
    undo: dict[Path, bytes | None] = {}
    try:
        for path, content in changes.items():
            target = targets[path]
            undo[target] = target.read_bytes() if target.is_file() else None
            crash_point("worktree")
            put_file(target, content, store.path)
    except (NotADirectoryError, IsADirectoryError, FileExistsError) as exc:
        restore(undo)
        where = os.path.relpath(exc.filename, store.path) if exc.filename else path
        raise RepoError(f"cannot write {path}: {where} is a file where a folder is needed, or the other way round",
                        "rename or remove one of them with git (git rm PATH, commit), then retry") from None
    except BaseException:
        restore(undo)
        raise
    return undo

def restore(undo: dict[Path, bytes | None]) -> None:
    """Put back the files :func:`write_files` replaced (a None: the file was not there)."""
    import contextlib

    from gitmem.files.atomic import atomic_write

    for target, content in undo.items():
        if content is None:
            with contextlib.suppress(FileNotFoundError, NotADirectoryError):
                target.unlink()
        else:
            atomic_write(target, content)


def update_index(store: GitStore, repo: Repo, blobs: Mapping[str, Blob | None], old: bytes | None) -> None:
    """Point the index entries of ``blobs``' paths at those blobs (None: drop the entry), from the index as it was
    (``old``: its bytes): spliced in place when it can be, else through dulwich's index."""
    from gitmem.git.plumbing import index_entry, retry, splice_index, write_index

    updates: dict[bytes, bytes | None] = {}
    for path, blob in blobs.items():
        name = path.encode()
        if blob is None:
            updates[name] = None
        else:
            updates[name] = index_entry(name, os.stat(store.path / path), bytes.fromhex(blob.id.decode()))
    index_path = store.git_dir / "index"
    spliced = splice_index(old or b"", updates)
    if spliced is not None:
        retry("update the index", lambda: write_index(index_path, spliced))
        return
    from dulwich.index import index_entry_from_stat

    def slow() -> None:
        index = repo.open_index()
        for path, blob in blobs.items():
            if blob is None:
                if path.encode() in index:
                    del index[path.encode()]
            else:
                index[path.encode()] = index_entry_from_stat(os.stat(store.path / path), blob.id)
        index.write()

    retry("update the index", slow)


def check_path(path: str) -> None:
    parts = path.split("/")
    if not path or path.startswith("/") or any(p in ("", ".", "..", ".git") for p in parts):
        raise RepoError(f"refusing to write outside the repository: {path!r}", "this is a bug in the caller")


def prune_empty_dirs(directory: Path, root: Path) -> None:
    """Remove ``directory`` and its parents up to ``root`` while they are empty folders."""
    while directory != root and directory.is_dir() and not directory.is_symlink() and not any(directory.iterdir()):
        directory.rmdir()
        directory = directory.parent


def put_file(target: Path, content: bytes | None, root: Path) -> None:
    """Write ``content`` to the work-tree file ``target`` atomically, or with None remove it (gone already is
    fine) and the folders under ``root`` it leaves empty."""
    import contextlib

    from gitmem.files.atomic import atomic_write

    if content is None:
        with contextlib.suppress(FileNotFoundError):
            target.unlink()
        prune_empty_dirs(target.parent, root)
    else:
        atomic_write(target, content)
