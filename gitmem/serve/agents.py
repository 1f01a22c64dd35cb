"""Writing gitmem's MCP server into the configuration of Codex, Gemini CLI, OpenCode and Claude Code.

Each agent keeps its MCP servers in a table of its own file (see ``docs/serve.md``):

========  ====================================  =========================  ======================================
agent     user file                             project file               entry
========  ====================================  =========================  ======================================
codex     ``$CODEX_HOME/config.toml``           ``.codex/config.toml``     ``[mcp_servers.gitmem]`` command, args
gemini    ``~/.gemini/settings.json``           ``.gemini/settings.json``  ``mcpServers.gitmem`` command, args
opencode  ``~/.config/opencode/opencode.json``  ``opencode.json``          ``mcp.gitmem`` type local, command []
claude    ``~/.claude.json``                    ``.mcp.json``              ``mcpServers.gitmem`` type stdio
========  ====================================  =========================  ======================================

OpenCode's ``opencode.jsonc`` is the file written when the user has one (OpenCode reads both names and lets the
``.jsonc`` win). Gemini CLI's settings may hold comments, OpenCode's comments and trailing commas, as those agents
read them.

The merge works like the hooks installer (:mod:`gitmem.agents.claude.settings`), whose reading, editing and backup
rules it shares: only the ``gitmem`` entry is written, where it stands, in the file's own layout (comments
included); every other key and server stays; installing twice changes nothing; the file's bytes from before
gitmem's first change are kept in ``<file>.gitmem-backup``, never overwritten; uninstalling gives those bytes back
when nothing else changed since, else removes exactly the ``gitmem`` entry (and the table when it held nothing
else), and removes a file gitmem created. TOML is edited with tomlkit, so comments and layout of the rest of the
file survive; an inline ``mcp_servers = { ... }`` table or dotted ``mcp_servers.x.command`` keys get an inline
entry, as a table header there would be invalid TOML or would capture the keys after it.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitmem.agents.claude.settings import (
    SettingsError,
    decoded,
    json_backup,
    json_text,
    load_json,
    pruned,
    read_json,
    take_out,
    write_settings,
)
from gitmem.errors import GitmemError
from gitmem.text.jsonedit import JSON, JSON_WITH_COMMENTS, JSONC, Dialect, parse, same_json

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
    #: uninstall wrote the pre-install bytes back (and removed the backup that held them)
    restored: bool = False
    #: uninstall removed the file: it held nothing but gitmem's entry and gitmem had created it
    file_removed: bool = False


def config_path(agent: str, scope: str, *, home: Path, cwd: Path, env: dict[str, str] | None = None) -> Path:
    """The file ``agent`` reads its MCP servers from, for ``scope`` ``user`` or ``project``."""
    env = dict(os.environ) if env is None else env
    if agent not in AGENTS:
        raise GitmemError(f"unknown agent {agent!r}", f"use one of: {', '.join(AGENTS)}")
    if scope not in ("user", "project"):
        raise GitmemError(f"unknown scope {scope!r}", "use user or project")
    if agent == "opencode":
        return _opencode_file(Path(env.get("XDG_CONFIG_HOME") or home / ".config") / "opencode"
                              if scope == "user" else cwd)
    user = {
        "codex": Path(env.get("CODEX_HOME") or home / ".codex") / "config.toml",
        "gemini": home / ".gemini" / "settings.json",
        "claude": home / ".claude.json",
    }
    project = {
        "codex": cwd / ".codex" / "config.toml",
        "gemini": cwd / ".gemini" / "settings.json",
        "claude": cwd / ".mcp.json",
    }
    return user[agent] if scope == "user" else project[agent]


def _opencode_file(folder: Path) -> Path:
    """The OpenCode file in ``folder`` to write: the one that already holds gitmem's server (to update or take out),
    else ``opencode.jsonc`` when the user has one (OpenCode reads both and lets it win), else ``opencode.json``."""
    existing = [path for path in (folder / "opencode.jsonc", folder / "opencode.json") if path.is_file()]
    for path in existing:
        try:
            config, _ = read_json(path, JSONC)
        except SettingsError:
            continue
        servers = _get(config, _table_keys("opencode", config))
        if isinstance(servers, dict) and NAME in servers:
            return path
    return existing[0] if existing else folder / "opencode.json"


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


def _dialect(agent: str) -> Dialect:
    """What the agent itself accepts in its JSON file: Gemini CLI strips comments before ``JSON.parse``; OpenCode
    parses JSONC, trailing commas allowed; Claude Code's files are plain JSON."""
    return {"gemini": JSON_WITH_COMMENTS, "opencode": JSONC}.get(agent, JSON)


