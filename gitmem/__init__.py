"""gitmem: a git-native long-term memory for coding agents.

The public API is small::

    import gitmem

    repo = gitmem.open()                      # or gitmem.open("~/notes-memory")
    memory = repo.remember("Use PostgreSQL, not MySQL", category="decision", importance=4)
    repo.get(memory.id); repo.list(category="decision")
    repo.forget(memory.id, reason="we moved to SQLite"); repo.restore(memory.id)
    repo.log(memory.id)                       # the audit trail, read from git
    repo.search("why did we drop MySQL?")     # hybrid BM25 + embedding search
    repo.recall(cwd=".").text                 # the block a session in this project gets

Importing ``gitmem`` is cheap: the modules behind these names load on first use, so the hook processes that
run on every tool call only pay for what they touch.
"""

from __future__ import annotations

__version__ = "0.1.0"

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs every tool call's hook process
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from gitmem.api import Repository
    from gitmem.config import Config
    from gitmem.errors import GitmemError
    from gitmem.store.document import Memory
    from gitmem.store.memories import MemoryRepo

__all__ = ["Config", "GitmemError", "Memory", "MemoryRepo", "Repository", "__version__", "init", "open"]


def open(path: str | Path | None = None, *, config: Config | None = None) -> Repository:
    """Open a memory repository.

    With ``config`` the library uses exactly that configuration. Otherwise this is an entry point: the
    repository is ``path`` if given, else the one the environment names (``GITMEM_REPO``, a ``.memrepo`` file
    above the working directory, the user config, ``~/.gitmem``), with settings read the same way the CLI
    reads them. Raises :class:`GitmemError` when there is no memory repository there yet.
    """
    from pathlib import Path

    from gitmem.api import open_repository

    if config is None:
        import os

        from gitmem.config import discover

        config = discover(env=dict(os.environ), cwd=Path.cwd(), home=Path.home(),
                          repo=Path(path) if path is not None else None)
    elif path is not None:
        config = config.with_repo(Path(path).expanduser().resolve())
    return open_repository(config)


def init(path: str | Path, *, remote: str = "") -> Repository:
    """Create (or clone from ``remote``) a memory repository at ``path`` and open it. Idempotent."""
    from pathlib import Path

    from gitmem.store.layout import init_repo

    result = init_repo(Path(path), remote=remote)
    return open(result.path)


def __getattr__(name: str) -> Any:
    # PEP 562: each public name loads its module on first use; the hook processes import submodules only
    if name == "GitmemError":
        from gitmem.errors import GitmemError

        return GitmemError
    if name == "Memory":
        from gitmem.store.document import Memory

        return Memory
    if name == "Repository":
        from gitmem.api import Repository

        return Repository
    if name == "MemoryRepo":
        from gitmem.store.memories import MemoryRepo

        return MemoryRepo
    if name == "Config":
        from gitmem.config import Config

        return Config
    raise AttributeError(f"module 'gitmem' has no attribute {name!r}")
