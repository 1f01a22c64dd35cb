"""Sync with a remote: fetch, merge, push through dulwich (part of the repository layer).

Never a rebase (findings.md: dulwich's rebase leaves the index stale). ``sync`` fetches the remote branch, then
under the writer lock either fast-forwards (the remote is ahead), makes a real two-parent merge commit
(``Gitmem-Op: merge``) when the histories diverged, or does nothing (we are ahead), then pushes. The merge is
done by gitmem itself over the object store, file by file with :mod:`gitmem.sync.merge`, and the work tree and the
index are updated only for the paths that change, the same way :meth:`GitStore.commit` does, so ``git status``
stays clean and nothing is ever left half merged: the branch moves last, with compare-and-swap.

The network steps (fetch, push) come from :mod:`gitmem.git.remote` and run with an optional time limit; an
unreachable remote is one clear :class:`RepoError` and leaves local work untouched.
"""

from __future__ import annotations

import random
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from dulwich.objects import Blob, ObjectID
from dulwich.refs import Ref
from dulwich.repo import Repo

from gitmem.config import Config
from gitmem.errors import RepoError
from gitmem.git.plumbing import TreeEditor, diff_trees
from gitmem.git.remote import (
    REMOTE,
    PushRejected,
    _blob,
    _file_at,
    _head,
    _tree_of,
    delete_remote_branch,
    display_url,
    fetch,
    push,
    remote_branches,
    remote_url,
)
from gitmem.git.store import GitStore, format_message, new_commit
from gitmem.sync.merge import FileMerge, merge_file

#: fetch → merge → push rounds before a sync gives up on a remote that others keep pushing to
_MAX_ROUNDS = 6
#: seconds of the first pause after a refused push (doubled each round, with jitter)
_BACKOFF = 0.1


@dataclass
class SyncResult:
    """What a sync did. ``action``: ``up-to-date``, ``pushed``, ``fast-forward``, ``merged`` (then pushed),
    ``proposed`` (review mode: pushed to ``branch``)."""

    action: str = "up-to-date"
    remote: str = ""
    branch: str = "main"
    head: str = ""
    merge_commit: str = ""
    pushed: bool = False
    changed: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    conflicted_ids: list[str] = field(default_factory=list)
    #: review branches deleted on the remote because the main branch now contains them
    cleaned: list[str] = field(default_factory=list)
    seconds: float = 0.0


@dataclass(frozen=True)
class Status:
    """Where the local branch stands against the last fetched remote branch."""

    remote: str
    branch: str
    ahead: int
    behind: int
    pending: tuple[str, ...]
    fetched: bool = False


class HasStore(Protocol):
    """What :func:`auto_sync` needs: a :class:`~gitmem.store.memories.MemoryRepo` or anything shaped like one."""

    @property
    def git(self) -> GitStore: ...

    @property
    def config(self) -> Config: ...


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


def is_ancestor(repo: Repo, older: bytes, newer: bytes) -> bool:
    from dulwich.graph import can_fast_forward

    return older == newer or can_fast_forward(repo, ObjectID(older), ObjectID(newer))


def status(store: GitStore, branch: str = "main", *, remote: str = REMOTE) -> Status:
    """Ahead/behind against the last fetched remote branch, and files changed but not committed."""
    with store.open() as repo:
        local, theirs = _head(repo), _tracking(repo, branch, remote)
        ahead = _ancestors(repo, local, theirs) if local else 0
        behind = _ancestors(repo, theirs, local) if theirs else 0
    return Status(display_url(store.remote_url(remote)), branch, ahead, behind, pending_changes(store))


def pending_changes(store: GitStore) -> tuple[str, ...]:
    """Paths whose work-tree content differs from the last commit (edited, deleted or new, not ignored)."""
    from dulwich import porcelain

    with store.open() as repo:
        state = porcelain.status(repo, untracked_files="normal")
    paths: set[str] = set()
    for group in state.staged.values():
        paths.update(p.decode("utf-8", "replace") if isinstance(p, bytes) else str(p) for p in group)
    for item in (*state.unstaged, *state.untracked):
        paths.add(item.decode("utf-8", "replace") if isinstance(item, bytes) else str(item))
    return tuple(sorted(p for p in paths if not p.startswith((".cache/", "local/"))))


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


