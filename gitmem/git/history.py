"""Reading every object a repository's refs keep alive, and rewriting its branches object by object (part of the
repository layer, through dulwich; what to look for and what to replace is :mod:`gitmem.leaks`' business).

:func:`read_history` reads every commit reachable from a branch, remote-tracking branch or tag, every tree and
every blob once. :func:`rewrite_history` rewrites every local branch and tag, oldest commit first, through
callbacks for blob contents, file names and commit messages: authors, dates and the shape of history are kept, and
a commit whose tree, parents and message do not change keeps its SHA. Then it moves the work tree and the index to
the new HEAD, deletes the remote-tracking refs and the reflogs (they keep the old commits alive) and removes every
object no ref reaches.
"""

from __future__ import annotations

import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gitmem.errors import RepoError

if TYPE_CHECKING:
    from dulwich.repo import Repo

    from gitmem.git.store import GitStore

_GITLINK = 0o160000  # a submodule entry: no blob to read


@dataclass
class History:
    """Every object :func:`read_history` found."""

    refs: tuple[str, ...] = ()
    #: commit SHA → its raw message, newest first
    messages: dict[str, bytes] = field(default_factory=dict)
    #: annotated tag object SHA → its raw message
    tag_messages: dict[str, bytes] = field(default_factory=dict)
    #: every file path that ever existed → a commit that holds it
    names: dict[str, str] = field(default_factory=dict)
    #: blob SHA → (a path it was at, a commit that holds it)
    blobs: dict[bytes, tuple[str, str]] = field(default_factory=dict)
    #: blob SHA → its content
    contents: dict[bytes, bytes] = field(default_factory=dict)


@dataclass
class RewriteResult:
    """What :func:`rewrite_history` did."""

    rewritten: int = 0  #: commits written anew
    refs: dict[str, tuple[str, str]] = field(default_factory=dict)  #: ref → (old SHA, new SHA)
    dropped: list[str] = field(default_factory=list)  #: remote-tracking refs deleted
    pruned: int = 0  #: objects removed
    replaced: list[str] = field(default_factory=list)  #: the old commits written anew


def _refs(repo: Repo) -> dict[bytes, bytes]:
    """Branches, remote-tracking branches and tags (what keeps history alive) → the commit each points at."""
    found: dict[bytes, bytes] = {}
    for name, sha in repo.refs.as_dict().items():
        if not name.startswith(b"refs/"):
            continue
        try:
            obj: Any = repo[sha]
            while obj.type_name == b"tag":
                obj = repo[obj.object[1]]
        except KeyError:
            continue
        if obj.type_name == b"commit":
            found[name] = obj.id
    return found


def _tag_chain(repo: Repo, ref: bytes) -> list[Any]:
    """The annotated tag objects ``ref`` points through before its commit (none for a branch or a light tag)."""
    chain: list[Any] = []
    try:
        obj: Any = repo[repo.refs[ref]]  # type: ignore[index]
        while obj.type_name == b"tag":
            chain.append(obj)
            obj = repo[obj.object[1]]
    except KeyError:
        return []
    return chain


def read_history(store: GitStore) -> History:
    """Every commit message, file name and blob reachable from a ref (each tree and blob read once)."""
    from dulwich.objects import ObjectID

    result = History()
    with store.open() as repo:
        refs = _refs(repo)
        result.refs = tuple(sorted(r.decode("utf-8", "replace") for r in refs))
        if not refs:
            return result
        for ref in refs:
            for tag in _tag_chain(repo, ref):
                result.tag_messages[tag.id.decode()] = tag.message
        seen_trees: set[bytes] = set()
        for entry in repo.get_walker(include=[ObjectID(sha) for sha in sorted(set(refs.values()))]):
            commit = entry.commit
            sha = commit.id.decode()
            result.messages[sha] = commit.message
            stack: list[tuple[bytes, str]] = [(commit.tree, "")]
            while stack:
                tree_sha, prefix = stack.pop()
                if tree_sha in seen_trees:
                    continue
                seen_trees.add(tree_sha)
                tree: Any = repo[tree_sha]
                for item in tree.iteritems():
                    path = prefix + item.path.decode("utf-8", "replace")
                    result.names.setdefault(path, sha)
                    if stat.S_ISDIR(item.mode):
                        stack.append((item.sha, path + "/"))
                    elif item.mode != _GITLINK:
                        result.blobs.setdefault(item.sha, (path, sha))
        for blob_sha in result.blobs:
            result.contents[blob_sha] = repo[blob_sha].as_raw_string()
    return result


