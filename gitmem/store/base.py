"""The memory repository as files and settings: its folder, its configuration and its git store.

:class:`StoredRepo` is all the search index needs (``gitmem.search.index.IndexedRepo``), so a prompt hook opens
the index without importing the memory API (redaction rules, documents, layout checks);
:class:`gitmem.store.memories.MemoryRepo` builds its verbs on it."""

from __future__ import annotations

from gitmem.errors import RepoNotFoundError
from gitmem.files.places import REPO_CONFIG_NAME
from gitmem.files.places import is_memory_repo as is_memory_repo

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the prompt hook opens the index without importing typing
if TYPE_CHECKING:
    from gitmem.config import Config, StrPath
    from gitmem.git.store import GitStore


class StoredRepo:
    """A memory repository made from its settings alone: ``config``, ``head`` (a :class:`~gitmem.git.head.GitHead`:
    what the search index's read side needs of git), ``git`` (a :class:`~gitmem.git.store.GitStore`, whose lock
    waits ``lock_timeout`` seconds, made on first use) and ``path``."""

    def __init__(self, config: Config, *, lock_timeout: float = 2.0) -> None:
        from gitmem.git.head import GitHead

        self.config = config
        self.lock_timeout = lock_timeout
        self.head = GitHead(config.repo_dir)
        if not is_memory_repo(self.head.repo_dir):
            # a code project's repository, say (a wrong --repo or GITMEM_REPO): memories must never land in it
            raise RepoNotFoundError(
                f"{self.head.repo_dir} is a git repository but not a gitmem memory repository (no {REPO_CONFIG_NAME})",
                "point --repo or GITMEM_REPO at your memory repository (gitmem init makes one in an empty folder)")
        self._store: GitStore | None = None
        if self.head.interrupted():  # never read files of a write that a killed process left half done
            self.git.recover_if_interrupted()
        #: the repository's folder, as a string: the hooks open the index without importing :mod:`pathlib`
        #: (:class:`~gitmem.store.memories.MemoryRepo` gives it as a :class:`~pathlib.Path`)
        self.path: StrPath = self.head.repo_dir

    @property
    def git(self) -> GitStore:
        """The git store: commits, history, the writes' lock (a prompt's search never needs it, nor pays for
        importing it)."""
        if self._store is None:
            from gitmem.git.store import GitStore

            self._store = GitStore(self.head.repo_dir, lock_timeout=self.lock_timeout,
                                   extra_patterns=self.config.redaction.extra_patterns)
        return self._store
