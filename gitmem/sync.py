"""Sync with a remote: fetch, merge, push through dulwich (part of the repository layer).

Never a rebase (findings.md: dulwich's rebase leaves the index stale). ``sync`` fetches the remote branch, then
under the writer lock either fast-forwards (the remote is ahead), makes a real two-parent merge commit
(``Gitmem-Op: merge``) when the histories diverged, or does nothing (we are ahead), then pushes. The merge is
done by gitmem itself over the object store, file by file with :mod:`gitmem.merge`, and the work tree and the
index are updated only for the paths that change, the same way :meth:`GitStore.commit` does, so ``git status``
stays clean and nothing is ever left half merged: the branch moves last, with compare-and-swap.

Network steps (fetch, push) run with an optional time limit; an unreachable remote is one clear
:class:`RepoError` and leaves local work untouched.
"""

from __future__ import annotations

import io
import re
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, TypeVar

from dulwich.diff_tree import tree_changes
from dulwich.objects import Blob, Commit, ObjectID
from dulwich.refs import Ref
from dulwich.repo import Repo

from gitmem.config import Config
from gitmem.errors import GitmemError, RepoError
from gitmem.gitplumbing import TREE_MODE, TreeEditor, diff_trees, tree_entries
from gitmem.gitstore import BRANCH, HEAD, GitStore, format_message
from gitmem.merge import FileMerge, merge_file

T = TypeVar("T")
REMOTE = "origin"
_MAX_ROUNDS = 3


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
    """What :func:`auto_sync` needs: a :class:`~gitmem.store.MemoryRepo` or anything shaped like one."""

    @property
    def git(self) -> GitStore: ...

    @property
    def config(self) -> Config: ...


# -- network ------------------------------------------------------------------------------------------
def _bounded(action: str, url: str, func: Callable[[], T], timeout: float | None) -> T:
    """Run a network step, turning every failure into one line and enforcing ``timeout`` seconds."""
    box: dict[str, object] = {}
    url = display_url(url)
    _tune_dulwich()

    def run() -> None:
        try:
            box["value"] = func()
        except BaseException as exc:  # handed to the caller's thread
            box["error"] = exc

    if timeout is None:
        run()
    else:
        worker = threading.Thread(target=run, name=f"gitmem-{action}", daemon=True)
        worker.start()
        worker.join(timeout)
        if worker.is_alive():
            raise RepoError(f"cannot {action} {url}: no answer within {timeout:g} s",
                            "check your network; local memories are untouched")
    error = box.get("error")
    if error is not None:
        if isinstance(error, GitmemError):
            raise error
        from dulwich.porcelain import DivergedBranches

        if isinstance(error, DivergedBranches):
            raise error
        assert isinstance(error, BaseException)
        reason = " ".join(str(error).split()) or type(error).__name__
        reason = re.sub(r"(://[^/@:\s]*):[^/@\s]*@", r"\1@", reason)  # no credentials in messages or logs
        raise RepoError(f"cannot {action} {url}: {reason[:200]}",
                        "check the URL, your network and git credentials; local memories are untouched") from None
    return box["value"]  # type: ignore[return-value]


def display_url(url: str) -> str:
    """``url`` without a password or token (``https://user:secret@host/x`` → ``https://user@host/x``)."""
    return re.sub(r"^([a-z][a-z0-9+.-]*://)([^/@:]*):[^/@]*@", r"\1\2@", url, flags=re.IGNORECASE)


def remote_url(store: GitStore, remote: str = REMOTE) -> str:
    url = store.remote_url(remote)
    if not url:
        raise RepoError(f"the memory repository has no remote '{remote}'",
                        f"add one with: gitmem init {store.path} --remote URL")
    return url


def fetch(store: GitStore, branch: str = "main", *, remote: str = REMOTE,
          timeout: float | None = None) -> bytes | None:
    """Fetch ``remote`` (updating ``refs/remotes/<remote>/*``); the remote branch's commit, None if absent."""
    url = remote_url(store, remote)
    from dulwich import porcelain

    def run() -> dict[bytes, bytes | None]:
        with store.open() as repo:
            # dulwich's porcelain.fetch ends with an in-process auto-gc (a full repack past 6700 loose objects):
            # not inside a time-bounded sync; `git gc` does it better when the user wants it
            repo._autogc_disabled = True  # type: ignore[attr-defined]
            out = io.StringIO()
            result = porcelain.fetch(repo, remote, outstream=out, errstream=io.BytesIO(), quiet=True, prune=True)
            return {bytes(k): (bytes(v) if v is not None else None) for k, v in result.refs.items()}

    refs = _bounded("fetch from", url, run, timeout)
    return refs.get(b"refs/heads/" + branch.encode())


