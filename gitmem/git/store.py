"""The repository layer's write side: a memory repository's commits, made under its writer lock.

Every change is one commit made through dulwich's object store (no ``porcelain.add``): blobs and the changed trees
are written directly, the index is updated only for the changed paths, and the branch ref moves last. That keeps
the cost of a commit nearly flat as the repository grows (a full ``porcelain`` add/commit re-reads the whole
index and tree). A cross-process lock serialises writers; any failure before the ref moves puts the work tree
and the index back the way they were. The reads (files and trees at a commit, the log, config) are
:class:`~gitmem.git.reader.GitReader`'s, which :class:`GitStore` extends.
"""

from __future__ import annotations

import os
import time

from gitmem.errors import LockTimeoutError, RepoError
from gitmem.files.atomic import crash_point
from gitmem.git.head import JOURNAL_NAME
from gitmem.git.reader import BRANCH, HEAD, GitReader, lazy_contextmanager

# Neither typing, dataclasses, pathlib nor contextlib at run time: a hook process that writes (a session's
# directives, a refresh of the search index) pays for every import here (a prompt's reads HEAD through
# gitmem.git.head alone). The store keeps its folder as a string (``repo_dir``) and reads HEAD with os.path;
# ``path`` and ``git_dir`` make a Path (pathlib loaded then) for the rest.
TYPE_CHECKING = False
if TYPE_CHECKING:  # dulwich and filelock load on first use: reading HEAD or a file needs neither
    from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
    from contextlib import AbstractContextManager
    from pathlib import Path

    from dulwich.objects import Blob, ShaFile
    from dulwich.repo import Repo

LOCK_NAME = "gitmem.lock"
#: one fetch, merge and push at a time (``gitmem sync`` by hand, the hooks' automatic one)
SYNC_LOCK_NAME = "gitmem-sync.lock"


