"""Git plumbing that keeps commits cheap in large repositories: raw tree and index splicing, atomic files.

A memory repository can hold a folder of 10k+ files. Rebuilding that folder's tree object or the whole index for
every commit (what ``porcelain.add`` + ``commit`` do) costs hundreds of milliseconds; splicing the changed entries
into the raw bytes costs a few. Everything here is checked against the git CLI in the tests.
"""

from __future__ import annotations

import os
import struct
import time
import zlib
from collections.abc import Callable, Iterator
from hashlib import sha1
from pathlib import Path
from typing import TypeVar

from dulwich.file import FileLocked, GitFile
from dulwich.object_store import BaseObjectStore
from dulwich.objects import ObjectID, Tree, parse_tree
from dulwich.repo import Repo

from gitmem.errors import RepoError
from gitmem.files.atomic import crash_point

FILE_MODE = 0o100644
TREE_MODE = 0o040000
_RETRIES = 40
T = TypeVar("T")


def retry(action: str, func: Callable[[], T]) -> T:
    """Run ``func``, retrying while git's own lock files (``index.lock``, ``*.lock`` refs) are held."""
    for attempt in range(_RETRIES):
        try:
            return func()
        except FileLocked as exc:
            if attempt == _RETRIES - 1:
                lock = os.fsdecode(exc.lockfilename)
                raise RepoError(
                    f"git's lock file {lock} stayed in place while gitmem tried to {action}",
                    f"another git process is working on the memory repository: wait and retry; if none is, "
                    f"remove the file left behind: rm {lock}",
                ) from None
            time.sleep(min(0.01 * (attempt + 1), 0.1))
    raise AssertionError("unreachable")


#: git's lock files that a gitmem write takes (the index, the branch, HEAD, packed refs)
_WRITE_LOCKS = ("index.lock", "HEAD.lock", "packed-refs.lock", "refs/heads/main.lock")


def sweep_git_locks(git_dir: Path, *, since: float | None, stale_after: float, objects: bool = False) -> list[str]:
    """Remove git lock files left by a killed process; returns their paths relative to ``git_dir``.

    The caller holds gitmem's writer lock, so no gitmem process is writing. A lock is left over when it was
    made after ``since`` (the start of a write whose process died) or is older than ``stale_after`` seconds (no
    git command holds one that long in a memory repository). ``objects`` also looks at ``.lock`` files in
    ``objects/`` (dulwich writes loose objects through them; git itself uses ``tmp_obj_*`` names)."""
    candidates = [git_dir / name for name in _WRITE_LOCKS]
    if objects:
        candidates += git_dir.glob("objects/??/*.lock")
        candidates += git_dir.glob("refs/**/*.lock")
    now = time.time()
    removed: list[str] = []
    for lock in dict.fromkeys(candidates):
        try:
            mtime = lock.stat().st_mtime
        except OSError:
            continue
        if (since is not None and mtime >= since) or now - mtime > stale_after:
            try:
                lock.unlink()
            except OSError:
                continue
            removed.append(lock.relative_to(git_dir).as_posix())
    return removed


def _tree_key(name: bytes, mode: int) -> bytes:
    return name + b"/" if mode == TREE_MODE else name


def scan_tree(raw: bytes) -> Iterator[tuple[int, int, int, bytes, bytes]]:
    """Entries of a raw tree as (start, end, mode, name, binary sha) without building objects."""
    pos, size = 0, len(raw)
    while pos < size:
        space = raw.index(b" ", pos)
        nul = raw.index(b"\0", space)
        end = nul + 21
        yield pos, end, int(raw[pos:space], 8), raw[space + 1 : nul], raw[nul + 1 : end]
        pos = end


def _tree_entry(name: bytes, mode: int, binsha: bytes) -> bytes:
    return b"%o %s\0%s" % (mode, name, binsha)


