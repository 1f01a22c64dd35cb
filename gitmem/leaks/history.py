"""Find secrets in every object a memory repository's refs keep alive, and rewrite the branches without them.

:func:`scan` reads every commit reachable from a branch, remote-tracking branch or tag, every tree and every blob
once, and reports each place that holds a secret: a file's content, a file name, a commit message. It also looks
for the *slug* of each secret it found (``akiaabcd...``): before ids were derived from redacted text, the id of a
memory (its file name, its ``id:`` line, its ``Gitmem-Id`` trailer) was a lower-cased slug of the text, secret
included.

:func:`purge` rewrites every local branch and tag, oldest commit first: each secret becomes ``[REDACTED:<kind>]``
(``redacted-<kind>`` in file names and ids); authors, dates and the shape of history are kept, and a commit that
holds no secret keeps its SHA when its parents do. Then it moves the work tree and the index to the new HEAD,
deletes the remote-tracking refs and the reflogs (they keep the old commits alive) and removes every object no
ref reaches. The remote still has the old history until it is force-pushed.
"""

from __future__ import annotations

import re
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from gitmem.errors import RepoError
from gitmem.redact.engine import find_secrets, redact

if TYPE_CHECKING:
    from dulwich.repo import Repo

    from gitmem.git.store import GitStore

_GITLINK = 0o160000  # a submodule entry: no blob to read

#: a secret's slug shorter than this is not looked for (too likely to be an ordinary word)
MIN_SLUG = 12
#: the slug of a long secret is also looked for cut to this length (a derived id keeps at most 40 characters)
SLUG_PREFIX = 20


@dataclass(frozen=True)
class Leak:
    """One place in history that holds a secret."""

    place: str  #: "content", "file name" or "message"
    path: str  #: the file, with any secret in its name redacted ("" for a message)
    commit: str  #: a commit that holds it
    kinds: tuple[str, ...]

    def __str__(self) -> str:
        where = f"{self.place} of {self.path}" if self.path else self.place
        return f"{where} (commit {self.commit[:10]}): {', '.join(self.kinds)}"


@dataclass
class Scan:
    """What :func:`scan` found."""

    leaks: list[Leak] = field(default_factory=list)
    #: each secret as it appears → its kind
    secrets: dict[str, str] = field(default_factory=dict)
    #: the lower-case slug of each secret (as in a derived id) → its kind
    slugs: dict[str, str] = field(default_factory=dict)
    commits: int = 0
    blobs: int = 0
    refs: tuple[str, ...] = ()


@dataclass
class PurgeResult:
    """What :func:`purge` did."""

    rewritten: int = 0  #: commits written anew
    refs: dict[str, tuple[str, str]] = field(default_factory=dict)  #: ref → (old SHA, new SHA)
    dropped: list[str] = field(default_factory=list)  #: remote-tracking refs deleted
    pruned: int = 0  #: objects removed


def _slug(value: str) -> str:
    return re.sub(r"[^0-9a-z]+", "-", value.lower()).strip("-")


def _text(data: bytes) -> tuple[str, str]:
    """The text of a blob and the encoding it was read with (Latin-1 when it is not UTF-8)."""
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return data.decode("latin-1"), "latin-1"


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