class GitStore(GitReader):
    """A memory repository on disk: a git work tree whose branch ``main`` holds the memories (HEAD is read as
    :class:`~gitmem.git.head.GitHead` reads it, the rest as :class:`~gitmem.git.reader.GitReader` does)."""

    def __init__(self, path: str | os.PathLike[str], *, lock_timeout: float = 30.0,
                 extra_patterns: Sequence[str] = ()) -> None:
        super().__init__(path)
        self.lock_timeout = lock_timeout
        #: the user's redaction patterns, applied with the built-in rules by :meth:`scrub_files`/:meth:`scrub_text`
        self.extra_patterns = tuple(extra_patterns)
        #: kinds of secrets the last :meth:`commit` (or scrub) removed, in order of first appearance
        self.last_redaction: list[str] = []
        #: inside :meth:`journal` (a nested write records nothing more)
        self.journaling = False
        #: told once, in one line, when :meth:`locked` has waited about a second for another process (the CLI
        #: prints it; the hooks leave it unset and stay silent)
        self.on_lock_wait: Callable[[str], object] | None = None

    # -- creation ---------------------------------------------------------------------------------------
    @staticmethod
    def init(path: Path) -> GitStore:
        """Create an empty repository whose HEAD points at ``main``."""
        from dulwich.repo import Repo

        path.mkdir(parents=True, exist_ok=True)
        try:
            with Repo.init(str(path)) as repo:
                repo.refs.set_symbolic_ref(HEAD, BRANCH)
        except OSError as exc:
            raise RepoError(f"cannot create a repository at {path}: {exc.strerror}", "check the path") from None
        return GitStore(path)

    @staticmethod
    def clone(remote: str, path: Path) -> GitStore:
        """Clone ``remote``'s ``main`` branch into ``path`` (which must not exist or be empty), whatever the
        remote's HEAD names (a bare repository made by ``git init --bare`` points it at ``master``)."""
        from dulwich import porcelain

        try:
            with porcelain.clone(remote, str(path), checkout=True, branch=BRANCH.removeprefix(b"refs/heads/"),
                                 errstream=_NullStream()):  # type: ignore[arg-type]
                pass
        except Exception as exc:  # dulwich raises many kinds (HangupException, GitProtocolError, OSError)
            raise RepoError(f"cannot clone {remote}: {exc}", "check the URL and your git credentials") from None
        return GitStore(path)

    @staticmethod
    def remote_branches(remote: str) -> list[str]:
        """The branch names ``remote`` has (empty for a new bare repository); RepoError when unreachable."""
        from dulwich import porcelain

        try:
            refs = porcelain.ls_remote(remote)
        except Exception as exc:
            raise RepoError(f"cannot reach {remote}: {exc}", "check the URL and your network") from None
        mapping = getattr(refs, "refs", refs)
        return sorted(name.decode("utf-8", "replace").removeprefix("refs/heads/") for name in mapping
                      if name.startswith(b"refs/heads/"))

    # -- writing ----------------------------------------------------------------------------------------
    @lazy_contextmanager
    def syncing(self, timeout: float) -> Iterator[None]:
        """Hold the repository's sync lock for a whole fetch, merge and push, waiting up to ``timeout`` seconds
        for another sync to end: two at once raced on the fetched refs and packs (dulwich's lock files, a pack
        checksum mismatch). Writes take the writer lock (:meth:`locked`) and are not held up by it."""
        from gitmem.files.locks import LockTimeout, file_lock, lock_owner

        try:
            with file_lock(self.git_dir / SYNC_LOCK_NAME, timeout, record_owner=True):
                yield
        except LockTimeout:
            pid = lock_owner(self.git_dir / SYNC_LOCK_NAME)
            raise LockTimeoutError(f"another gitmem sync{f' (pid {pid})' if pid else ''} has been running on "
                                   f"{self.path} for {timeout:.0f} s",
                                   "wait for it to finish; it fetches and pushes what this one would") from None

    @lazy_contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the repository's writer lock (waits up to ``lock_timeout`` seconds)."""
        from gitmem.files.locks import LockTimeout, file_lock

        tell = self.on_lock_wait

        def waiting(pid: int | None) -> None:
            assert tell is not None  # passed only when someone listens
            tell(f"waiting for another gitmem process{f' (pid {pid})' if pid else ''} holding the lock on "
                 f"{self.path}…")

        try:
            with file_lock(self.git_dir / LOCK_NAME, self.lock_timeout, record_owner=True,
                           on_wait=waiting if tell is not None else None):
                from gitmem.git.journal import recover

                recover(self)
                yield
        except LockTimeout:
            from gitmem.git.journal import owner_note

            raise LockTimeoutError(
                f"another gitmem process has held the lock on {self.path} for {self.lock_timeout:.0f} s"
                + owner_note(self.git_dir / JOURNAL_NAME),
                "wait for it to finish and try again",
            ) from None

    # -- the redaction gate -------------------------------------------------------------------------------
    def scrub_text(self, text: str) -> str:
        """``text`` with every secret redacted; the kinds found are added to :attr:`last_redaction`."""
        from gitmem.redact.engine import redact

        result = redact(text, extra_patterns=self.extra_patterns)
        self.last_redaction.extend(k for k in result.kinds if k not in self.last_redaction)
        return result.text

    def scrub_files(self, changes: Mapping[str, bytes | None]) -> dict[str, bytes | None]:
        """The files of a commit with every secret redacted from their content; a path that holds a secret is
        refused (:class:`RepoError`): a file name cannot be redacted without changing what it names, so ids and
        project names are checked, or derived from redacted text, before they become paths. Content that is not
        UTF-8 is refused when its Latin-1 reading holds a secret."""
        from gitmem.redact.engine import redact

        cleaned: dict[str, bytes | None] = {}
        for path, content in changes.items():
            named = redact(path, extra_patterns=self.extra_patterns)
            if named.kinds:
                raise RepoError(f"refusing to commit a file whose name holds a secret ({', '.join(named.kinds)}): "
                                f"{named.text!r}", "use an id or project name without the secret")
            if content is None:
                cleaned[path] = None
                continue
            try:
                text = content.decode("utf-8")
            except UnicodeDecodeError:
                found = redact(content.decode("latin-1"), extra_patterns=self.extra_patterns).kinds
                if found:
                    raise RepoError(f"refusing to commit {path}: binary content holds a secret ({', '.join(found)})",
                                    "remove the secret from the file") from None
                cleaned[path] = content
                continue
            scrubbed = self.scrub_text(text)
            cleaned[path] = content if scrubbed == text else scrubbed.encode("utf-8")
        return cleaned

    def recover_if_interrupted(self) -> None:
        """Undo a write that a killed process left half done, if its journal is there and no writer is running
        (readers call this so they never show files of a commit that does not exist). Costs one ``stat``
        (:mod:`gitmem.git.journal`)."""
        if self.interrupted():
            from gitmem.git.journal import recover_unless_writing

            recover_unless_writing(self)

    def journal(self, paths: Iterable[str]) -> AbstractContextManager[None]:
        """Record, before anything is written, which work-tree paths this write touches and who writes them; a
        process killed before the end leaves the record, and the next writer (or reader) puts those paths back
        to HEAD (:class:`gitmem.git.journal.Recording`)."""
        from gitmem.git.journal import Recording

        return Recording(self, paths)

    def target(self, rel: str) -> Path:
        """The work-tree path of ``rel``, refusing one that goes through a symbolic link."""
        from gitmem.files.atomic import UnsafePathError, inside

        try:
            return inside(self.path, rel)
        except UnsafePathError as exc:
            raise RepoError(f"{exc.rel} in the memory repository is a symbolic link; gitmem never writes "
                            "through one", f"remove the link {self.path / exc.rel} and retry") from None

    def commit(self, changes: Mapping[str, bytes | None], message: str, author: str) -> str:
        """Write ``changes`` (path → content, None deletes) to the work tree and commit them as one commit.

        Every commit of gitmem goes through here, and this is the redaction gate: secrets are redacted from
        every file's content and from the message (subject, body and trailers), and a path that holds a secret
        is refused (:meth:`scrub_files`), whatever the caller forgot; :attr:`last_redaction` lists the kinds
        removed. The caller holds :meth:`locked`. Returns the new commit SHA, or ``""`` when nothing changed.
        """
        from dulwich.objects import Blob

        from gitmem.git import worktree
        from gitmem.git.plumbing import TreeEditor

        self.last_redaction = []
        changes = self.scrub_files(changes)
        message = self.scrub_text(message)

        with self.intact(), self.open() as repo:
            try:
                old_head: bytes | None = repo.refs[HEAD]
            except KeyError:
                old_head = None
            old_tree = repo[old_head].tree if old_head else None  # type: ignore[attr-defined]
            blobs: dict[str, Blob | None] = {}
            tree_changes: dict[tuple[bytes, ...], bytes | None] = {}
            for path, content in changes.items():
                worktree.check_path(path)
                blob = Blob.from_string(content) if content is not None else None
                blobs[path] = blob
                tree_changes[tuple(path.encode().split(b"/"))] = blob.id if blob else None
            editor = TreeEditor(repo)
            new_tree = editor.apply(old_tree, tree_changes) or _empty_tree(repo)
            if new_tree == old_tree:
                return ""
            with self.journal(changes):
                commit = new_commit(repo, new_tree, [old_head] if old_head else [], message, author,
                                    [*(b for b in blobs.values() if b is not None), *editor.new])
                self.move_to(repo, old_head, commit, changes, blobs)
            return commit.decode()

    def move_to(self, repo: Repo, old_head: bytes | None, new_commit: bytes, files: Mapping[str, bytes | None],
                blobs: Mapping[str, Blob | None] | None = None) -> None:
        """Bring the work tree and the index from ``old_head`` to ``new_commit``, then move the branch
        (compare-and-swap). ``files`` are the paths that differ, with their new content (None: deleted).

        Used by commits and by merges/fast-forwards alike. On any failure the files and the index are put
        back and the branch stays where it was; a process killed on the way leaves its journal, and the next
        one rolls the files back (:func:`gitmem.git.journal.recover`)."""
        from dulwich.objects import Blob, ObjectID

        from gitmem.git import worktree
        from gitmem.git.plumbing import retry, write_index

        if blobs is None:
            blobs = {path: (Blob.from_string(data) if data is not None else None) for path, data in files.items()}
        with self.journal(files):
            undo = worktree.write_files(self, files)
            index_path = self.git_dir / "index"
            old_index = index_path.read_bytes() if index_path.exists() else None
            try:
                worktree.update_index(self, repo, blobs, old_index)
                crash_point("index")
                old_id = ObjectID(old_head) if old_head is not None else None
                moved = retry("move the branch",
                              lambda: repo.refs.set_if_equals(HEAD, old_id, ObjectID(new_commit)))
                if not moved:
                    raise RepoError("the memory repo's branch moved while gitmem was writing",
                                    "retry; run gitmem doctor if it repeats")
            except BaseException:
                worktree.restore(undo)
                if old_index is not None:
                    retry("restore the index", lambda: write_index(index_path, old_index))
                raise
            crash_point("ref")

