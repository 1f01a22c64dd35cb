"""A memory repository's reads beyond HEAD: the repository opened with dulwich (a damaged one reported as one error
that says how to repair it), a file or a folder's files at a commit and what changed between two commits, the log,
and the author and remotes of its git config.

:class:`GitReader` builds on :class:`~gitmem.git.head.GitHead` (HEAD read with ``os`` alone), and
:class:`gitmem.git.store.GitStore` adds the writes to it; the refs both name (:data:`BRANCH`, :data:`HEAD`) are
declared here.
"""

from __future__ import annotations

from gitmem.errors import RepoError, RepoNotFoundError
from gitmem.git.head import GitHead
from gitmem.git.messages import LogEntry, parse_trailers
from gitmem.text.lazyre import LazyPattern

# Neither typing, pathlib nor contextlib at run time, and no regular expression compiled at import: a hook process
# that writes (a session's directives, a refresh of the search index) imports this module with the store (a
# prompt's reads HEAD through gitmem.git.head alone). ``path`` and ``git_dir`` make a Path (pathlib loaded then).
TYPE_CHECKING = False
if TYPE_CHECKING:  # dulwich loads on first use: reading HEAD needs none
    from collections.abc import Callable, Iterator
    from contextlib import AbstractContextManager
    from pathlib import Path
    from typing import ParamSpec, TypeVar, cast

    _P = ParamSpec("_P")
    _T = TypeVar("_T")

    from dulwich.refs import Ref  # noqa: F401 - named by the cast() calls
    from dulwich.repo import Repo
else:
    def cast(_type: str, value: bytes) -> bytes:  # typing.cast
        return value

BRANCH = cast("Ref", b"refs/heads/main")
HEAD = cast("Ref", b"HEAD")


def lazy_contextmanager(func: Callable[_P, Iterator[_T]]) -> Callable[_P, AbstractContextManager[_T]]:
    """:func:`contextlib.contextmanager`, imported when the context is first entered rather than when this module
    loads (contextlib costs a hook process ~5 ms; reading HEAD enters none of these contexts)."""
    def call(*args: _P.args, **kwargs: _P.kwargs) -> AbstractContextManager[_T]:
        from contextlib import contextmanager

        return contextmanager(func)(*args, **kwargs)

    call.__name__, call.__doc__ = func.__name__, func.__doc__
    return call