def push(store: GitStore, local: bytes, target: str, *, remote: str = REMOTE, timeout: float | None = None,
         force: bool = False) -> None:
    """Push the local branch (at ``local`` or later) to ``refs/heads/<target>`` on the remote.

    Raises ``DivergedBranches`` when the remote branch moved and a fast-forward is impossible."""
    url = remote_url(store, remote)
    from dulwich import porcelain

    def run() -> None:
        with store.open() as repo:
            pushed = _head(repo) or local
            refspec = (b"+" if force else b"") + BRANCH + b":refs/heads/" + target.encode()
            result = porcelain.push(repo, remote, [refspec], outstream=io.BytesIO(), errstream=io.BytesIO(),
                                    force=force)
            for ref, error in (result.ref_status or {}).items():
                if error is not None:
                    raise RepoError(f"the remote refused {ref.decode('utf-8', 'replace')}: {error}",
                                    "check your permissions on the remote")
            if target:
                repo.refs[Ref(f"refs/remotes/{remote}/{target}".encode())] = ObjectID(pushed)

    _bounded("push to", url, run, timeout)


def _tune_dulwich() -> None:
    """Two process-wide fixes for dulwich 1.2 object transfer (local remotes are served in this process too,
    hence class-level switches, applied once):

    - When one pack has a ``.bitmap`` (a clone of a repacked bare repository, or that repository itself) dulwich
      answers reachability with bitmaps for every pack and fails with "No such file ... .bitmap" on a pack that
      has none (one a fetch or push just added). Graph traversal is always right, and cheap for a sync.
    - Delta reuse scans every object of every pack to send a few (``find_reusable_deltas``): 0.4 s per push or
      fetch at 10k memories. Memory files are small, so they are sent whole.
    """
    from dulwich.object_store import MissingObjectFinder, PackBasedObjectStore
    from dulwich.pack import generate_unpacked_objects

    if getattr(PackBasedObjectStore, "_gitmem_tuned", False):
        return
    reachability = PackBasedObjectStore.get_reachability_provider

    def provider(self: PackBasedObjectStore, prefer_bitmaps: bool = True) -> Any:
        return reachability(self, prefer_bitmaps=False)

    def pack_data(self: PackBasedObjectStore, have: Any, want: Any, *, shallow: Any = None, progress: Any = None,
                  ofs_delta: bool = True) -> tuple[int, Any]:
        missing = MissingObjectFinder(self, haves=have, wants=want, shallow=shallow, progress=progress)
        remote_has = missing.get_remote_has()
        object_ids = list(missing)
        return len(object_ids), generate_unpacked_objects(self, object_ids, progress=progress, ofs_delta=ofs_delta,
                                                          other_haves=remote_has, reuse_deltas=False)

    PackBasedObjectStore.get_reachability_provider = provider  # type: ignore[method-assign]
    PackBasedObjectStore.generate_pack_data = pack_data  # type: ignore[method-assign]
    PackBasedObjectStore._gitmem_tuned = True  # type: ignore[attr-defined]


def delete_remote_branch(store: GitStore, branch: str, *, remote: str = REMOTE,
                         timeout: float | None = None) -> None:
    """Delete ``refs/heads/<branch>`` on the remote (a merged review branch)."""
    url = remote_url(store, remote)
    from dulwich import porcelain

    def run() -> None:
        with store.open() as repo:
            porcelain.push(repo, remote, [b":refs/heads/" + branch.encode()], outstream=io.BytesIO(),
                           errstream=io.BytesIO())
            tracking = Ref(f"refs/remotes/{remote}/{branch}".encode())
            if tracking in repo.refs:
                del repo.refs[tracking]

    _bounded("delete a branch on", url, run, timeout)


def remote_branches(store: GitStore, prefix: str = "", *, remote: str = REMOTE) -> dict[str, bytes]:
    """Last fetched remote branches (name → commit) whose name starts with ``prefix``."""
    with store.open() as repo:
        refs = repo.refs.as_dict(Ref(f"refs/remotes/{remote}".encode()))
    return {name.decode(): bytes(sha) for name, sha in refs.items() if name.decode().startswith(prefix)}


_REV_SUFFIX = re.compile(r"(~\d*|\^\d*)$")


def parse_rev(repo: Repo, spec: str) -> Commit:
    """A commit from a revision: a SHA (or prefix), a ref, ``origin/main``, with ``~N`` / ``^`` / ``^N`` suffixes."""
    from dulwich.objectspec import parse_commit

    steps: list[str] = []
    while True:
        match = _REV_SUFFIX.search(spec)
        if not match or match.start() == 0:
            break
        steps.insert(0, match.group(1))
        spec = spec[: match.start()]
    commit = parse_commit(repo, spec)
    for step in steps:
        count = int(step[1:] or 1)
        if step[0] == "~":
            for _ in range(count):
                commit = _parent_commit(repo, commit, 1)
        else:
            commit = _parent_commit(repo, commit, count)
    return commit


