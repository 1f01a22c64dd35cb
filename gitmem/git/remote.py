"""The memory repository's remote, and reading its revisions (part of the repository layer, through dulwich).

Network steps (fetch, push, deleting a branch) run with an optional time limit, in a worker thread when one is
set, so an unreachable remote cannot hang a hook. A failure becomes one :class:`RepoError` line with no
credentials in it and leaves local work untouched; a push the remote refuses because its branch moved is a
:class:`PushDiverged`, for :func:`gitmem.sync.round.sync` to fetch and merge again. Revisions are read here too:
:func:`parse_rev` resolves names like ``origin/main~2``, :func:`changes_between` and :func:`commits_between` tell
what one branch (a review branch on the remote) adds to another. The small ref and object readers at the end are
shared with :mod:`gitmem.git.branches` and :mod:`gitmem.git.coderepo`.
"""

from __future__ import annotations

import io
import re
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from dulwich.file import FileLocked
from dulwich.objects import Commit, ObjectID
from dulwich.refs import Ref
from dulwich.repo import Repo

from gitmem.errors import GitmemError, RepoError
from gitmem.git.plumbing import TREE_MODE, diff_trees, tree_entries
from gitmem.git.reader import BRANCH, HEAD
from gitmem.git.store import GitStore

T = TypeVar("T")
REMOTE = "origin"


class PushRejected(RepoError):
    """The remote refused to move a branch. Most often someone else pushed between our fetch and our push (the
    remote then says "unable to set", "failed to update ref", "fetch first"): :func:`gitmem.sync.round.sync` fetches,
    merges and pushes again, and reports this only when the remote branch did not move (a real refusal)."""


class PushDiverged(PushRejected):
    """The remote branch moved since our fetch and a fast-forward is impossible: fetch, merge and push again."""


class PushLocked(PushRejected):
    """Another push is moving the remote branch right now (a remote on this file system holds its ref lock): the
    branch may not have moved yet, so wait, fetch, merge and push again."""


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
            raise PushDiverged(f"cannot {action} {url}: the remote branch moved", "run gitmem sync again") from None
        assert isinstance(error, BaseException)
        reason = " ".join(str(error).split()) or type(error).__name__
        reason = re.sub(r"(://[^/@:\s]*):[^/@\s]*@", r"\1@", reason)  # no credentials in messages or logs
        if len(reason) > 240:  # cut on a word, and say so: a half word reads as the error's own text
            reason = reason[:240].rsplit(" ", 1)[0] + " …"
        raise RepoError(f"cannot {action} {url}: {reason}",
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

    Raises :class:`PushDiverged` when the remote branch moved and a fast-forward is impossible."""
    url = remote_url(store, remote)
    from dulwich import porcelain

    def run() -> None:
        with store.open() as repo:
            pushed = _head(repo) or local
            refspec = (b"+" if force else b"") + BRANCH + b":refs/heads/" + target.encode()
            tracking = Ref(f"refs/remotes/{remote}/{target}".encode())
            # dulwich moves the remote-tracking branch to what it sent even when the remote refuses it: put back
            # what it was, or status says nothing is left to push and review shows nothing to review
            known = repo.refs.as_dict().get(tracking)
            try:
                try:
                    result = porcelain.push(repo, remote, [refspec], outstream=io.BytesIO(),
                                            errstream=io.BytesIO(), force=force)
                except FileLocked:  # a remote on this file system, whose branch another push is moving right now
                    raise PushLocked(f"the remote branch {target} is locked by another push",
                                     "run gitmem sync again") from None
                for ref, error in (result.ref_status or {}).items():
                    if error is not None:
                        raise PushRejected(f"the remote refused {ref.decode('utf-8', 'replace')}: {error}",
                                           "check your permissions on the remote")
            except BaseException:
                if known is not None:
                    repo.refs[tracking] = known
                elif tracking in repo.refs:
                    del repo.refs[tracking]
                raise
            if target:
                repo.refs[tracking] = ObjectID(pushed)

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


# -- revisions ----------------------------------------------------------------------------------------
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
    """Files that ``head`` changed since it forked from ``base``: path → (old, new) content.

    The diff starts at the merge base of the two (what ``git diff base...head`` shows), not at ``base`` itself:
    when ``base`` moved on too (another machine's memories on the remote branch), a diff of the two trees would
    show what only ``base`` has as removed by ``head``, and a ``base`` ahead of ``head`` would show changes while
    the range holds no commit. Histories with no common commit are compared tree to tree."""
    from dulwich.graph import find_merge_base

    with store.open() as repo:
        try:
            old, new = parse_rev(repo, base), parse_rev(repo, head)
        except (KeyError, ValueError):
            raise RepoError(f"cannot resolve {base}..{head}", "use revisions of the memory repository") from None
        bases = find_merge_base(repo, [old.id, new.id])
        start = _tree_of(repo, bases[0]) if bases else bytes(old.tree)
        diff = diff_trees(repo.object_store, start, new.tree)
        return {path: (_file_at(repo, start, path), _blob(repo, sha)) for path, sha in diff.items()}


def commits_between(store: GitStore, base: str, head: str) -> list[tuple[str, str]]:
    """(sha, message) of the commits in ``base..head``, newest first."""
    with store.open() as repo:
        old, new = parse_rev(repo, base), parse_rev(repo, head)
        return [(e.commit.id.decode(), e.commit.message.decode("utf-8", "replace"))
                for e in repo.get_walker(include=[new.id], exclude=[old.id])]


# -- refs and objects -----------------------------------------------------------------------------------
def _head(repo: Repo) -> bytes | None:
    try:
        return repo.refs[HEAD]
    except KeyError:
        return None


def _blob(repo: Repo, sha: bytes | None) -> bytes | None:
    if sha is None:
        return None
    return repo.object_store[ObjectID(sha)].as_raw_string()


def _tree_of(repo: Repo, commit: bytes) -> bytes:
    obj = repo[ObjectID(commit)]
    assert isinstance(obj, Commit)
    return bytes(obj.tree)


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
