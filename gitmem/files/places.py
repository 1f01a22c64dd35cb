"""Where the user's settings file is, found without loading the configuration: the per-tool-call hook looks for
it on every call (a file there may name settings that change where memories go), :mod:`gitmem.config` reads it."""

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