def _parent_commit(repo: Repo, commit: Commit, number: int) -> Commit:
    if number < 1 or len(commit.parents) < number:
        raise KeyError(commit.id)
    parent = repo[commit.parents[number - 1]]
    assert isinstance(parent, Commit)
    return parent


def changes_between(store: GitStore, base: str, head: str) -> dict[str, tuple[bytes | None, bytes | None]]:
    """Files that differ between two revisions of the memory repository: path → (old, new) content."""
    with store.open() as repo:
        try:
            old, new = parse_rev(repo, base), parse_rev(repo, head)
        except (KeyError, ValueError):
            raise RepoError(f"cannot resolve {base}..{head}", "use revisions of the memory repository") from None
        diff = diff_trees(repo.object_store, old.tree, new.tree)
        return {path: (_file_at(repo, old.tree, path), _blob(repo, sha)) for path, sha in diff.items()}


def commits_between(store: GitStore, base: str, head: str) -> list[tuple[str, str]]:
    """(sha, message) of the commits in ``base..head``, newest first."""
    with store.open() as repo:
        old, new = parse_rev(repo, base), parse_rev(repo, head)
        return [(e.commit.id.decode(), e.commit.message.decode("utf-8", "replace"))
                for e in repo.get_walker(include=[new.id], exclude=[old.id])]


# -- history ------------------------------------------------------------------------------------------
def _head(repo: Repo) -> bytes | None:
    try:
        return repo.refs[HEAD]
    except KeyError:
        return None


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
def _blob(repo: Repo, sha: bytes | None) -> bytes | None:
    if sha is None:
        return None
    return repo.object_store[ObjectID(sha)].as_raw_string()


def _tree_of(repo: Repo, commit: bytes) -> bytes:
    obj = repo[ObjectID(commit)]
    assert isinstance(obj, Commit)
    return bytes(obj.tree)


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


def _file_at(repo: Repo, tree: bytes | None, path: str) -> bytes | None:
    if tree is None:
        return None
    parts = path.encode().split(b"/")
    for part in parts[:-1]:
        entry = tree_entries(repo.object_store, tree).get(part)
        if entry is None or entry[0] != TREE_MODE:
            return None
        tree = entry[1]
    leaf = tree_entries(repo.object_store, tree).get(parts[-1])
    if leaf is None or leaf[0] == TREE_MODE:
        return None
    return _blob(repo, leaf[1])


def _apply(store: GitStore, repo: Repo, old_head: bytes | None, new_commit: bytes,
           files: Mapping[str, bytes | None]) -> None:
    """Move the work tree, the index and the branch from ``old_head`` to ``new_commit``."""
    store.move_to(repo, old_head, new_commit, files)


def _contents(repo: Repo, changes: Mapping[str, bytes | None]) -> dict[str, bytes | None]:
    return {path: _blob(repo, sha) for path, sha in changes.items()}


def fast_forward(store: GitStore, repo: Repo, local: bytes | None, remote_sha: bytes) -> list[str]:
    """Move to ``remote_sha`` (a descendant of ``local``); returns the paths that changed."""
    local_tree = _tree_of(repo, local) if local else None
    files = _contents(repo, diff_trees(repo.object_store, local_tree, _tree_of(repo, remote_sha)))
    _check_clean(store, repo, local_tree, files)
    _apply(store, repo, local, remote_sha, files)
    return sorted(files)


def three_way(repo: Repo, base: bytes | None, local: bytes, remote_sha: bytes) -> tuple[dict[str, bytes | None],
                                                                                       FileMerge]:
    """The files to change on top of ``local`` to merge ``remote_sha`` (pure over the object store)."""
    base_tree = _tree_of(repo, base) if base else None
    local_tree, remote_tree = _tree_of(repo, local), _tree_of(repo, remote_sha)
    ours = diff_trees(repo.object_store, base_tree, local_tree)
    theirs = diff_trees(repo.object_store, base_tree, remote_tree)
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
        for blob in blobs:
            repo.object_store.add_object(blob)
        for tree in editor.new:
            repo.object_store.add_object(tree)
        commit = Commit()
        commit.tree = ObjectID(new_tree or local_tree)
        commit.parents = [ObjectID(local), ObjectID(remote_sha)]
        commit.author = commit.committer = author.encode()
        commit.author_time = commit.commit_time = int(time.time())
        offset = -time.timezone if time.localtime().tm_isdst == 0 else -time.altzone
        commit.author_timezone = commit.commit_timezone = offset
        commit.encoding = b"UTF-8"
        commit.message = merge_message(remote, branch, files, report).encode()
        repo.object_store.add_object(commit)
        _apply(store, repo, local, commit.id, files)
        result.action = "merged"
        result.merge_commit = result.head = commit.id.decode()
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
    from gitmem.documents import slugify

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
    for _round in range(_MAX_ROUNDS):
        remote_sha = fetch(store, branch, remote=remote, timeout=timeout)
        with store.locked():
            if remote_sha is not None:
                step = merge_remote(store, remote_sha, author=author, remote=remote, branch=branch)
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
        except DivergedBranches:
            continue  # someone pushed between our fetch and our push: fetch and merge again
        result.pushed = True
        if result.action == "up-to-date":
            result.action = "pushed"
        break
    else:
        raise RepoError(f"the remote branch kept moving during {_MAX_ROUNDS} sync rounds", "run gitmem sync again")
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