def _apply(store: GitStore, repo: Repo, old_head: bytes | None, new_commit: bytes,
           files: Mapping[str, bytes | None]) -> None:
    """Move the work tree, the index and the branch from ``old_head`` to ``new_commit``."""
    store.move_to(repo, old_head, new_commit, files)


def _contents(repo: Repo, changes: Mapping[str, bytes | None]) -> dict[str, bytes | None]:
    return {path: _blob(repo, sha) for path, sha in changes.items()}


def _refuse_links(links: list[str]) -> None:
    """A symbolic link (or submodule) from the remote would be written as a plain file or followed later:
    gitmem brings in neither."""
    if links:
        shown = ", ".join(sorted(links)[:3]) + (f" and {len(links) - 3} more" if len(links) > 3 else "")
        raise RepoError(f"the remote branch holds symbolic links or submodules, which gitmem never follows: {shown}",
                        "remove them on the remote (git rm PATH, commit, push), then sync again")


def fast_forward(store: GitStore, repo: Repo, local: bytes | None, remote_sha: bytes) -> list[str]:
    """Move to ``remote_sha`` (a descendant of ``local``); returns the paths that changed."""
    local_tree = _tree_of(repo, local) if local else None
    links: list[str] = []
    files = _contents(repo, diff_trees(repo.object_store, local_tree, _tree_of(repo, remote_sha), links=links))
    _refuse_links(links)
    _check_clean(store, repo, local_tree, files)
    _apply(store, repo, local, remote_sha, files)
    return sorted(files)


def three_way(repo: Repo, base: bytes | None, local: bytes, remote_sha: bytes) -> tuple[dict[str, bytes | None],
                                                                                       FileMerge]:
    """The files to change on top of ``local`` to merge ``remote_sha`` (pure over the object store)."""
    base_tree = _tree_of(repo, base) if base else None
    local_tree, remote_tree = _tree_of(repo, local), _tree_of(repo, remote_sha)
    ours = diff_trees(repo.object_store, base_tree, local_tree)
    links: list[str] = []
    theirs = diff_trees(repo.object_store, base_tree, remote_tree, links=links)
    _refuse_links(links)
    files: dict[str, bytes | None] = {}
    report = FileMerge()
    for path, their_sha in sorted(theirs.items()):
        if path not in ours:
            files[path] = _blob(repo, their_sha)
            continue
        if ours[path] == their_sha:
            continue
        merged = merge_file(path, _file_at(repo, base_tree, path), _blob(repo, ours[path]), _blob(repo, their_sha))
        report.conflicts.extend(merged.conflicts)
        report.conflicted_ids.extend(merged.conflicted_ids)
        for out_path, data in merged.changes.items():
            if data != _file_at(repo, local_tree, out_path):
                files[out_path] = data
    return files, report


def merge_remote(store: GitStore, remote_sha: bytes, *, author: str, remote: str = REMOTE,
                 branch: str = "main") -> SyncResult:
    """Bring ``remote_sha`` into the local branch: fast-forward, merge commit, or nothing when we are ahead.

    The caller holds :meth:`GitStore.locked`."""
    result = SyncResult(remote=display_url(store.remote_url(remote)), branch=branch)
    from dulwich.graph import find_merge_base

    with store.open() as repo:
        local = _head(repo)
        if local is None or is_ancestor(repo, local, remote_sha):
            if local != remote_sha:
                result.changed = fast_forward(store, repo, local, remote_sha)
                result.action = "fast-forward"
            result.head = remote_sha.decode()
            return result
        if is_ancestor(repo, remote_sha, local):
            result.head = local.decode()
            return result
        bases = find_merge_base(repo, [ObjectID(local), ObjectID(remote_sha)])
        files, report = three_way(repo, bases[0] if bases else None, local, remote_sha)
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
            message = store.scrub_text(merge_message(remote, branch, files, report))
            commit = new_commit(repo, new_tree or local_tree, [local, remote_sha], message, author,
                                [*blobs, *editor.new])
            _apply(store, repo, local, commit, files)
        result.action = "merged"
        result.merge_commit = result.head = commit.decode()
        result.changed = sorted(files)
        result.conflicts = report.conflicts
        result.conflicted_ids = sorted(set(report.conflicted_ids))
    return result


