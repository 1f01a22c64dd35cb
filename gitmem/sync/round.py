"""Sync with a remote: fetch, merge, push.

Never a rebase (findings.md: dulwich's rebase leaves the index stale). ``sync`` fetches the remote branch, then
under the writer lock either fast-forwards (the remote is ahead), makes a real two-parent merge commit
(``Gitmem-Op: merge``) when the histories diverged, or does nothing (we are ahead), then pushes. The merge is
done by gitmem itself over the object store (:mod:`gitmem.git.branches`), file by file with
:mod:`gitmem.sync.merge`, and the work tree and the index are updated only for the paths that change, so
``git status`` stays clean and nothing is ever left half merged: the branch moves last, with compare-and-swap.

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

from gitmem.config import Config
from gitmem.errors import RepoError
from gitmem.git.branches import (
    FileMerger,
    Moves,
    adopt_same_tree,
    ahead_behind,
    forget_tracking_branch,
    is_ancestor,
    merge_changes,
    merge_into_branch,
    same_tree,
    tracking_sha,
    uncommitted_paths,
)
from gitmem.git.messages import format_message
from gitmem.git.remote import (
    REMOTE,
    PushDiverged,
    PushLocked,
    PushRejected,
    delete_remote_branch,
    display_url,
    fetch,
    push,
    remote_branches,
    remote_url,
)
from gitmem.git.store import GitStore
from gitmem.sync.merge import FileMerge, memory_identity, merge_file, merge_moved
from gitmem.text.counted import counted

#: fetch → merge → push rounds before a sync gives up on a remote that others keep pushing to
_MAX_ROUNDS = 6
#: how long a sync without a timeout waits for another sync of the repository to end
SYNC_WAIT = 120.0
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
    #: what the user should know and act on (a secret the merged history holds)
    warnings: list[str] = field(default_factory=list)
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


# -- merging ------------------------------------------------------------------------------------------
def status(store: GitStore, branch: str = "main", *, remote: str = REMOTE) -> Status:
    """Ahead/behind against the last fetched remote branch, and files changed but not committed."""
    ahead, behind = ahead_behind(store, branch, remote)
    return Status(display_url(store.remote_url(remote)), branch, ahead, behind, uncommitted_paths(store))


def _merger(report: FileMerge) -> FileMerger:
    """:func:`merge_file` for :mod:`gitmem.git.branches`, collecting the conflicts into ``report``."""

    def merge(path: str, base: bytes | None, ours: bytes | None, theirs: bytes | None) -> dict[str, bytes | None]:
        merged = merge_file(path, base, ours, theirs)
        report.conflicts.extend(merged.conflicts)
        report.conflicted_ids.extend(merged.conflicted_ids)
        return merged.changes

    return merge


def _moves(report: FileMerge) -> Moves:
    """:func:`merge_moved` for :mod:`gitmem.git.branches`: a memory one side moved (``gitmem move``) merges with
    the other side's change of it into one file, its conflicts collected into ``report``."""

    def merge(paths: tuple[str, str, str], base: bytes, ours: bytes, theirs: bytes) -> dict[str, bytes | None] | None:
        merged = merge_moved(paths, base, ours, theirs)
        if merged is None:
            return None
        report.conflicts.extend(merged.conflicts)
        report.conflicted_ids.extend(merged.conflicted_ids)
        return merged.changes

    return Moves(memory_identity, merge)


def merge_remote(store: GitStore, remote_sha: bytes, *, author: str, remote: str = REMOTE,
                 branch: str = "main") -> SyncResult:
    """Bring ``remote_sha`` into the local branch: fast-forward, merge commit, or nothing when we are ahead.

    The caller holds :meth:`GitStore.locked`."""
    result = SyncResult(remote=display_url(store.remote_url(remote)), branch=branch)
    report = FileMerge()
    outcome = merge_into_branch(store, remote_sha, merge=_merger(report), moves=_moves(report), author=author,
                                message=lambda files: merge_message(remote, branch, files, report))
    result.action, result.head, result.changed = outcome.action, outcome.head, outcome.changed
    if outcome.action == "merged":
        result.merge_commit = outcome.merge_commit
        result.conflicts = report.conflicts
        result.conflicted_ids = sorted(set(report.conflicted_ids))
    return result