# -- code repositories (for extraction on commit) -----------------------------------------------------
@dataclass(frozen=True)
class CodeCommit:
    """One commit of a code repository: message, parent count, and the wanted changed files as
    path → (old text or None, new text or None)."""

    sha: str
    message: str
    parents: int
    files: dict[str, tuple[str | None, str | None]]


def _text(repo: Repo, sha: bytes | None) -> str | None:
    data = _blob(repo, sha)
    if data is None:
        return None
    if b"\0" in data[:8000]:
        return ""
    return data.decode("utf-8", "replace")


def _open_code(root: Path) -> Repo:
    from dulwich.errors import NotGitRepository

    try:
        return Repo(str(root))
    except NotGitRepository:
        raise RepoError(f"{root} is not a git repository", "pass --repo DIR of a code repository") from None


def code_commit(root: Path, rev: str, want: Callable[[str], bool]) -> CodeCommit:
    """Read ``rev`` of the code repository at ``root``; only files for which ``want(path)`` holds are read."""
    with _open_code(root) as repo:
        try:
            commit = parse_rev(repo, rev)
        except (KeyError, ValueError):
            raise RepoError(f"no commit {rev!r} in {root}", "give a commit SHA or ref") from None
        return _read_commit(repo, commit, want)


def _read_commit(repo: Repo, commit: Commit, want: Callable[[str], bool]) -> CodeCommit:
    parent_tree = _tree_of(repo, commit.parents[0]) if commit.parents else None
    files: dict[str, tuple[str | None, str | None]] = {}
    for change in tree_changes(repo.object_store, ObjectID(parent_tree) if parent_tree else None, commit.tree):
        old_path = change.old.path if change.old is not None else None
        new_path = change.new.path if change.new is not None else None
        path = (new_path or old_path or b"").decode("utf-8", "replace")
        if not path or not want(path):
            continue
        old = _text(repo, change.old.sha) if change.old is not None and change.old.path is not None else None
        new = _text(repo, change.new.sha) if change.new is not None and change.new.path is not None else None
        files[path] = (old, new)
    return CodeCommit(commit.id.decode(), commit.message.decode("utf-8", "replace"), len(commit.parents), files)


def _range_walker(repo: Repo, root: Path, rev_range: str, *, reverse: bool = False) -> Any:
    """A dulwich walker over ``A..B`` (or everything reachable from ``B`` given alone)."""
    start, sep, end = rev_range.partition("..")
    if not sep:
        start, end = "", rev_range
    try:
        tip = parse_rev(repo, end or "HEAD")
        stop = parse_rev(repo, start) if start else None
    except (KeyError, ValueError):
        raise RepoError(f"cannot resolve {rev_range!r} in {root}", "use A..B with commit SHAs or refs") from None
    return repo.get_walker(include=[tip.id], exclude=[stop.id] if stop else None, reverse=reverse)


def code_range(root: Path, rev_range: str, want: Callable[[str], bool]) -> list[CodeCommit]:
    """Commits of ``A..B`` (or everything reachable from ``B`` given alone), oldest first."""
    with _open_code(root) as repo:
        return [_read_commit(repo, entry.commit, want) for entry in _range_walker(repo, root, rev_range, reverse=True)]


def count_range(root: Path, rev_range: str) -> int:
    """How many commits :func:`code_range` would return (for a progress bar)."""
    with _open_code(root) as repo:
        return sum(1 for _ in _range_walker(repo, root, rev_range))


def code_repo_root(start: Path) -> Path | None:
    """The work tree root of the git repository containing ``start``."""
    start = start.resolve()
    return next((d for d in (start, *start.parents) if (d / ".git").exists()), None)


def hooks_dir(root: Path) -> Path:
    """Where git looks for hooks in the code repository at ``root`` (``core.hooksPath`` when set)."""
    import os

    with _open_code(root) as repo:
        try:
            configured = repo.get_config_stack().get((b"core",), b"hooksPath")
        except KeyError:
            configured = b""
        common = Path(repo.commondir())
    if configured:
        path = Path(os.path.expanduser(configured.decode("utf-8", "surrogateescape")))
        return path if path.is_absolute() else root / path
    return common / "hooks"