class TreeEditor:
    """Applies path changes to trees by splicing raw tree bytes: cheap even for a folder of 100k files."""

    def __init__(self, repo: Repo) -> None:
        self.store = repo.object_store
        self.new: list[Tree] = []

    def apply(self, tree_id: bytes | None, changes: dict[tuple[bytes, ...], bytes | None]) -> bytes | None:
        raw = self.store.get_raw(ObjectID(tree_id))[1] if tree_id else b""
        leaves: dict[bytes, bytes | None] = {}
        nested: dict[bytes, dict[tuple[bytes, ...], bytes | None]] = {}
        for parts, blob in changes.items():
            if len(parts) == 1:
                leaves[parts[0]] = blob
            else:
                nested.setdefault(parts[0], {})[parts[1:]] = blob
        existing_dirs: dict[bytes, bytes] = {}
        if nested:
            for _s, _e, mode, name, binsha in scan_tree(raw):
                if mode == TREE_MODE and name in nested:
                    existing_dirs[name] = binsha
        edits: dict[bytes, tuple[int, bytes] | None] = {}
        for name, blob in leaves.items():
            edits[name] = (FILE_MODE, bytes.fromhex(blob.decode())) if blob else None
        for name, sub in nested.items():
            old = existing_dirs.get(name)
            new_sub = self.apply(old.hex().encode() if old else None, sub)
            edits[name] = (TREE_MODE, bytes.fromhex(new_sub.decode())) if new_sub else None
        raw = self._splice(raw, edits)
        if not raw:
            return None
        tree = Tree.from_raw_string(Tree.type_num, raw)
        assert isinstance(tree, Tree)
        self.new.append(tree)
        return tree.id

    @staticmethod
    def _splice(raw: bytes, edits: dict[bytes, tuple[int, bytes] | None]) -> bytes:
        pieces: list[bytes] = []
        pending = sorted(
            ((_tree_key(name, e[0] if e else FILE_MODE), name, e) for name, e in edits.items()),
            key=lambda item: item[0],
        )
        done: set[bytes] = set()
        last = 0
        index = 0
        for start, end, mode, name, _sha in scan_tree(raw):
            key = _tree_key(name, mode)
            while index < len(pending) and pending[index][0] < key:
                _k, pname, entry = pending[index]
                if entry and pname not in done:
                    pieces.append(raw[last:start])
                    last = start
                    pieces.append(_tree_entry(pname, *entry))
                done.add(pname)
                index += 1
            if name in edits:
                pieces.append(raw[last:start])
                entry = edits[name]
                if entry and name not in done:
                    pieces.append(_tree_entry(name, *entry))
                done.add(name)
                last = end
                while index < len(pending) and pending[index][1] in done:
                    index += 1
        pieces.append(raw[last:])
        for _k, pname, entry in pending[index:]:
            if entry and pname not in done:
                pieces.append(_tree_entry(pname, *entry))
        return b"".join(pieces)


def index_entry(path: bytes, st: os.stat_result, binsha: bytes) -> bytes:
    head = struct.pack(
        ">LLLLLLLLLL20sH",
        int(st.st_ctime) & 0xFFFFFFFF, st.st_ctime_ns % 1_000_000_000,
        int(st.st_mtime) & 0xFFFFFFFF, st.st_mtime_ns % 1_000_000_000,
        st.st_dev & 0xFFFFFFFF, st.st_ino & 0xFFFFFFFF, FILE_MODE,
        st.st_uid & 0xFFFFFFFF, st.st_gid & 0xFFFFFFFF, st.st_size & 0xFFFFFFFF,
        binsha, min(len(path), 0xFFF),
    )
    entry = head + path
    return entry + b"\0" * (8 - len(entry) % 8)


