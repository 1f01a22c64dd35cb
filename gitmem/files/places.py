"""Where things are, found without loading the configuration: the user's settings file (the per-tool-call hook
looks for it on every call: a file there may name settings that change where memories go; :mod:`gitmem.config`
reads it), what makes a folder a memory repository (:func:`is_memory_repo`) and the folder a memory repository's
derived state goes to (:func:`derived_dir`)."""

from __future__ import annotations

import os

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the per-tool-call hook imports this module
if TYPE_CHECKING:
    from collections.abc import Mapping


def user_config_file(env: Mapping[str, str], home: str | os.PathLike[str]) -> str:
    """``$GITMEM_CONFIG``, else ``$XDG_CONFIG_HOME/gitmem/config.toml``, else ``~/.config/gitmem/config.toml``."""
    if env.get("GITMEM_CONFIG"):
        return os.path.expanduser(env["GITMEM_CONFIG"])
    return os.path.join(env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config"), "gitmem", "config.toml")


def user_cache_home(env: Mapping[str, str], home: str | os.PathLike[str]) -> str:
    """gitmem's folder in the user's cache: ``$XDG_CACHE_HOME/gitmem``, else ``~/.cache/gitmem``
    (:attr:`gitmem.config.Config.cache_home`, which the hooks' settings snapshot needs before the settings)."""
    return os.path.join(env.get("XDG_CACHE_HOME") or os.path.join(home, ".cache"), "gitmem")


#: the file that makes a git repository a gitmem memory repository (its settings, committed with the memories)
REPO_CONFIG_NAME = "gitmem.toml"


def is_memory_repo(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a gitmem memory repository: a git work tree holding :data:`REPO_CONFIG_NAME` (two
    stats: every hook asks, the per-tool-call one too, before it writes anything there; a code project's
    repository, a wrong ``GITMEM_REPO``, gets nothing written into it)."""
    return os.path.isdir(os.path.join(path, ".git")) and os.path.isfile(os.path.join(path, REPO_CONFIG_NAME))


#: the folder, under a memory repository, of what is derived from it (search index, vectors, caches): ignored by
#: git, rebuildable at any time
CACHE = ".cache"


def derived_dir(repo_dir: str, cache_home: str = "") -> str:
    """Where the search index, the vectors and the other derived state of the memory repository at ``repo_dir``
    go: its own ``.cache`` folder, or, for a repository this user cannot write (a read-only mount, a team's
    shared clone, a clone another user owns), a folder of its own under ``cache_home`` (the configuration's
    :attr:`~gitmem.config.Config.cache_home`), so that reading and searching it still work. Without a
    ``cache_home``, always ``.cache``. Two ``access`` calls, no import: the prompt's hook asks on every search."""
    own = os.path.join(repo_dir, CACHE)
    if not cache_home or os.access(own if os.path.isdir(own) else repo_dir, os.W_OK):
        return own
    import hashlib  # here: only a repository this user cannot write pays for it

    folder = os.path.abspath(repo_dir)
    digest = hashlib.sha256(folder.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return os.path.join(cache_home, "repos", f"{os.path.basename(folder) or 'repo'}-{digest}")