def merge_message(remote: str, branch: str, files: Mapping[str, bytes | None], report: FileMerge) -> str:
    body = f"{len(files)} files changed by the merge."
    if report.conflicts:
        body += "\n\nConflicts (both versions kept; settle them with gitmem resolve ID):\n" + "\n".join(
            f"- {c}" for c in report.conflicts)
    trailers: dict[str, str | list[str]] = {"Gitmem-Op": "merge", "Gitmem-Source": f"sync:{remote}/{branch}"}
    if report.conflicted_ids:
        trailers["Gitmem-Conflict"] = sorted(set(report.conflicted_ids))[:20]
    return format_message(f"merge: {remote}/{branch} into {branch}", trailers, body)


# -- the whole round ----------------------------------------------------------------------------------
def review_branch(machine: str, when: datetime | None = None) -> str:
    """The branch local changes go to in review mode: ``gitmem/<machine>/<YYYY-MM-DD>``."""
    from gitmem.store.document import slugify

    day = (when or datetime.now(UTC)).strftime("%Y-%m-%d")
    return f"gitmem/{slugify(machine, 40) or 'machine'}/{day}"


def machine_name() -> str:
    return socket.gethostname() or "machine"


def sync(store: GitStore, *, author: str, branch: str = "main", remote: str = REMOTE, mode: str = "direct",
         timeout: float | None = None, push_changes: bool = True, review_target: str = "") -> SyncResult:
    """Fetch, merge and push. In ``review`` mode local commits go to ``review_target`` (default
    :func:`review_branch`) on the remote instead of ``branch``; ``branch`` itself is only pulled. Review branches
    of this machine that the remote branch already contains (the pull request was merged) are deleted."""
    from dulwich.porcelain import DivergedBranches

    started = time.perf_counter()
    url = remote_url(store, remote)
    result = SyncResult(remote=display_url(url), branch=branch)
    refused_at: list[bytes | None] = []  # the remote commits our pushes were refused at
    missing = ""
    for _round in range(_MAX_ROUNDS):
        remote_sha = fetch(store, branch, remote=remote, timeout=timeout)
        with store.locked():
            if remote_sha is not None:
                try:
                    step = merge_remote(store, remote_sha, author=author, remote=remote, branch=branch)
                except KeyError as exc:
                    # a commit the fetched branch needs did not arrive (the remote was being pushed to while
                    # it answered): nothing was changed; fetch again
                    missing = exc.args[0].decode("ascii", "replace") if exc.args and isinstance(
                        exc.args[0], bytes) else str(exc)
                    time.sleep(random.uniform(0.5, 1.0) * _BACKOFF * 2 ** _round)
                    continue
                if step.action != "up-to-date":
                    result.action = step.action
                    result.merge_commit = step.merge_commit or result.merge_commit
                    result.changed = sorted({*result.changed, *step.changed})
                    result.conflicts.extend(c for c in step.conflicts if c not in result.conflicts)
                    result.conflicted_ids = sorted({*result.conflicted_ids, *step.conflicted_ids})
            local = store.head()
        result.head = local.decode() if local else ""
        if remote_sha is not None and push_changes:
            result.cleaned = cleanup_review_branches(store, remote_sha, remote=remote, timeout=timeout)
        if not push_changes or local is None or local == remote_sha:
            break
        with store.open() as repo:
            if remote_sha is not None and (is_ancestor(repo, local, remote_sha) or (
                    mode == "review" and _tree_of(repo, local) == _tree_of(repo, remote_sha))):
                break  # nothing of ours that the remote lacks (in review mode: no change left to propose)
        if mode == "review":
            target = review_target or review_branch(machine_name())
            push(store, local, target, remote=remote, timeout=timeout, force=True)
            result.branch = target
            result.pushed = True
            result.action = "proposed"
            break
        try:
            push(store, local, branch, remote=remote, timeout=timeout)
        except (DivergedBranches, PushRejected) as exc:
            # someone pushed between our fetch and our push: fetch, merge and push again after a pause that
            # grows and differs per process, so racing machines do not collide again in lockstep
            if isinstance(exc, PushRejected) and remote_sha in refused_at:
                raise  # refused again with the remote branch where it was: not a race
            refused_at.append(remote_sha)
            time.sleep(random.uniform(0.5, 1.0) * _BACKOFF * 2 ** _round)
            continue
        result.pushed = True
        if result.action == "up-to-date":
            result.action = "pushed"
        break
    else:
        if missing:
            raise RepoError(f"the history fetched from {result.remote} stayed incomplete (commit {missing[:12]} "
                            f"missing) during {_MAX_ROUNDS} rounds; local memories are untouched",
                            "run gitmem sync again; if it repeats, run git fsck on the remote")
        raise RepoError(f"others kept pushing to {result.remote} during {_MAX_ROUNDS} sync rounds; local memories "
                        "are committed and merged, only the push is missing", "run gitmem sync again")
    result.seconds = time.perf_counter() - started
    return result