def splice_index(raw: bytes, updates: dict[bytes, bytes | None]) -> bytes | None:
    """Replace, insert or drop entries of a version-2 index; None when the index needs the slow path."""
    if raw and (len(raw) < 32 or raw[:4] != b"DIRC" or struct.unpack(">L", raw[4:8])[0] != 2):
        return None
    count = struct.unpack(">L", raw[8:12])[0] if raw else 0
    pos, pieces, last, kept = 12, [], 12, 0
    pending = sorted(updates)
    index = 0
    for _ in range(count):
        flags = struct.unpack_from(">H", raw, pos + 60)[0]
        if flags & 0x3000:  # a conflict stage or extended flags: leave it to dulwich
            return None
        name_len = flags & 0xFFF
        path = raw[pos + 62 : pos + 62 + name_len]
        end = pos + ((62 + name_len + 8) // 8) * 8
        while index < len(pending) and pending[index] < path:
            entry = updates[pending[index]]
            if entry is not None:
                pieces.append(raw[last:pos])
                last = pos
                pieces.append(entry)
                kept += 1
            index += 1
        if path in updates:
            pieces.append(raw[last:pos])
            entry = updates[path]
            if entry is not None:
                pieces.append(entry)
                kept += 1
            last = end
            if index < len(pending) and pending[index] == path:
                index += 1
        else:
            kept += 1
        pos = end
    pieces.append(raw[last:pos] if raw else b"")
    for name in pending[index:]:
        entry = updates[name]
        if entry is not None:
            pieces.append(entry)
            kept += 1
    # Extensions (cache-tree, untracked cache) describe the old entries; git rebuilds them when missing.
    if raw and len(raw) - 20 > pos:
        ext = raw[pos:-20]
        while ext:
            sig = ext[:4]
            if sig in (b"link", b"sdir"):  # split or sparse index: not ours to rewrite
                return None
            ext = ext[8 + struct.unpack(">L", ext[4:8])[0] :]
    body = b"DIRC" + struct.pack(">LL", 2, kept) + b"".join(pieces)
    return body + sha1(body).digest()


def write_index(path: Path, data: bytes) -> None:
    with GitFile(str(path), "wb") as fh:
        fh.write(data)
        crash_point("index-lock")  # test-only: die holding git's index.lock


# -- reading trees ---------------------------------------------------------------------------------------
_TREE_CACHE: dict[bytes, list[tuple[bytes, int, bytes]]] = {}


def _parsed(store: BaseObjectStore, tree: bytes) -> list[tuple[bytes, int, bytes]]:
    """A tree's (name, mode, hex sha) entries, parsed by dulwich's C parser (a few ms for a folder of 10k files)
    and cached, as a tree never changes."""
    found = _TREE_CACHE.get(tree)
    if found is None:
        found = list(parse_tree(_raw_tree(store, tree), 20))
        if len(_TREE_CACHE) > 64:
            _TREE_CACHE.clear()
        _TREE_CACHE[tree] = found
    return found


def tree_entries(store: BaseObjectStore, tree: bytes) -> dict[bytes, tuple[int, bytes]]:
    """A tree's entries as name → (mode, hex sha)."""
    return {name: (mode, sha) for name, mode, sha in _parsed(store, tree)}


def _raw_tree(store: BaseObjectStore, tree: bytes) -> bytes:
    """A tree object's bytes. A loose object is inflated here: dulwich's ``get_raw`` parses it into a ``Tree``
    first (~10 ms for a folder of 10k files) only to serialise it again. Packed objects go through dulwich."""
    folder = getattr(store, "path", None)
    if isinstance(folder, str | os.PathLike):
        name = tree.decode("ascii")
        try:
            with open(os.path.join(folder, name[:2], name[2:]), "rb") as fh:
                header, _, body = zlib.decompress(fh.read()).partition(b"\0")
            if header.startswith(b"tree "):
                return body
        except (OSError, zlib.error):
            pass
    return store.get_raw(ObjectID(tree))[1]


def walk_tree(store: BaseObjectStore, tree: bytes, base: bytes, out: dict[str, str]) -> None:
    """Every file below ``tree`` as ``base + path`` → hex blob SHA, into ``out``."""
    for name, mode, sha in _parsed(store, tree):
        if mode == TREE_MODE:
            walk_tree(store, sha, base + name + b"/", out)
        else:
            out[(base + name).decode("utf-8", "surrogateescape")] = sha.decode()


def diff_trees(store: BaseObjectStore, old_tree: bytes | None, new_tree: bytes | None,
               base: bytes = b"", *, links: list[str] | None = None) -> dict[str, bytes | None]:
    """Paths that differ between two trees → the new blob SHA (None when deleted). Identical subtrees are
    skipped by SHA, and in a changed folder only the entries that differ are looked at (a set difference of
    the parsed entries), so one new memory in a folder of 10k costs a few milliseconds. ``links`` collects
    the changed paths that ``new_tree`` holds as symbolic links or submodules rather than files."""
    changes: dict[str, bytes | None] = {}
    if old_tree == new_tree:
        return changes
    old = set(_parsed(store, old_tree)) if old_tree else set()
    new = set(_parsed(store, new_tree)) if new_tree else set()
    gone = {name: (mode, sha) for name, mode, sha in old - new}
    came = {name: (mode, sha) for name, mode, sha in new - old}
    for name in gone.keys() | came.keys():
        before, after = gone.get(name), came.get(name)
        path = base + name
        old_dir = before[1] if before and before[0] == TREE_MODE else None
        new_dir = after[1] if after and after[0] == TREE_MODE else None
        if old_dir or new_dir:
            changes.update(diff_trees(store, old_dir, new_dir, path + b"/", links=links))
        if before and not old_dir and not (after and not new_dir):
            changes[path.decode("utf-8", "surrogateescape")] = None
        if after and not new_dir:
            changes[path.decode("utf-8", "surrogateescape")] = after[1]
            if links is not None and after[0] & 0o170000 != 0o100000:
                links.append(path.decode("utf-8", "surrogateescape"))
    return changes
