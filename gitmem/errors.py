"""The one error root of gitmem.

Every error a user can cause or meet derives from :class:`GitmemError`. Its message says what went wrong and,
where there is one, what to do next; the CLI prints it as a single line and exits non-zero, the hooks log it
and stay silent towards the agent.
"""

from __future__ import annotations

import os


class GitmemError(Exception):
    """Root of all gitmem errors. ``str(err)`` is a one-line message that ends with what to do next."""

    exit_code = 1

    def __init__(self, message: str, hint: str | None = None) -> None:
        self.message = message
        self.hint = hint
        super().__init__(f"{message} ({hint})" if hint else message)


class ConfigError(GitmemError):
    """A configuration file or value is invalid."""


class RepoNotFoundError(GitmemError):
    """The memory repository does not exist or is not a gitmem repository."""

    @classmethod
    def at(cls, path: str | os.PathLike[str]) -> RepoNotFoundError:
        """The error for ``path``, which holds no memory repository, with what to do about what is there: nothing
        (``gitmem init`` creates it), a file, or a folder with other things in it (``gitmem init`` refuses both)."""
        where = os.fspath(path)
        if os.path.exists(where) and not os.path.isdir(where):
            return cls(f"{where} is a file, not a memory repository",
                       "move the file away, or point --repo or GITMEM_REPO at a folder; gitmem init DIR makes one")
        try:
            holds = os.path.isdir(where) and any(os.scandir(where))
        except OSError:
            holds = False
        if holds:
            return cls(f"no memory repository at {where}: the folder holds other files and no .git",
                       "point --repo or GITMEM_REPO at the memory repository, or at an empty or new folder and run "
                       "gitmem init there")
        return cls(f"no memory repository at {where}", f"create it with: gitmem init {where}")


class RepoError(GitmemError):
    """A git operation on the memory repository failed."""


class LockTimeoutError(RepoError):
    """Another gitmem process held the repository lock for too long."""


class ValidationError(GitmemError):
    """A memory, record or field value is invalid."""

    exit_code = 2


class NotFoundError(GitmemError):
    """No memory (or other document) has the given id."""


class DocumentError(GitmemError):
    """A file in the memory repository cannot be parsed."""


class EmbeddingError(GitmemError):
    """An embedding model is missing, corrupt, unknown or unusable; the message says which file and what to do.

    Search catches it and falls back to BM25 alone."""


class SearchError(GitmemError):
    """A search could not run (bad query, broken index)."""