def merge_message(remote: str, branch: str, files: Mapping[str, bytes | None], report: FileMerge) -> str:
    body = f"{counted(len(files), 'file')} changed by the merge."
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


#: the file in a clone's git folder holding its machine id (never committed, never pushed)
MACHINE_FILE = "gitmem-machine"


def machine_name(store: GitStore) -> str:
    """This clone's name in its review branches: the host name and a random id kept in the clone's git folder, so
    two machines of one host name (containers, dev containers: a common case) do not force-push over each other's
    proposals, which lost the other machine's changes from the open pull request."""
    import os
    import secrets

    path = store.git_dir / MACHINE_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:  # the id this clone was given first (two processes at once: the first one's)
        tag = path.read_text("ascii", errors="replace").strip()
    except OSError:  # a clone this user cannot write: an id for this process only
        tag = secrets.token_hex(3)
    else:
        tag = secrets.token_hex(3)
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(tag + "\n")
    return f"{socket.gethostname() or 'machine'}-{tag or secrets.token_hex(3)}"


def _secrets_in(store: GitStore, tip: bytes, exclude: bytes | None
                ) -> list[tuple[str, tuple[str, ...]]]:
    """The commits ``tip`` reaches and ``exclude`` does not that hold a secret (in the message, a file they wrote
    or a file's name), each with the kinds found, newest first."""
    from gitmem.git.history import new_commits
    from gitmem.redact.engine import find_secrets

    found = []
    for commit in new_commits(store, tip, exclude):
        texts = [commit.message.decode("utf-8", "replace"), *commit.files,
                 *(data.decode("utf-8", "replace") for data in commit.files.values())]
        kinds = tuple(dict.fromkeys(kind for text in texts
                                    for kind, _v in find_secrets(text, extra_patterns=store.extra_patterns)))
        if kinds:
            found.append((commit.sha, kinds))
    return found


def _check_incoming(store: GitStore, remote_sha: bytes, local: bytes | None, where: str, branch: str,
                    remote: str) -> str:
    """Refuse to merge a remote history that still has commits this clone's ``purge-secrets`` rewrote (the remote
    keeps them until it is force-pushed; merged, the secrets came back and the next push kept them there); a
    warning when the remote brings another commit holding a secret (one pushed from an older version or with
    git), "" when it brings none."""
    from gitmem.git.history import purged_commits

    if local is None or is_ancestor(store, remote_sha, local):
        return ""
    found = _secrets_in(store, remote_sha, local)
    if not found:
        return ""
    purged = purged_commits(store)
    again = [sha for sha, _kinds in found if sha in purged]
    if again:
        forget_tracking_branch(store, branch, remote)  # the fetch brought the old history back into this clone
        raise RepoError(f"{where} still has the history gitmem purge-secrets rewrote (commit {again[0][:10]} holds "
                        "a secret); merging would bring it back, so nothing was merged or pushed",
                        f"replace the remote's history: git -C {store.path} push --force {remote} HEAD:{branch}")
    sha, kinds = found[0]
    return (f"the history merged from {where} holds a secret ({', '.join(kinds)}, commit {sha[:10]}); run gitmem "
            "purge-secrets --yes, then replace the remote's history with git push --force")


def _refuse_outgoing_secret(store: GitStore, local: bytes, remote_sha: bytes | None, where: str) -> None:
    """Refuse to push commits that hold a secret: gitmem's own commits are redacted, but one made with ``git
    commit`` in the memory repository, or an old clone's history from before a ``purge-secrets``, is not. The
    commits the remote already has are not this push's."""
    found = _secrets_in(store, local, remote_sha)
    if found:
        sha, kinds = found[0]
        raise RepoError(f"commit {sha[:10]} holds a secret ({', '.join(kinds)}) that gitmem did not commit; nothing "
                        f"was pushed to {where}",
                        "run gitmem purge-secrets --yes (it rewrites local history without it), then sync again")