#: the file in a clone's git folder listing the commits ``purge-secrets`` rewrote because they held a secret (never
#: pushed): a sync refuses to merge a remote history that still has one of them
PURGED_FILE = "gitmem-purged"


def note_purged(store: GitStore, commits: Sequence[str]) -> None:
    """Add ``commits`` to the clone's list of purged commits (:data:`PURGED_FILE`)."""
    known = purged_commits(store)
    with (store.git_dir / PURGED_FILE).open("a", encoding="ascii") as fh:
        fh.writelines(f"{sha}\n" for sha in dict.fromkeys(commits) if sha not in known)


def purged_commits(store: GitStore) -> set[str]:
    """The commits this clone's ``purge-secrets`` rewrote (they held a secret)."""
    try:
        return set((store.git_dir / PURGED_FILE).read_text("ascii", errors="replace").split())
    except OSError:
        return set()


@dataclass(frozen=True)
class NewCommit:
    """A commit of :func:`new_commits`: its message and the files it wrote (path → content) against its first
    parent (every file of a root commit; the changes a merge commit made against its first parent)."""

    sha: str
    message: bytes
    files: dict[str, bytes]


def new_commits(store: GitStore, tip: bytes, exclude: bytes | None) -> list[NewCommit]:
    """The commits ``tip`` reaches and ``exclude`` does not (what a push would send, or a merge bring in), newest
    first, each with what it wrote."""
    from dulwich.objects import Commit, ObjectID

    from gitmem.git.plumbing import diff_trees

    found: list[NewCommit] = []
    with store.open() as repo:
        walker = repo.get_walker(include=[ObjectID(tip)], exclude=[ObjectID(exclude)] if exclude else None)
        for entry in walker:
            commit = entry.commit
            first = repo[commit.parents[0]] if commit.parents else None
            parent = first.tree if isinstance(first, Commit) else None
            links: list[str] = []  # a submodule names a commit the store does not hold: no content to read
            changed = diff_trees(repo.object_store, parent, commit.tree, links=links)
            files = {path: repo[sha].as_raw_string() for path, sha in changed.items()
                     if sha is not None and path not in links}
            found.append(NewCommit(commit.id.decode("ascii"), commit.message, files))
    return found


