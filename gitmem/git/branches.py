"""Where the memory branch stands against a fetched remote branch, and moving it there: ahead/behind, ancestry,
uncommitted paths, fast-forward and the two-parent merge commit (part of the repository layer, through dulwich).

How each file merges is the caller's business (:mod:`gitmem.sync.merge`, passed in as a :data:`FileMerger`): this
module diffs the trees against their merge base, asks the merger about each path both sides changed, and writes
the merge commit the same way :meth:`GitStore.commit` writes any commit, so ``git status`` stays clean and nothing
is ever left half merged: the branch moves last, with compare-and-swap. The versions of a path both sides changed
reach the merger redacted (:func:`redaction`), and a file one side moved while the other changed it is merged as
one file when the caller says how to pair them (:class:`Moves`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
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
#: a side's content as the merge compares it (the repository's redaction), or None for a deleted file
Cleaner = Callable[[bytes | None], bytes | None]


@dataclass(frozen=True)
class Moves:
    """How a merge follows files that a side moved: ``identity`` names what a file holds (None: a file that is
    never paired), and ``merge`` merges the three versions of one that a side deleted at one path and added at
    another with the same identity, while the other side changed it or moved it elsewhere: ((base path, our
    path, their path), base, ours, theirs) → the files to write (None: delete), or None to merge path by path."""

    identity: Callable[[str, bytes], str | None]
    merge: Callable[[tuple[str, str, str], bytes, bytes, bytes], Mapping[str, bytes | None] | None]


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


def tracking_sha(store: GitStore, branch: str, remote: str) -> bytes | None:
    """Where ``remote``/``branch`` was at the last fetch (None before the first)."""
    with store.open() as repo:
        return _tracking(repo, branch, remote)


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


def _moved(repo: Repo, base_tree: bytes | None, changes: Mapping[str, bytes | None],
           other: Mapping[str, bytes | None], identity: Callable[[str, bytes], str | None]) -> dict[str, str]:
    """The files a side (``changes``) moved that the other side (``other``) also changed or deleted there: base
    path → new path, a file deleted at one path and added at another with the same identity (one of each). Only a
    side that deleted such a file has its added files read."""
    gone: dict[str, list[str]] = {}
    for path, sha in changes.items():
        data = _file_at(repo, base_tree, path) if sha is None and path in other else None
        key = identity(path, data) if data is not None else None
        if key is not None:
            gone.setdefault(key, []).append(path)
    if not gone:
        return {}
    made: dict[str, list[str]] = {}
    for path, sha in changes.items():
        if sha is not None and _file_at(repo, base_tree, path) is None:
            key = identity(path, _blob(repo, sha) or b"")
            if key in gone:
                made.setdefault(key, []).append(path)
    return {gone[key][0]: paths[0] for key, paths in made.items() if len(paths) == len(gone[key]) == 1}


def _merge_moves(repo: Repo, base_tree: bytes | None, ours: Mapping[str, bytes | None],
                 theirs: Mapping[str, bytes | None], moves: Moves,
                 clean: Cleaner) -> Iterator[Mapping[str, bytes | None]]:
    """Merge each file a side moved with the other side's change of it (a move is a delete and an add, and path by
    path the delete would lose to the other side's edit: two copies of one memory). Yields the files each merge
    writes; the path-by-path merge leaves the paths they name alone."""
    ours_moved = _moved(repo, base_tree, ours, theirs, moves.identity)
    theirs_moved = _moved(repo, base_tree, theirs, ours, moves.identity)
    for old in sorted({*ours_moved, *theirs_moved}):
        our_path, their_path = ours_moved.get(old, old), theirs_moved.get(old, old)
        our_sha, their_sha = ours.get(our_path), theirs.get(their_path)
        if our_sha is None or their_sha is None:
            continue  # deleted on the side that did not move it: the moved file stays as it is
        if (our_path not in (old, their_path) and our_path in theirs) or (
                their_path not in (old, our_path) and their_path in ours):
            continue  # the other side has a file of its own at the new path: path by path keeps both
        base = clean(_file_at(repo, base_tree, old))
        ours_data, theirs_data = clean(_blob(repo, our_sha)), clean(_blob(repo, their_sha))
        if base is None or ours_data is None or theirs_data is None:
            continue
        files = moves.merge((old, our_path, their_path), base, ours_data, theirs_data)
        if files is not None:
            yield {old: None, our_path: None, their_path: None, **files}


def _three_way(repo: Repo, local: bytes, remote_sha: bytes, merge: FileMerger, *, moves: Moves | None = None,
               clean: Cleaner | None = None) -> dict[str, bytes | None]:
    """The files to change on top of ``local`` to merge ``remote_sha`` (pure over the object store). The three
    versions of a file both sides changed are compared and merged as ``clean`` gives them; ``moves`` pairs files
    a side moved with the other side's change of them."""
    from dulwich.graph import find_merge_base

    def same(data: bytes | None) -> bytes | None:
        return data

    side = clean or same
    bases = find_merge_base(repo, [ObjectID(local), ObjectID(remote_sha)])
    base_tree = _tree_of(repo, bases[0]) if bases else None
    local_tree, remote_tree = _tree_of(repo, local), _tree_of(repo, remote_sha)
    ours = diff_trees(repo.object_store, base_tree, local_tree)
    links: list[str] = []
    theirs = diff_trees(repo.object_store, base_tree, remote_tree, links=links)
    _refuse_links(links)
    files: dict[str, bytes | None] = {}
    settled: set[str] = set()

    def write(merged: Mapping[str, bytes | None]) -> None:
        for out_path, data in merged.items():
            if data != _file_at(repo, local_tree, out_path):
                files[out_path] = data

    for moved in _merge_moves(repo, base_tree, ours, theirs, moves, side) if moves is not None else ():
        write(moved)
        settled.update(moved)
    for path, their_sha in sorted(theirs.items()):
        if path in settled:
            continue
        if path not in ours:
            files[path] = _blob(repo, their_sha)
            continue
        if ours[path] == their_sha:
            continue
        write(merge(path, side(_file_at(repo, base_tree, path)), side(_blob(repo, ours[path])),
                    side(_blob(repo, their_sha))))
    return files