class GitReader(GitHead):
    """What a memory repository's read side asks of git beyond HEAD (:class:`~gitmem.git.head.GitHead`): the
    repository opened with dulwich, files and trees at a commit, the log, the configured author and remotes.
    :class:`gitmem.git.store.GitStore` adds the writes."""

    @property
    def path(self) -> Path:
        """The repository's folder."""
        from pathlib import Path

        return Path(self.repo_dir)

    @property
    def git_dir(self) -> Path:
        """Its ``.git`` folder."""
        from pathlib import Path

        return Path(self._git)

    def open(self) -> Repo:
        from dulwich.errors import NotGitRepository
        from dulwich.repo import Repo

        try:
            return Repo(str(self.path))
        except NotGitRepository:
            raise RepoNotFoundError(f"{self.path} is not a git repository", "run gitmem init") from None

    @lazy_contextmanager
    def intact(self) -> Iterator[None]:
        """Turn dulwich's missing-object errors (a damaged ``.git``: objects deleted, a ref pointing nowhere)
        into one :class:`RepoError` that says how to repair the repository."""
        from dulwich.errors import MissingCommitError, ObjectMissing

        try:
            yield
        except (KeyError, MissingCommitError, ObjectMissing) as exc:
            name = exc.args[0] if exc.args else exc
            shown = name.decode("utf-8", "replace") if isinstance(name, bytes) else str(name)
            raise RepoError(f"the memory repository {self.path} is damaged: object or ref {shown[:40]!r} is missing",
                            f"check it with: git -C {self.path} fsck; restore it from a clone or the remote "
                            "(git clone URL, then gitmem --repo NEWPATH doctor)") from None

    # -- reading ----------------------------------------------------------------------------------------
    def read_head_file(self, path: str, commit: bytes | None = None) -> bytes | None:
        """A file's content at HEAD (or at ``commit``), None when absent."""
        from dulwich.objects import Blob, Tree

        with self.intact(), self.open() as repo:
            try:
                sha = commit or repo.refs[HEAD]
            except KeyError:
                return None
            obj = repo[repo[sha].tree]  # type: ignore[attr-defined]
            for part in path.encode().split(b"/"):
                if not isinstance(obj, Tree) or part not in obj:
                    return None
                obj = repo[obj[part][1]]
            return obj.as_raw_string() if isinstance(obj, Blob) else None

    def tree_files(self, prefix: str = "") -> dict[str, str]:
        """Every file under the folder ``prefix`` (``""`` or ``"memories/"``) at HEAD mapped to its blob SHA
        (what the search index keys on)."""
        from gitmem.git.plumbing import walk_tree

        result: dict[str, str] = {}
        with self.intact(), self.open() as repo:
            tree = self._subtree(repo, self.head(), prefix)
            if tree is not None:
                walk_tree(repo.object_store, tree, prefix.encode(), result)
        return result

    def tree_changes(self, since: str, prefix: str = "") -> dict[str, str | None] | None:
        """Files under the folder ``prefix`` that differ between commit ``since`` and HEAD → their blob SHA at
        HEAD (None: removed), comparing only subtrees whose SHA differs; None when ``since`` is not in the
        repository (history rewritten and collected): walk :meth:`tree_files` instead."""
        from gitmem.git.plumbing import diff_trees

        with self.open() as repo:
            try:
                old = self._subtree(repo, since.encode(), prefix)
            except KeyError:
                return None
            with self.intact():  # HEAD's objects must be there: a damaged repository says so
                new = self._subtree(repo, self.head(), prefix)
                changes = diff_trees(repo.object_store, old, new, prefix.encode())
        return {path: sha.decode() if sha else None for path, sha in changes.items()}

    @staticmethod
    def _subtree(repo: Repo, commit: bytes | None, prefix: str) -> bytes | None:
        """The hex SHA of the tree at folder ``prefix`` of ``commit`` (None when either is missing); KeyError
        when ``commit`` is not in the object store."""
        from dulwich.objects import Commit, ObjectID, Tree

        if not commit:
            return None
        obj = repo[ObjectID(commit)]
        if not isinstance(obj, Commit):
            raise KeyError(commit)
        tree: bytes = obj.tree
        for part in prefix.strip("/").encode().split(b"/") if prefix.strip("/") else []:
            node = repo[ObjectID(tree)]
            if not isinstance(node, Tree) or part not in node:
                return None
            mode, sha = node[part]
            if mode != 0o040000:
                return None
            tree = sha
        return tree

    def log(
        self, paths: list[str] | None = None, limit: int | None = None, *, with_paths: bool = False
    ) -> list[LogEntry]:
        """Commits from HEAD backwards (optionally only those touching ``paths``), newest first.

        ``with_paths`` also lists the files each commit changed (a tree diff per commit: slower)."""
        entries: list[LogEntry] = []
        with self.intact(), self.open() as repo:
            try:
                head = repo.refs[HEAD]
            except KeyError:
                return entries
            walker = repo.get_walker(
                include=[head], paths=[p.encode() for p in paths] if paths else None, max_entries=limit
            )
            for item in walker:
                commit = item.commit
                message = commit.message.decode("utf-8", "replace")
                subject, _, rest = message.partition("\n")
                changed: list[str] = []
                for change in item.changes() if with_paths else []:
                    for ch in change if isinstance(change, list) else [change]:
                        if ch is None:
                            continue
                        for side in (ch.new, ch.old):
                            if side is not None and side.path is not None:
                                changed.append(side.path.decode("utf-8", "replace"))
                                break
                entries.append(
                    LogEntry(
                        sha=commit.id.decode(),
                        time=commit.commit_time,
                        author=commit.author.decode("utf-8", "replace"),
                        subject=subject.strip(),
                        body=rest.strip(),
                        trailers=parse_trailers(message),
                        paths=tuple(dict.fromkeys(changed)),
                    )
                )
        return entries

    def author(self, configured: str = "") -> str:
        """``configured`` if given, else ``user.name``/``user.email`` from git config, else a neutral default."""
        if configured:
            if not _AUTHOR.match(configured.strip()):
                raise RepoError(f"author {configured!r} is not 'Name <email>'", "fix 'author' in your gitmem config")
            return configured.strip()
        with self.open() as repo:
            stack = repo.get_config_stack()
            try:
                name = stack.get((b"user",), b"name").decode("utf-8", "replace")
                email = stack.get((b"user",), b"email").decode("utf-8", "replace")
            except KeyError:
                return DEFAULT_AUTHOR
        return f"{name} <{email}>" if name and email else DEFAULT_AUTHOR

    def remote_url(self, name: str = "origin") -> str:
        with self.open() as repo:
            try:
                url: bytes = repo.get_config().get((b"remote", name.encode()), b"url")
                return url.decode()
            except KeyError:
                return ""

    def set_remote(self, url: str, name: str = "origin") -> None:
        with self.open() as repo:
            config = repo.get_config()
            section = (b"remote", name.encode())
            config.set(section, b"url", url.encode())
            config.set(section, b"fetch", b"+refs/heads/*:refs/remotes/%s/*" % name.encode())
            config.write_to_path()

    def current_branch(self) -> str:
        with self.open() as repo:
            try:
                target: bytes = repo.refs.get_symrefs().get(HEAD, cast("Ref", b""))
            except Exception:
                target = b""
            return target.decode().removeprefix("refs/heads/")


_AUTHOR = LazyPattern(r"^[^<>\n]+ <[^<>\n]*>$")
DEFAULT_AUTHOR = "gitmem <gitmem@localhost>"