def _get(config: dict[str, Any], keys: tuple[str, ...]) -> Any:
    node: Any = config
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def _table(config: dict[str, Any], keys: tuple[str, ...], path: Path, create: bool) -> dict[str, Any] | None:
    node = config
    for key in keys:
        if key not in node:
            if not create:
                return None
            node[key] = {}
        node = node[key]
        if not isinstance(node, dict):
            raise SettingsError(f"{path}: '{'.'.join(keys)}' is not a table",
                                "fix the file first; gitmem did not change it")
    return node


def _without(agent: str, config: dict[str, Any], path: Path) -> dict[str, Any] | None:
    """``config`` without gitmem's server (and the tables that only held it); None when it has none."""
    result = copy.deepcopy(config)
    keys = _table_keys(agent, result)
    table = _table(result, keys, path, create=False)
    if table is None or NAME not in table:
        return None
    del table[NAME]
    pruned(result, keys)  # the tables that only held gitmem's server go too (in place)
    return result


def _by_hand(agent: str, keys: tuple[str, ...], wanted: dict[str, Any]) -> str:
    if agent == "codex":
        return f"add [mcp_servers.gitmem] with command = {json.dumps(wanted['command'])} and args = " \
               f"{json.dumps(wanted['args'])} by hand"
    return f"add {json.dumps(NAME)}: {json.dumps(wanted)} under {json.dumps('.'.join(keys))} by hand"


def install_server(agent: str, path: Path, command: list[str], *, dry_run: bool = False) -> Change:
    """Put gitmem's MCP server into ``agent``'s file at ``path`` (other entries stay as they are)."""
    if agent == "codex":
        return _install_toml(path, command, dry_run)
    doc, raw = load_json(path, _dialect(agent))
    config = doc.root.value if doc is not None else {}
    new = copy.deepcopy(config)
    wanted = entry(agent, command)
    keys = _table_keys(agent, new)
    table = _table(new, keys, path, create=True)
    assert table is not None
    existing = table.get(NAME)
    if same_json(existing, wanted) and raw is not None:
        return Change(path, False, text=decoded(raw))
    table[NAME] = wanted
    text = json_text(doc, new, path, _by_hand(agent, keys, wanted))
    return _installed(path, text, raw, "updated" if existing is not None else "added", dry_run)


def uninstall_server(agent: str, path: Path, *, dry_run: bool = False) -> Change:
    """Take exactly gitmem's MCP server out of ``agent``'s file (and its table when nothing else is left); give
    back the pre-install bytes when nothing else changed since; remove a file gitmem created."""
    if agent == "codex":
        return _uninstall_toml(path, dry_run)
    dialect = _dialect(agent)
    doc, raw = load_json(path, dialect)
    if doc is None or raw is None:
        return Change(path, False, text=decoded(raw))
    new = _without(agent, doc.root.value, path)
    if new is None:
        return Change(path, False, text=doc.text)
    text = json_text(doc, new, path, f"take the {json.dumps(NAME)} entry out by hand")
    return _removed(agent, path, raw, text, new, parse(text, dialect).comment_texts(), json_backup(dialect),
                    dry_run)


def _installed(path: Path, text: str, raw: bytes | None, action: str, dry_run: bool) -> Change:
    change = Change(path, True, action=action, text=text)
    if not dry_run:
        change.backup = write_settings(path, text, raw)
    return change


def _removed(agent: str, path: Path, raw: bytes, text: str, new: dict[str, Any], comments: list[str],
             read_backup: Callable[[bytes], tuple[Any, list[str]]], dry_run: bool) -> Change:
    def bare(config: Any) -> tuple[Any, bool]:
        without = _without(agent, config, path)
        result = copy.deepcopy(config) if without is None else without
        return pruned(result, _table_keys(agent, result)), without is not None

    text, backup, outcome = take_out(path, raw, text, new, comments, read_backup, bare, dry_run=dry_run)
    return Change(path, True, action="removed", text=text, backup=backup, restored=outcome == "restored",
                  file_removed=outcome == "removed")


# -- Codex: TOML --------------------------------------------------------------------------------------------------
def _load_toml(path: Path) -> tuple[Any, bytes | None]:
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