def redaction(store: GitStore) -> Cleaner:
    """The repository's redaction (built-in rules and the user's patterns) of one side of a merge: two sides that
    differ only by a secret one of them still holds (its history rewritten by ``purge-secrets`` on one machine
    only, or a secret committed with git) are the same once redacted, so they merge without a conflict. Content
    that is not UTF-8 is left as it is (:meth:`GitStore.scrub_files` refuses it if it holds a secret)."""

    def clean(data: bytes | None) -> bytes | None:
        if data is None:
            return None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return data
        scrubbed = store.scrub_text(text)
        return data if scrubbed == text else scrubbed.encode("utf-8")

    return clean


def merge_changes(store: GitStore, local: bytes, other: bytes, merge: FileMerger, *,
                  moves: Moves | None = None) -> dict[str, bytes | None]:
    """The files to change on top of ``local`` to merge ``other`` (nothing is written)."""
    with store.open() as repo:
        return _three_way(repo, local, other, merge, moves=moves, clean=redaction(store))


def adopt_same_tree(store: GitStore, target: bytes) -> bool:
    """Move the local branch to ``target`` when the two hold the same files (a review branch squash-merged: the
    remote branch holds every local change in a commit of its own). Its local commits would otherwise count as
    ahead for good and come back in the next review branch. False when the trees differ or nothing is to move.
    The caller holds :meth:`GitStore.locked`."""
    with store.open() as repo:
        local = _head(repo)
        if local is None or local == target or _tree_of(repo, local) != _tree_of(repo, target):
            return False
        store.move_to(repo, local, target, {})  # the same files: only the branch moves
    return True


def merge_into_branch(store: GitStore, remote_sha: bytes, *, merge: FileMerger,
                      message: Callable[[Mapping[str, bytes | None]], str], author: str,
                      moves: Moves | None = None) -> MergeOutcome:
    """Bring ``remote_sha`` into the local branch: fast-forward, a two-parent merge commit (its message from
    ``message`` given the merged files; files and message pass the redaction gate), or nothing when the local
    branch already contains it. Files both sides changed are merged redacted, and ``moves`` follows files a side
    moved (see :func:`_three_way`). The caller holds :meth:`GitStore.locked`."""
    with store.open() as repo:
        local = _head(repo)
        if local is None or _is_ancestor(repo, local, remote_sha):
            if local == remote_sha:
                return MergeOutcome("up-to-date", remote_sha.decode())
            return MergeOutcome("fast-forward", remote_sha.decode(),
                                changed=_fast_forward(store, repo, local, remote_sha))
        if _is_ancestor(repo, remote_sha, local):
            return MergeOutcome("up-to-date", local.decode())
        files = _three_way(repo, local, remote_sha, merge, moves=moves, clean=redaction(store))
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
