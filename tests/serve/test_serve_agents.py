"""``gitmem install codex|gemini|opencode|claude --mcp``: the server entry merged into each agent's file, other
entries kept, idempotent, a backup, a dry run, and an uninstall that gives back the file's bytes (more on the
bytes of the files in ``test_install_files.py``)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from gitmem.serve.agents import config_path, install_server, server_command, uninstall_server
from tests.helpers import run_cli

USER_FILES = {
    "codex": ".codex/config.toml",
    "gemini": ".gemini/settings.json",
    "opencode": ".config/opencode/opencode.json",
    "claude": ".claude.json",
}
BEFORE = {
    "codex": '# my Codex settings\nmodel = "o4"\n\n[mcp_servers.docs]\ncommand = "npx"  # docs server\n'
             'args = ["-y", "docs-mcp"]\n',
    "gemini": json.dumps({"theme": "dark", "mcpServers": {"docs": {"command": "npx", "args": ["docs"]}}}, indent=2),
    "opencode": json.dumps({"$schema": "https://opencode.ai/config.json",
                            "mcp": {"docs": {"type": "local", "command": ["npx", "docs"]}}}, indent=2),
    "claude": json.dumps({"numStartups": 12, "projects": {"/x": {"allowedTools": []}},
                          "mcpServers": {"docs": {"type": "stdio", "command": "npx", "args": ["docs"]}}}, indent=2),
}


def read(agent: str, path: Path) -> dict[str, object]:
    text = path.read_text()
    return tomllib.loads(text) if agent == "codex" else dict(json.loads(text))


def servers(agent: str, data: dict[str, object]) -> dict[str, dict[str, object]]:
    key = {"codex": "mcp_servers", "opencode": "mcp"}.get(agent, "mcpServers")
    return data.get(key, {})  # type: ignore[return-value]


@pytest.mark.parametrize("agent", sorted(USER_FILES))
def test_install_merges_is_idempotent_and_uninstall_is_exact(agent: str, isolated_env: Path) -> None:
    path = config_path(agent, "user", home=isolated_env, cwd=isolated_env, env={})
    assert path == isolated_env / USER_FILES[agent]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(BEFORE[agent])
    command = server_command()

    dry = install_server(agent, path, command, dry_run=True)
    assert dry.changed and dry.action == "added" and ('"gitmem"' in dry.text or "[mcp_servers.gitmem]" in dry.text)
    assert path.read_text() == BEFORE[agent] and dry.backup is None

    first = install_server(agent, path, command)
    assert first.changed and first.backup == Path(f"{path}.gitmem-backup")
    data = read(agent, path)
    entry = servers(agent, data)["gitmem"]
    argv = entry["command"] if agent == "opencode" else [entry["command"], *entry["args"]]  # type: ignore[list-item]
    assert Path(str(argv[0])).name == "gitmem" and list(argv[1:]) == ["mcp"]  # type: ignore[index]
    assert "docs" in servers(agent, data)  # the other server is kept
    assert first.backup.read_text() == BEFORE[agent]
    if agent == "codex":
        assert "# my Codex settings" in path.read_text() and "# docs server" in path.read_text()
    if agent == "claude":
        assert data["numStartups"] == 12 and data["projects"] == {"/x": {"allowedTools": []}}

    installed = path.read_text()
    assert not install_server(agent, path, command).changed
    assert path.read_text() == installed

    removed = uninstall_server(agent, path)
    assert removed.changed and removed.action == "removed" and removed.restored
    assert path.read_text() == BEFORE[agent]  # the pre-install bytes, and the backup that held them is gone
    assert not first.backup.exists()
    assert not uninstall_server(agent, path).changed


def test_install_creates_the_file_and_uninstall_removes_only_our_table(isolated_env: Path) -> None:
    dry = run_cli("install", "gemini", "--mcp", "--dry-run")
    assert dry.code == 0 and dry.out.startswith("would add the gitmem MCP server in ")
    assert not (isolated_env / ".gemini").exists()
    result = run_cli("install", "gemini", "--mcp", "--json")
    assert result.code == 0
    report = json.loads(result.out)
    assert report["changed"] and report["action"] == "added" and report["backup"] is None
    path = isolated_env / ".gemini" / "settings.json"
    assert set(json.loads(path.read_text())["mcpServers"]) == {"gitmem"}
    assert run_cli("uninstall", "gemini", "--mcp").code == 0
    assert not path.exists()  # gitmem created it and it held nothing else


def test_project_scope_and_opencode_v2_layout(isolated_env: Path) -> None:
    project = isolated_env / "code"
    project.mkdir()
    assert run_cli("install", "claude", "--mcp", "--scope", "project", cwd=project).code == 0
    assert json.loads((project / ".mcp.json").read_text())["mcpServers"]["gitmem"]["type"] == "stdio"
    assert not (isolated_env / ".claude" / "settings.json").exists()  # --mcp leaves the hooks alone
    v2 = {"mcp": {"servers": {"docs": {"type": "local", "command": ["docs"]}}}}
    (project / "opencode.json").write_text(json.dumps(v2))
    assert run_cli("install", "opencode", "--mcp", "--scope", "project", cwd=project).code == 0
    written = json.loads((project / "opencode.json").read_text())["mcp"]["servers"]
    assert set(written) == {"docs", "gitmem"} and written["gitmem"]["type"] == "local"


def test_a_broken_file_is_left_alone_with_a_clear_error(isolated_env: Path) -> None:
    path = isolated_env / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text("model = \n")
    result = run_cli("install", "codex", "--mcp")
    assert result.code != 0 and "is not valid TOML" in result.err and "Traceback" not in result.err
    assert path.read_text() == "model = \n"