def rewrite_history(store: GitStore, *, content: Callable[[bytes], bytes], name: Callable[[str], str],
                    message: Callable[[bytes], bytes]) -> RewriteResult:
    """Rewrite every local branch and tag with each blob passed through ``content``, each file name through
    ``name`` and each commit message through ``message``, move the work tree and the index to the new HEAD, delete
    the remote-tracking refs and reflogs, and remove every object no ref reaches. The caller holds
    :meth:`GitStore.locked` and checked that the work tree has no uncommitted change."""
    from dulwich.gc import garbage_collect
    from dulwich.objects import Blob, Commit, ObjectID, Tag, Tree

    from gitmem.git.plumbing import diff_trees

    result = RewriteResult()
    with store.open() as repo:
        refs = _refs(repo)
        local = {ref: sha for ref, sha in refs.items() if ref.startswith((b"refs/heads/", b"refs/tags/"))}
        new_blobs: dict[bytes, bytes] = {}
        new_trees: dict[bytes, bytes] = {}

        def blob(sha: bytes) -> bytes:
            if sha not in new_blobs:
                data = repo[sha].as_raw_string()
                cleaned = content(data)
                if cleaned == data:
                    new_blobs[sha] = sha
                else:
                    replacement = Blob.from_string(cleaned)
                    repo.object_store.add_object(replacement)
                    new_blobs[sha] = replacement.id
            return new_blobs[sha]

        def tree(sha: bytes) -> bytes:
            if sha not in new_trees:
                old: Any = repo[sha]
                rebuilt = Tree()
                for item in old.iteritems():
                    item_name = item.path.decode("utf-8", "replace")
                    new_name = name(item_name)
                    while new_name.encode() in rebuilt and new_name != item_name:
                        new_name += "-1"
                    if stat.S_ISDIR(item.mode):
                        target = tree(item.sha)
                    elif item.mode == _GITLINK:
                        target = item.sha
                    else:
                        target = blob(item.sha)
                    rebuilt.add(new_name.encode() if new_name != item_name else item.path, item.mode, ObjectID(target))
                if rebuilt.id == old.id:
                    new_trees[sha] = sha
                else:
                    repo.object_store.add_object(rebuilt)
                    new_trees[sha] = rebuilt.id
            return new_trees[sha]

        mapping: dict[bytes, bytes] = {}
        if local:
            heads = [ObjectID(sha) for sha in sorted(set(local.values()))]
            for entry in repo.get_walker(include=heads, order="topo", reverse=True):
                old_commit = entry.commit
                parents = [mapping.get(p, p) for p in old_commit.parents]
                new_tree = tree(old_commit.tree)
                new_message = message(old_commit.message)
                if new_tree == old_commit.tree and parents == old_commit.parents and new_message == old_commit.message:
                    mapping[old_commit.id] = old_commit.id
                    continue
                commit = Commit()
                commit.tree = ObjectID(new_tree)
                commit.parents = [ObjectID(p) for p in parents]
                commit.author, commit.committer = old_commit.author, old_commit.committer
                commit.author_time, commit.commit_time = old_commit.author_time, old_commit.commit_time
                commit.author_timezone = old_commit.author_timezone
                commit.commit_timezone = old_commit.commit_timezone
                commit.encoding = b"UTF-8"
                commit.message = new_message
                repo.object_store.add_object(commit)
                mapping[old_commit.id] = commit.id
                result.rewritten += 1
                result.replaced.append(old_commit.id.decode("ascii"))
        def retag(sha: bytes) -> bytes:
            """The object an annotated tag becomes: a new tag on the rewritten commit, its message passed through
            ``message`` (a signature cannot survive the change and is dropped); a commit, its rewritten SHA."""
            obj: Any = repo[ObjectID(sha)]
            if obj.type_name != b"tag":
                return mapping.get(sha, sha)
            target_type, target = obj.object
            new_target, new_message = retag(target), message(obj.message)
            if new_target == target and new_message == obj.message:
                return sha
            tag = Tag()
            tag.name, tag.tagger, tag.message = obj.name, obj.tagger, new_message
            tag.tag_time, tag.tag_timezone = obj.tag_time, obj.tag_timezone
            tag.object = (target_type, ObjectID(new_target))
            repo.object_store.add_object(tag)
            return tag.id

        current = repo.refs.get_symrefs().get(b"HEAD")  # type: ignore[call-overload]
        for ref in local:
            old_sha = repo.refs[ref]  # type: ignore[index]  # an annotated tag's ref holds the tag object, not the commit
            new_sha = retag(old_sha)
            if new_sha == old_sha:
                continue
            result.refs[ref.decode()] = (old_sha.decode(), new_sha.decode())
            if ref == current:
                old_tree, new_tree = repo[old_sha].tree, repo[new_sha].tree  # type: ignore[attr-defined]
                changes = diff_trees(repo.object_store, old_tree, new_tree)
                files = {path: (repo[ObjectID(s)].as_raw_string() if s else None) for path, s in changes.items()}
                store.move_to(repo, old_sha, new_sha, files)
            elif not repo.refs.set_if_equals(ref, ObjectID(old_sha), ObjectID(new_sha)):  # type: ignore[arg-type]
                raise RepoError(f"{ref.decode()} moved while gitmem was rewriting it", "run purge-secrets again")
        for ref in refs:
            if ref.startswith(b"refs/remotes/"):
                repo.refs.remove_if_equals(ref, None)  # type: ignore[arg-type]
                result.dropped.append(ref.decode())
        logs = store.git_dir / "logs"
        for log in sorted(logs.rglob("*"), reverse=True) if logs.is_dir() else []:
            if log.is_file():
                log.unlink()
        stats = garbage_collect(repo, prune=True, grace_period=None)
        result.pruned = len(getattr(stats, "pruned_objects", ()) or ())
    return result
