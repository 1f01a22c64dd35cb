"""The memory repository as files and settings: its folder, its configuration and its git store.

:class:`StoredRepo` is all the search index needs (``gitmem.search.index.IndexedRepo``), so a prompt hook opens
the index without importing the memory API (redaction rules, documents, layout checks);
:class:`gitmem.store.memories.MemoryRepo` builds its verbs on it."""

from __future__ import annotations

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the prompt hook opens the index without importing typing
if TYPE_CHECKING:
    from gitmem.config import Config, StrPath


class StoredRepo:
    """A memory repository made from its settings alone: ``config``, ``git`` (a
    :class:`~gitmem.git.store.GitStore`, whose lock waits ``lock_timeout`` seconds) and ``path``."""

    def __init__(self, config: Config, *, lock_timeout: float = 2.0) -> None:
        from gitmem.git.store import GitStore

        self.config = config
        self.git = GitStore(config.repo_dir, lock_timeout=lock_timeout,
                            extra_patterns=config.redaction.extra_patterns)
        self.git.recover_if_interrupted()  # never read files of a write that a killed process left half done
        #: the repository's folder, as a string: the hooks open the index without importing :mod:`pathlib`
        #: (:class:`~gitmem.store.memories.MemoryRepo` gives it as a :class:`~pathlib.Path`)
        self.path: StrPath = self.git.repo_dir