def cleanup_review_branches(store: GitStore, main_sha: bytes, *, remote: str = REMOTE,
                            timeout: float | None = None, machine: str = "") -> list[str]:
    """Delete this machine's review branches on the remote once ``main_sha`` contains them (merged, also by a
    squash: merging the branch into ``main_sha`` would change nothing)."""
    from dulwich.graph import find_merge_base

    prefix = review_branch(machine or machine_name()).rsplit("/", 1)[0] + "/"
    merged: list[str] = []
    with store.open() as repo:
        for name, sha in sorted(remote_branches(store, prefix, remote=remote).items()):
            if is_ancestor(repo, sha, main_sha):
                merged.append(name)
                continue
            bases = find_merge_base(repo, [ObjectID(main_sha), ObjectID(sha)])
            files, _report = three_way(repo, bases[0] if bases else None, main_sha, sha)
            if not files:
                merged.append(name)
    deleted = []
    for name in merged:
        try:
            delete_remote_branch(store, name, remote=remote, timeout=timeout)
        except RepoError:  # already gone, or not ours to delete: forget the stale tracking ref only
            with store.open() as repo:
                tracking = Ref(f"refs/remotes/{remote}/{name}".encode())
                if tracking in repo.refs:
                    del repo.refs[tracking]
            continue
        deleted.append(name)
    return deleted


def auto_sync(repo: HasStore, timeout: float | None = None, *, pull: bool = True,
              push_changes: bool = True) -> SyncResult | None:
    """Best-effort sync for hooks (pull at session start, push at session end), bounded by ``timeout``
    (default ``sync.timeout`` from the config). Returns None when there is no remote or it failed; never raises
    for network trouble. Respects ``sync.mode``."""
    config = repo.config
    store = repo.git
    if not store.remote_url(REMOTE):
        return None
    limit = config.sync.timeout if timeout is None else timeout
    try:
        if not pull:
            local = store.head()
            if local is None:
                return None
            target = review_branch(machine_name()) if config.sync.mode == "review" else config.sync.branch
            push(store, local, target, timeout=limit, force=config.sync.mode == "review")
            return SyncResult(action="pushed", remote=display_url(store.remote_url(REMOTE)), branch=target, pushed=True,
                              head=local.decode())
        return sync(store, author=store.author(config.author), branch=config.sync.branch, mode=config.sync.mode,
                    timeout=limit, push_changes=push_changes)
    except Exception:
        return None