class _NullStream:
    def write(self, data: bytes) -> int:
        return len(data)

    def flush(self) -> None:
        pass


def new_commit(repo: Repo, tree: bytes, parents: list[bytes], message: str, author: str,
               objects: Iterable[ShaFile] = ()) -> bytes:
    """Store ``objects`` (blobs and trees) and a commit of ``tree`` on ``parents``, dated now in the local time
    zone; returns the commit's SHA. Nothing points at it yet (the caller moves the branch)."""
    from dulwich.objects import Commit, ObjectID

    for obj in objects:
        repo.object_store.add_object(obj)
    commit = Commit()
    commit.tree = ObjectID(tree)
    commit.parents = [ObjectID(p) for p in parents]
    commit.author = commit.committer = author.encode()
    commit.author_time = commit.commit_time = int(time.time())
    offset = -time.timezone if time.localtime().tm_isdst == 0 else -time.altzone
    commit.author_timezone = commit.commit_timezone = offset
    commit.encoding = b"UTF-8"
    commit.message = message.encode()
    repo.object_store.add_object(commit)
    crash_point("objects")
    return bytes(commit.id)


def _empty_tree(repo: Repo) -> bytes:
    from dulwich.objects import Tree

    tree = Tree()
    repo.object_store.add_object(tree)
    return tree.id