def _toml_comments(text: str) -> list[str]:
    """The comments of a valid TOML text, in order (a ``#`` inside a string or quoted key is none)."""
    comments: list[str] = []
    index, size = 0, len(text)
    while index < size:
        char = text[index]
        if char == "#":
            end = text.find("\n", index)
            end = size if end < 0 else end
            comments.append(text[index:end].rstrip("\r"))
            index = end
        elif char in "\"'":
            quote = char * 3 if text.startswith(char * 3, index) else char
            index += len(quote)
            while index < size and not text.startswith(quote, index):
                index += 2 if char == '"' and text[index] == "\\" else 1
            index += len(quote)
        else:
            index += 1
    return comments


def _toml_backup(raw: bytes) -> tuple[Any, list[str]]:
    text = raw.decode("utf-8")
    return tomllib.loads(text), _toml_comments(text)


def _checked_toml(doc: Any, raw: bytes | None, expected: dict[str, Any], path: Path, by_hand: str) -> str:
    """``doc`` written out, checked against the data it must hold: tomlkit places a new table after the last
    key of a dotted or out-of-order table, where it would capture the keys that follow."""
    import tomlkit

    text = tomlkit.dumps(doc)
    if raw is not None and b"\r\n" in raw and b"\n" not in raw.replace(b"\r\n", b""):
        text = text.replace("\r\n", "\n").replace("\n", "\r\n")  # tomlkit writes new lines with \n alone
    try:
        ok = tomllib.loads(text) == expected
    except tomllib.TOMLDecodeError:
        ok = False
    if not ok:
        raise SettingsError(f"gitmem cannot change {path} without changing its other entries", by_hand)
    return text


def _install_toml(path: Path, command: list[str], dry_run: bool) -> Change:
    import tomlkit
    from tomlkit.items import InlineTable, Table

    doc, raw = _load_toml(path)
    config = doc.unwrap()
    wanted = entry("codex", command)
    servers = config.get("mcp_servers", {})
    if not isinstance(servers, dict):
        raise SettingsError(f"{path}: 'mcp_servers' is not a table", "fix the file first; gitmem did not change it")
    existing = servers.get(NAME)
    if same_json(existing, wanted) and raw is not None:
        return Change(path, False, text=decoded(raw))
    expected = copy.deepcopy(config)
    expected.setdefault("mcp_servers", {})[NAME] = wanted
    if "mcp_servers" not in doc:
        doc["mcp_servers"] = tomlkit.table(is_super_table=True)  # written as [mcp_servers.gitmem]
    table = doc["mcp_servers"]
    current = table.get(NAME)
    dotted = any(key is not None and key.key == "mcp_servers" and key.is_dotted() for key, _ in doc.body)
    if isinstance(current, (Table, InlineTable)):  # updated in place, in its own form
        for key in [key for key in current if key not in wanted]:
            del current[key]
        current.update(wanted)
    else:
        # a [mcp_servers.gitmem] table cannot go inside an inline table, and after dotted keys it would capture
        # the keys that follow them: an inline table then
        item = tomlkit.inline_table() if isinstance(table, InlineTable) or dotted else tomlkit.table()
        item.update(wanted)
        if isinstance(item, Table) and doc.body and doc.body[-1][0] != "mcp_servers":
            item.add(tomlkit.nl())  # a blank line before the table that follows, like the others
        table[NAME] = item
    text = _checked_toml(doc, raw, expected, path, _by_hand("codex", ("mcp_servers",), wanted))
    return _installed(path, text, raw, "updated" if existing is not None else "added", dry_run)


def _uninstall_toml(path: Path, dry_run: bool) -> Change:
    doc, raw = _load_toml(path)
    if raw is None:
        return Change(path, False)
    new = _without("codex", doc.unwrap(), path)
    if new is None:
        return Change(path, False, text=decoded(raw))
    table = doc["mcp_servers"]
    del table[NAME]
    if len(table) == 0:
        del doc["mcp_servers"]
    text = _checked_toml(doc, raw, new, path, "take [mcp_servers.gitmem] out by hand")
    end = "\r\n" if text.endswith("\r\n") else "\n"
    if text.endswith(end * 2) and not raw.endswith(end.encode() * 2):  # the blank line tomlkit put before our table
        text = text.rstrip("\r\n") + end
    return _removed("codex", path, raw, text, new, _toml_comments(text), _toml_backup, dry_run)
