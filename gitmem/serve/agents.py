"""Writing gitmem's MCP server into the configuration of Codex, Gemini CLI, OpenCode and Claude Code.

Each agent keeps its MCP servers in a table of its own file (see ``docs/serve.md``):

=========  ==================================  ==========================  ===================================
agent      user file                           project file                entry
=========  ==================================  ==========================  ===================================
codex      ``$CODEX_HOME/config.toml``         ``.codex/config.toml``      ``[mcp_servers.gitmem]`` command, args
gemini     ``~/.gemini/settings.json``         ``.gemini/settings.json``   ``mcpServers.gitmem`` command, args
opencode   ``~/.config/opencode/opencode.json``  ``opencode.json``         ``mcp.gitmem`` type local, command []
claude     ``~/.claude.json``                  ``.mcp.json``               ``mcpServers.gitmem`` type stdio
=========  ==================================  ==========================  ===================================

The merge works like the hooks installer (:mod:`gitmem.agents.claude.settings`): only the ``gitmem`` entry is written;
every other key and server stays; installing twice changes nothing; the previous file is copied to
``<file>.gitmem-backup`` before a change; uninstalling removes exactly the ``gitmem`` entry (and the table when it
held nothing else). TOML is edited with tomlkit, so comments and layout of the rest of the file survive.
"""

from __future__ import annotations

import copy
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitmem.agents.claude.settings import SettingsError, _read, _render, _write
from gitmem.errors import GitmemError

NAME = "gitmem"
AGENTS = ("codex", "gemini", "opencode", "claude")


@dataclass
class Change:
    """What an install or uninstall did (or, with ``dry_run``, would do) to one agent's file."""

    path: Path
    changed: bool
    action: str = ""
    backup: Path | None = None
    text: str = ""


def config_path(agent: str, scope: str, *, home: Path, cwd: Path, env: dict[str, str] | None = None) -> Path:
    """The file ``agent`` reads its MCP servers from, for ``scope`` ``user`` or ``project``."""
    env = dict(os.environ) if env is None else env
    user = {
        "codex": Path(env.get("CODEX_HOME") or home / ".codex") / "config.toml",
        "gemini": home / ".gemini" / "settings.json",
        "opencode": Path(env.get("XDG_CONFIG_HOME") or home / ".config") / "opencode" / "opencode.json",
        "claude": home / ".claude.json",
    }
    project = {
        "codex": cwd / ".codex" / "config.toml",
        "gemini": cwd / ".gemini" / "settings.json",
        "opencode": cwd / "opencode.json",
        "claude": cwd / ".mcp.json",
    }
    if agent not in user:
        raise GitmemError(f"unknown agent {agent!r}", f"use one of: {', '.join(AGENTS)}")
    if scope not in ("user", "project"):
        raise GitmemError(f"unknown scope {scope!r}", "use user or project")
    return user[agent] if scope == "user" else project[agent]


def server_command(repo: Path | None = None) -> list[str]:
    """How an agent starts the server: the ``gitmem`` script next to this Python (absolute, so the agent's PATH
    does not matter), else this Python with ``-m gitmem``; then ``mcp``."""
    script = shutil.which("gitmem", path=str(Path(sys.executable).parent))
    command = [str(Path(script))] if script else [sys.executable, "-m", "gitmem"]
    if repo is not None:
        command += ["--repo", str(repo)]
    return [*command, "mcp"]


def entry(agent: str, command: list[str]) -> dict[str, Any]:
    """The server entry in ``agent``'s own format."""
    if agent == "opencode":
        return {"type": "local", "command": list(command), "enabled": True}
    if agent == "claude":
        return {"type": "stdio", "command": command[0], "args": list(command[1:]), "env": {}}
    return {"command": command[0], "args": list(command[1:])}


def _table_keys(agent: str, config: dict[str, Any]) -> tuple[str, ...]:
    if agent == "codex":
        return ("mcp_servers",)
    if agent == "opencode":
        mcp = config.get("mcp")
        # OpenCode 2 nests servers under mcp.servers; a server of version 1 named "servers" has its own "type"
        if isinstance(mcp, dict) and isinstance(mcp.get("servers"), dict) and "type" not in mcp["servers"]:
            return ("mcp", "servers")
        return ("mcp",)
    return ("mcpServers",)


def _table(config: Any, keys: tuple[str, ...], path: Path, create: bool) -> Any:
    node = config
    for key in keys:
        if key not in node:
            if not create:
                return None
            node[key] = {}
        node = node[key]
        if not hasattr(node, "keys"):
            raise SettingsError(f"{path}: '{'.'.join(keys)}' is not a table",
                                "fix the file first; gitmem did not change it")
    return node


def _load(agent: str, path: Path) -> tuple[Any, bytes | None]:
    if agent != "codex":
        return _read(path)
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return tomlkit.document(), None
    except OSError as exc:
        raise SettingsError(f"cannot read {path}: {exc.strerror}", "check its permissions") from None
    try:
        return tomlkit.parse(raw.decode("utf-8")), raw
    except (UnicodeDecodeError, TOMLKitError) as exc:
        raise SettingsError(f"{path} is not valid TOML ({exc})",
                            "fix the file first; gitmem did not change it") from None


def _dump(agent: str, config: Any) -> str:
    if agent != "codex":
        return _render(config)
    import tomlkit

    return tomlkit.dumps(config)


def _plain(value: Any) -> Any:
    return value.unwrap() if hasattr(value, "unwrap") else value


def install_server(agent: str, path: Path, command: list[str], *, dry_run: bool = False) -> Change:
    """Put gitmem's MCP server into ``agent``'s file at ``path`` (other entries stay as they are)."""
    config, raw = _load(agent, path)
    before = _dump(agent, config) if raw is not None else None
    config = copy.deepcopy(config)
    wanted = entry(agent, command)
    table = _table(config, _table_keys(agent, config), path, create=True)
    existing = _plain(table.get(NAME)) if NAME in table else None
    if existing == wanted and raw is not None:
        return Change(path, False, text=before or "")
    action = "updated" if existing is not None else "added"
    if agent == "codex":
        import tomlkit

        item = tomlkit.table()
        item.update(wanted)
        table[NAME] = item
    else:
        table[NAME] = wanted
    return _finish(agent, path, config, raw, action, dry_run)


def uninstall_server(agent: str, path: Path, *, dry_run: bool = False) -> Change:
    """Take exactly gitmem's MCP server out of ``agent``'s file (and its table when nothing else is left)."""
    config, raw = _load(agent, path)
    if raw is None:
        return Change(path, False)
    config = copy.deepcopy(config)
    keys = _table_keys(agent, config)
    table = _table(config, keys, path, create=False)
    if table is None or NAME not in table:
        return Change(path, False, text=_dump(agent, config))
    del table[NAME]
    for depth in range(len(keys), 0, -1):  # drop tables that only held gitmem's server
        parent = _table(config, keys[:depth - 1], path, create=False) if depth > 1 else config
        if len(parent[keys[depth - 1]]) == 0:
            del parent[keys[depth - 1]]
        else:
            break
    return _finish(agent, path, config, raw, "removed", dry_run)


def _finish(agent: str, path: Path, config: Any, raw: bytes | None, action: str, dry_run: bool) -> Change:
    text = _dump(agent, config)
    if action == "removed" and agent == "codex":  # tomlkit keeps the blank line it put before our table
        text = text.rstrip("\n") + "\n" if text.strip() else ""
    change = Change(path, True, action=action, text=text)
    if not dry_run:
        change.backup = _write(path, text, raw)
    return change
