"""Where the memory branch stands against a fetched remote branch, and moving it there: ahead/behind, ancestry,
uncommitted paths, fast-forward and the two-parent merge commit (part of the repository layer, through dulwich).

How each file merges is the caller's business (:mod:`gitmem.sync.merge`, passed in as a :data:`FileMerger`): this
module diffs the trees against their merge base, asks the merger about each path both sides changed, and writes
the merge commit the same way :meth:`GitStore.commit` writes any commit, so ``git status`` stays clean and nothing
is ever left half merged: the branch moves last, with compare-and-swap.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dulwich.objects import Blob, ObjectID
from dulwich.refs import Ref

from gitmem.errors import RepoError
from gitmem.git.plumbing import TreeEditor, diff_trees
from gitmem.git.remote import _blob, _file_at, _head, _tree_of
from gitmem.git.store import GitStore, new_commit

if TYPE_CHECKING:
    from dulwich.repo import Repo

#: (path, base content, our content, their content) → the files to write for it (None: delete), merged
FileMerger = Callable[[str, bytes | None, bytes | None, bytes | None], Mapping[str, bytes | None]]


@dataclass
class MergeOutcome:
    """What :func:`merge_into_branch` did. ``action``: ``up-to-date``, ``fast-forward`` or ``merged``."""

    action: str
    head: str
    merge_commit: str = ""
    changed: list[str] = field(default_factory=list)


# -- history ------------------------------------------------------------------------------------------
def _tracking(repo: Repo, branch: str, remote: str) -> bytes | None:
    try:
        return repo.refs[Ref(f"refs/remotes/{remote}/{branch}".encode())]
    except KeyError:
        return None


def _ancestors(repo: Repo, tip: bytes, stop: bytes | None) -> int:
    """Commits reachable from ``tip`` but not from ``stop``."""
    walker = repo.get_walker(include=[ObjectID(tip)], exclude=[ObjectID(stop)] if stop else None)
    return sum(1 for _ in walker)


def _is_ancestor(repo: Repo, older: bytes, newer: bytes) -> bool:
    from dulwich.graph import can_fast_forward

    return older == newer or can_fast_forward(repo, ObjectID(older), ObjectID(newer))


def is_ancestor(store: GitStore, older: bytes, newer: bytes) -> bool:
    """Whether ``newer`` contains ``older`` (the same commit counts)."""
    with store.open() as repo:
        return _is_ancestor(repo, older, newer)


def same_tree(store: GitStore, one: bytes, other: bytes) -> bool:
    """Whether two commits hold the same files."""
    with store.open() as repo:
        return _tree_of(repo, one) == _tree_of(repo, other)


def ahead_behind(store: GitStore, branch: str, remote: str) -> tuple[int, int]:
    """(commits the local branch has that the last fetched ``remote``/``branch`` lacks, and the reverse)."""
    with store.open() as repo:
        local, theirs = _head(repo), _tracking(repo, branch, remote)
        ahead = _ancestors(repo, local, theirs) if local else 0
        behind = _ancestors(repo, theirs, local) if theirs else 0
    return ahead, behind


def uncommitted_paths(store: GitStore) -> tuple[str, ...]:
    """Paths whose work-tree content differs from the last commit (edited, deleted or new, not ignored), but for
    the machine-local folders (``.cache/``, ``local/``)."""
    from dulwich import porcelain

    with store.open() as repo:
        state = porcelain.status(repo, untracked_files="normal")
    paths: set[str] = set()
    for group in state.staged.values():
        paths.update(p.decode("utf-8", "replace") if isinstance(p, bytes) else str(p) for p in group)
    for item in (*state.unstaged, *state.untracked):
        paths.add(item.decode("utf-8", "replace") if isinstance(item, bytes) else str(item))
    return tuple(sorted(p for p in paths if not p.startswith((".cache/", "local/"))))


def forget_tracking_branch(store: GitStore, branch: str, remote: str) -> None:
    """Delete the remote-tracking ref of ``branch`` (a branch gone from the remote), if there is one."""
    with store.open() as repo:
        tracking = Ref(f"refs/remotes/{remote}/{branch}".encode())
        if tracking in repo.refs:
            del repo.refs[tracking]


# -- merging ------------------------------------------------------------------------------------------
def _check_clean(store: GitStore, repo: Repo, head_tree: bytes | None, paths: Mapping[str, object]) -> None:
    """Refuse to overwrite a file whose work-tree content is not what the last commit holds."""
    dirty: list[str] = []
    for path in paths:
        target = store.path / path
        committed = _file_at(repo, head_tree, path)
        try:
            current: bytes | None = target.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            current = None
        if current != committed:
            dirty.append(path)
    if dirty:
        shown = ", ".join(dirty[:3]) + (f" and {len(dirty) - 3} more" if len(dirty) > 3 else "")
        raise RepoError(f"uncommitted changes in the memory repository would be overwritten: {shown}",
                        "commit them with git, or undo them (git checkout -- PATH), then sync again")


def _contents(repo: Repo, changes: Mapping[str, bytes | None]) -> dict[str, bytes | None]:
    return {path: _blob(repo, sha) for path, sha in changes.items()}


def _refuse_links(links: list[str]) -> None:
    """A symbolic link (or submodule) from the remote would be written as a plain file or followed later:
    gitmem brings in neither."""
    if links:
        shown = ", ".join(sorted(links)[:3]) + (f" and {len(links) - 3} more" if len(links) > 3 else "")
        raise RepoError(f"the remote branch holds symbolic links or submodules, which gitmem never follows: {shown}",
                        "remove them on the remote (git rm PATH, commit, push), then sync again")


def _fast_forward(store: GitStore, repo: Repo, local: bytes | None, remote_sha: bytes) -> list[str]:
    """Move to ``remote_sha`` (a descendant of ``local``); returns the paths that changed."""
    local_tree = _tree_of(repo, local) if local else None
    links: list[str] = []
    files = _contents(repo, diff_trees(repo.object_store, local_tree, _tree_of(repo, remote_sha), links=links))
    _refuse_links(links)
    _check_clean(store, repo, local_tree, files)
    store.move_to(repo, local, remote_sha, files)
    return sorted(files)


def _three_way(repo: Repo, local: bytes, remote_sha: bytes, merge: FileMerger) -> dict[str, bytes | None]:
    """The files to change on top of ``local`` to merge ``remote_sha`` (pure over the object store)."""
    from dulwich.graph import find_merge_base

    bases = find_merge_base(repo, [ObjectID(local), ObjectID(remote_sha)])
    base_tree = _tree_of(repo, bases[0]) if bases else None
    local_tree, remote_tree = _tree_of(repo, local), _tree_of(repo, remote_sha)
    ours = diff_trees(repo.object_store, base_tree, local_tree)
    links: list[str] = []
    theirs = diff_trees(repo.object_store, base_tree, remote_tree, links=links)
    _refuse_links(links)
    files: dict[str, bytes | None] = {}
    for path, their_sha in sorted(theirs.items()):
        if path not in ours:
            files[path] = _blob(repo, their_sha)
            continue
        if ours[path] == their_sha:
            continue
        merged = merge(path, _file_at(repo, base_tree, path), _blob(repo, ours[path]), _blob(repo, their_sha))
        for out_path, data in merged.items():
            if data != _file_at(repo, local_tree, out_path):
                files[out_path] = data
    return files


def merge_changes(store: GitStore, local: bytes, other: bytes, merge: FileMerger) -> dict[str, bytes | None]:
    """The files to change on top of ``local`` to merge ``other`` (nothing is written)."""
    with store.open() as repo:
        return _three_way(repo, local, other, merge)


def merge_into_branch(store: GitStore, remote_sha: bytes, *, merge: FileMerger,
                      message: Callable[[Mapping[str, bytes | None]], str], author: str) -> MergeOutcome:
    """Bring ``remote_sha`` into the local branch: fast-forward, a two-parent merge commit (its message from
    ``message`` given the merged files; files and message pass the redaction gate), or nothing when the local
    branch already contains it. The caller holds :meth:`GitStore.locked`."""
    with store.open() as repo:
        local = _head(repo)
        if local is None or _is_ancestor(repo, local, remote_sha):
            if local == remote_sha:
                return MergeOutcome("up-to-date", remote_sha.decode())
            return MergeOutcome("fast-forward", remote_sha.decode(),
                                changed=_fast_forward(store, repo, local, remote_sha))
        if _is_ancestor(repo, remote_sha, local):
            return MergeOutcome("up-to-date", local.decode())
        files = _three_way(repo, local, remote_sha, merge)
        files = store.scrub_files(files)  # the merge commit passes the same redaction gate as every commit
        local_tree = _tree_of(repo, local)
        _check_clean(store, repo, local_tree, files)
        editor = TreeEditor(repo)
        tree_edits: dict[tuple[bytes, ...], bytes | None] = {}
        blobs: list[Blob] = []
        for path, data in files.items():
            blob = Blob.from_string(data) if data is not None else None
            if blob is not None:
                blobs.append(blob)
            tree_edits[tuple(path.encode().split(b"/"))] = blob.id if blob else None
        new_tree = editor.apply(local_tree, tree_edits) if tree_edits else local_tree
        with store.journal(files):
            text = store.scrub_text(message(files))
            commit = new_commit(repo, new_tree or local_tree, [local, remote_sha], text, author, [*blobs, *editor.new])
            store.move_to(repo, local, commit, files)
    return MergeOutcome("merged", commit.decode(), commit.decode(), sorted(files))