def sync(store: GitStore, *, author: str, branch: str = "main", remote: str = REMOTE, mode: str = "direct",
         timeout: float | None = None, push_changes: bool = True, review_target: str = "") -> SyncResult:
    """Fetch, merge and push. In ``review`` mode local commits go to ``review_target`` (default
    :func:`review_branch`) on the remote instead of ``branch``; ``branch`` itself is only pulled. Review branches
    of this machine that the remote branch already contains (the pull request was merged) are deleted. One sync
    of a repository runs at a time: another waits for it (up to ``timeout``, else :data:`SYNC_WAIT` seconds)."""
    with store.syncing(SYNC_WAIT if timeout is None else timeout):
        return _sync(store, author=author, branch=branch, remote=remote, mode=mode, timeout=timeout,
                     push_changes=push_changes, review_target=review_target)


def _sync(store: GitStore, *, author: str, branch: str, remote: str, mode: str, timeout: float | None,
          push_changes: bool, review_target: str) -> SyncResult:
    started = time.perf_counter()
    url = remote_url(store, remote)
    result = SyncResult(remote=display_url(url), branch=branch)
    refused_at: list[bytes | None] = []  # the remote commits our pushes were refused at
    locked: PushLocked | None = None  # the last push found the remote branch locked by another push
    missing = ""
    for _round in range(_MAX_ROUNDS):
        remote_sha = fetch(store, branch, remote=remote, timeout=timeout)
        with store.locked():
            if remote_sha is not None:
                warning = _check_incoming(store, remote_sha, store.head(), result.remote, branch, remote)
                if warning and warning not in result.warnings:
                    result.warnings.append(warning)
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
                if mode == "review" and adopt_same_tree(store, remote_sha):
                    # what this machine proposed was squash-merged: the remote branch is where it goes on from
                    result.action = "fast-forward"
            local = store.head()
        result.head = local.decode() if local else ""
        if remote_sha is not None and push_changes:
            result.cleaned = cleanup_review_branches(store, remote_sha, remote=remote, timeout=timeout)
        if not push_changes or local is None or local == remote_sha:
            break
        if remote_sha is not None and (is_ancestor(store, local, remote_sha) or (
                mode == "review" and same_tree(store, local, remote_sha))):
            break  # nothing of ours that the remote lacks (in review mode: no change left to propose)
        _refuse_outgoing_secret(store, local, remote_sha, result.remote)
        if mode == "review":
            target = review_target or review_branch(machine_name(store))
            push(store, local, target, remote=remote, timeout=timeout, force=True)
            result.branch = target
            result.pushed = True
            result.action = "proposed"
            break
        try:
            push(store, local, branch, remote=remote, timeout=timeout)
        except PushRejected as exc:
            # someone pushed between our fetch and our push: fetch, merge and push again after a pause that
            # grows and differs per process, so racing machines do not collide again in lockstep
            if not isinstance(exc, (PushDiverged, PushLocked)) and remote_sha in refused_at:
                raise  # refused again with the remote branch where it was: not a race
            refused_at.append(remote_sha)
            locked = exc if isinstance(exc, PushLocked) else None
            time.sleep(random.uniform(0.5, 1.0) * _BACKOFF * 2 ** _round)
            continue
        result.pushed = True
        if result.action == "up-to-date":
            result.action = "pushed"
        break
    else:
        if locked is not None:
            raise locked  # the remote branch stayed locked through every round: say so
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
    prefix = review_branch(machine or machine_name(store)).rsplit("/", 1)[0] + "/"
    merged: list[str] = []
    for name, sha in sorted(remote_branches(store, prefix, remote=remote).items()):
        report = FileMerge()
        if is_ancestor(store, sha, main_sha) or not merge_changes(store, main_sha, sha, _merger(report),
                                                                  moves=_moves(report)):
            merged.append(name)
    deleted = []
    for name in merged:
        try:
            delete_remote_branch(store, name, remote=remote, timeout=timeout)
        except RepoError:  # already gone, or not ours to delete: forget the stale tracking ref only
            forget_tracking_branch(store, name, remote)
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
            target = review_branch(machine_name(store)) if config.sync.mode == "review" else config.sync.branch
            _refuse_outgoing_secret(store, local, tracking_sha(store, config.sync.branch, REMOTE), target)
            push(store, local, target, timeout=limit, force=config.sync.mode == "review")
            return SyncResult(action="pushed", remote=display_url(store.remote_url(REMOTE)), branch=target, pushed=True,
                              head=local.decode())
        return sync(store, author=store.author(config.author), branch=config.sync.branch, mode=config.sync.mode,
                    timeout=limit, push_changes=push_changes)
    except Exception:
        return None