def scan(store: GitStore, *, extra_patterns: Sequence[str] = ()) -> Scan:
    """Every place in the repository's history that holds a secret (each blob and tree read once)."""
    result = Scan()
    names: dict[str, str] = {}
    blobs: dict[bytes, tuple[str, str]] = {}
    messages: dict[str, str] = {}

    def note(place: str, path: str, commit: str, found: list[tuple[str, str]]) -> None:
        if found:
            result.leaks.append(Leak(place, path, commit, tuple(dict.fromkeys(k for k, _ in found))))
            for kind, value in found:
                result.secrets.setdefault(value, kind)

    from dulwich.objects import ObjectID

    with store.open() as repo:
        refs = _refs(repo)
        result.refs = tuple(sorted(r.decode("utf-8", "replace") for r in refs))
        if not refs:
            return result
        seen_trees: set[bytes] = set()
        for entry in repo.get_walker(include=[ObjectID(sha) for sha in sorted(set(refs.values()))]):
            commit = entry.commit
            sha = commit.id.decode()
            result.commits += 1
            messages[sha] = _text(commit.message)[0]
            note("message", "", sha, find_secrets(messages[sha], extra_patterns=extra_patterns))
            stack: list[tuple[bytes, str]] = [(commit.tree, "")]
            while stack:
                tree_sha, prefix = stack.pop()
                if tree_sha in seen_trees:
                    continue
                seen_trees.add(tree_sha)
                tree: Any = repo[tree_sha]
                for item in tree.iteritems():
                    path = prefix + item.path.decode("utf-8", "replace")
                    names.setdefault(path, sha)
                    if stat.S_ISDIR(item.mode):
                        stack.append((item.sha, path + "/"))
                    elif item.mode != _GITLINK:
                        blobs.setdefault(item.sha, (path, sha))
        result.blobs = len(blobs)
        texts: dict[bytes, str] = {}
        for blob_sha, (path, sha) in blobs.items():
            texts[blob_sha] = _text(repo[blob_sha].as_raw_string())[0]
            note("content", path, sha, find_secrets(texts[blob_sha], extra_patterns=extra_patterns))
        for path, sha in names.items():
            note("file name", path, sha, find_secrets(path, extra_patterns=extra_patterns))
        # The slugs of the secrets found, where derived ids put them.
        for value, kind in result.secrets.items():
            slug = _slug(value)
            if len(slug) >= MIN_SLUG:
                result.slugs.setdefault(slug, kind)
                result.slugs.setdefault(slug[:SLUG_PREFIX], kind)
        if result.slugs:
            reported = {(leak.place, leak.path, leak.commit) for leak in result.leaks}

            def slugged(place: str, path: str, commit: str, text: str) -> None:
                kinds = tuple(dict.fromkeys(k for s, k in result.slugs.items() if s in text))
                if kinds and (place, path, commit) not in reported:
                    result.leaks.append(Leak(place, path, commit, kinds))

            for path, sha in names.items():
                slugged("file name", path, sha, path.lower())
            for blob_sha, (path, sha) in blobs.items():
                slugged("content", path, sha, texts[blob_sha].lower())
            for sha, message in messages.items():
                slugged("message", "", sha, message.lower())
    content, _ = _scrubbers(result, extra_patterns)
    result.leaks = [replace(leak, path=content(leak.path)) for leak in result.leaks]  # shown without the secret
    return result


def _scrubbers(found: Scan, extra_patterns: Sequence[str]) -> tuple[Callable[[str], str], Callable[[str], str]]:
    """(for contents and messages, for file names): each removes every secret ``found`` knows, and every other
    secret the rules find now."""
    secrets = sorted(found.secrets.items(), key=lambda item: -len(item[0]))
    slugs = sorted(found.slugs.items(), key=lambda item: -len(item[0]))

    def content(text: str) -> str:
        text = redact(text, extra_patterns=extra_patterns).text
        for value, kind in secrets:
            text = text.replace(value, f"[REDACTED:{kind}]")
        for slug, kind in slugs:
            text = text.replace(slug, f"redacted-{kind}")
        return text

    def name(text: str) -> str:
        text = re.sub(r"\[REDACTED:([a-z0-9-]+)\]", r"redacted-\1", redact(text, extra_patterns=extra_patterns).text)
        for value, kind in secrets:
            text = text.replace(value, f"redacted-{kind}")
        for slug, kind in slugs:
            text = text.replace(slug, f"redacted-{kind}")
        return text.replace("/", "-")

    return content, name


def purge(store: GitStore, found: Scan, *, extra_patterns: Sequence[str] = ()) -> PurgeResult:
    """Rewrite every local branch and tag without the secrets ``found`` (and any the rules find now), move the
    work tree and the index to the new HEAD, delete the remote-tracking refs and reflogs, and remove every object
    no ref reaches. The caller holds :meth:`GitStore.locked`; the work tree must have no uncommitted change."""
    from dulwich.gc import garbage_collect
    from dulwich.objects import Blob, Commit, ObjectID, Tree

    from gitmem.git.plumbing import diff_trees
    from gitmem.sync.round import pending_changes

    pending = pending_changes(store)
    if pending:
        raise RepoError(f"uncommitted changes in the memory repository: {', '.join(pending[:3])}",
                        "commit or undo them (git status), then purge again")
    content, name = _scrubbers(found, extra_patterns)
    result = PurgeResult()
    with store.open() as repo:
        refs = _refs(repo)
        local = {ref: sha for ref, sha in refs.items() if ref.startswith((b"refs/heads/", b"refs/tags/"))}
        new_blobs: dict[bytes, bytes] = {}
        new_trees: dict[bytes, bytes] = {}

        def blob(sha: bytes) -> bytes:
            if sha not in new_blobs:
                data = repo[sha].as_raw_string()
                text, encoding = _text(data)
                cleaned = content(text)
                if cleaned == text:
                    new_blobs[sha] = sha
                else:
                    replacement = Blob.from_string(cleaned.encode(encoding, "replace"))
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
                message = content(_text(old_commit.message)[0]).encode("utf-8")
                if new_tree == old_commit.tree and parents == old_commit.parents and message == old_commit.message:
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
                commit.message = message
                repo.object_store.add_object(commit)
                mapping[old_commit.id] = commit.id
                result.rewritten += 1
        current = repo.refs.get_symrefs().get(b"HEAD")  # type: ignore[call-overload]
        for ref, old_sha in local.items():
            new_sha = mapping.get(old_sha, old_sha)
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
