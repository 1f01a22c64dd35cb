"""What ``gitmem install`` / ``uninstall`` do to the bytes of an agent's settings file, through the real CLI with an
isolated HOME: the file's own layout (indentation, comments, TOML inline tables and dotted keys) is kept, uninstall
gives back the pre-install bytes, the first backup is never overwritten, and a file gitmem created goes away again."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from gitmem.agents.claude.settings import install, is_gitmem_command
from tests.helpers import run_cli

BACKUP = ".gitmem-backup"
# (CLI arguments, file under HOME) of every installer that writes JSON
JSON_TARGETS = {
    "claude": (("claude",), ".claude/settings.json"),
    "claude-mcp": (("claude", "--mcp"), ".claude.json"),
    "gemini": (("gemini",), ".gemini/settings.json"),
    "opencode": (("opencode",), ".config/opencode/opencode.json"),
}
TAB_SETTINGS = ('{\n\t"model": "opus",\n\t"hooks": {"SessionStart": [{"hooks": [{"type": "command", '
                '"command": "echo hi"}]}]}\n}')


def cli(verb: str, *args: str) -> str:
    """Run ``gitmem <verb> <args>``; fail the test on a non-zero exit; return stdout."""
    result = run_cli(verb, *args)
    assert result.code == 0, result.err
    assert "internal error" not in result.err
    return result.out


def without_comments(text: str) -> object:
    """The data of a JSON-with-comments text: strings are kept whole, ``//`` and ``/* */`` outside them dropped."""
    return json.loads(re.sub(r'("(?:\\.|[^"\\])*")|//[^\n]*|/\*.*?\*/', lambda m: m.group(1) or "", text,
                             flags=re.DOTALL))


def gitmem_servers(data: object, key: str = "mcpServers") -> dict[str, object]:
    assert isinstance(data, dict)
    servers = data[key]
    assert isinstance(servers, dict)
    return servers


# -- bug 1: Codex's TOML in any layout --------------------------------------------------------------------------
@pytest.mark.parametrize("original", [
    'mcp_servers = { other = { command = "foo" } }\n',
    'mcp_servers = { other = { command = "foo" } }\nmodel = "o4"\n',
    'mcp_servers = {}\n',
    'mcp_servers.other.command = "foo"\nmodel = "o4"\n',
    '# servers\n[mcp_servers]\nother = { command = "foo" }  # inline\n',
    '[mcp_servers.other]\ncommand = "foo"\n\n[profiles.fast]\nmodel = "o4-mini"\n',
], ids=["inline", "inline-then-key", "empty-inline", "dotted-keys", "table-of-inline", "followed-by-a-table"])
def test_codex_servers_in_an_inline_table_or_dotted_keys_get_the_entry(original: str, isolated_env: Path) -> None:
    path = isolated_env / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text(original)
    cli("install", "codex")
    data = tomllib.loads(path.read_text())
    expected = tomllib.loads(original)
    expected.setdefault("mcp_servers", {})["gitmem"] = data["mcp_servers"]["gitmem"]
    assert data == expected  # every other key stays where it was (a dotted key's table swallowed "model")
    assert Path(data["mcp_servers"]["gitmem"]["command"]).name == "gitmem"
    assert data["mcp_servers"]["gitmem"]["args"] == ["mcp"]
    if "#" in original:
        assert "# servers" in path.read_text() and "# inline" in path.read_text()
    cli("uninstall", "codex")
    assert path.read_bytes() == original.encode()
    assert not Path(f"{path}{BACKUP}").exists()


def test_codex_an_inline_gitmem_entry_is_updated_in_place(isolated_env: Path) -> None:
    path = isolated_env / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text('[mcp_servers]\ngitmem = { command = "/old/bin/gitmem", args = ["mcp"] }\n'
                    'other = { command = "foo" }\n')
    cli("install", "codex")
    text = path.read_text()
    data = tomllib.loads(text)
    assert data["mcp_servers"]["other"] == {"command": "foo"} and data["mcp_servers"]["gitmem"]["args"] == ["mcp"]
    assert "/old/" not in text and "[mcp_servers.gitmem]" not in text and text.startswith("[mcp_servers]\ngitmem = {")
    cli("uninstall", "codex")
    assert path.read_text() == '[mcp_servers]\nother = { command = "foo" }\n'


# -- bug 2: the bytes of the file, its backup, and a file gitmem created ---------------------------------------
@pytest.mark.parametrize(("target", "original"), [
    ("claude", TAB_SETTINGS),
    ("claude", '{\n    "model": "opus",\n    "env": {"X": "1"}\n}\n'),
    ("claude", '{"model": "opus", "hooks": {}}'),
    ("claude-mcp", '{\n    "numStartups": 3,\n    "mcpServers": {\n        "docs": {"command": "npx"}\n    }\n}\n'),
    ("gemini", '{\n\t"theme": "dark"\n}\n'),
    ("opencode", '{\n    "$schema": "https://opencode.ai/config.json",\n    "mcp": {}\n}\n'),
    ("claude", "{}"),
], ids=["tabs", "four-spaces", "one-line", "claude-json", "gemini-tabs", "opencode-empty-table", "empty-object"])
def test_uninstall_gives_back_the_original_bytes(target: str, original: str, isolated_env: Path) -> None:
    args, name = JSON_TARGETS[target]
    path = isolated_env / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(original)
    backup = Path(f"{path}{BACKUP}")
    cli("install", *args)
    installed = path.read_text()
    assert backup.read_text() == original
    rest = iter(installed)
    assert all(char in rest for char in original)  # install only inserted bytes: every byte the user had stays
    indents = {re.match(r"[ \t]*", line).group() for line in installed.splitlines()}  # type: ignore[union-attr]
    if "\t" in original:
        assert indents <= {"\t" * n for n in range(12)}
    elif "    " in original:
        assert all(len(indent) % 4 == 0 and set(indent) <= {" "} for indent in indents)
    assert "nothing to change" in cli("install", *args)
    cli("uninstall", *args)
    assert path.read_bytes() == original.encode()
    assert not backup.exists()  # it held the same bytes as the file now does
    assert "nothing to change" in cli("uninstall", *args)


@pytest.mark.parametrize("target", [*JSON_TARGETS, "codex"])
def test_a_file_gitmem_created_is_removed_by_uninstall(target: str, isolated_env: Path) -> None:
    args, name = JSON_TARGETS.get(target, (("codex",), ".codex/config.toml"))
    path = isolated_env / name
    cli("install", *args)
    assert path.is_file() and not Path(f"{path}{BACKUP}").exists()
    cli("uninstall", *args)
    assert not path.exists() and not Path(f"{path}{BACKUP}").exists()


def test_the_first_backup_is_never_overwritten(isolated_env: Path) -> None:
    path = isolated_env / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(TAB_SETTINGS)
    backup = Path(f"{path}{BACKUP}")
    assert install(path, "/old/bin/gitmem-hook").backup == backup
    moved = install(path, "/new/bin/gitmem-hook")  # a new virtualenv: the commands change
    assert moved.changed and moved.backup is None and backup.read_text() == TAB_SETTINGS
    # the user adds a setting while gitmem is installed: uninstall takes out gitmem's entries and nothing else
    path.write_text(path.read_text().replace("{\n", '{\n\t"theme": "dark",\n', 1))
    cli("uninstall", "claude")
    assert path.read_text() == TAB_SETTINGS.replace("{\n", '{\n\t"theme": "dark",\n', 1)
    assert backup.read_text() == TAB_SETTINGS


def test_a_setting_added_next_to_gitmems_entries_is_kept(isolated_env: Path) -> None:
    path = isolated_env / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(TAB_SETTINGS)
    cli("install", "claude")
    data = json.loads(path.read_text())
    data["hooks"]["Stop"][0]["hooks"].append({"type": "command", "command": "say done"})
    path.write_text(json.dumps(data, indent="\t"))
    cli("uninstall", "claude")
    left = json.loads(path.read_text())
    assert left["hooks"]["Stop"] == [{"hooks": [{"type": "command", "command": "say done"}]}]
    assert not any(is_gitmem_command(h["command"]) for groups in left["hooks"].values() for g in groups
                   for h in g["hooks"])


# -- bug 3: JSON with comments, and OpenCode's opencode.jsonc --------------------------------------------------
GEMINI_WITH_COMMENTS = ('{\n  // comment\n  "theme": "dark", /* the dark one */\n'
                        '  "docs": "https://example.com/a//b" // not a comment inside the string\n}\n')


def test_gemini_settings_with_comments_keep_them(isolated_env: Path) -> None:
    path = isolated_env / ".gemini" / "settings.json"
    path.parent.mkdir()
    path.write_text(GEMINI_WITH_COMMENTS)
    cli("install", "gemini")
    text = path.read_text()
    assert "  // comment\n" in text and "/* the dark one */" in text and "// not a comment inside the string" in text
    data = without_comments(text)
    assert isinstance(data, dict) and data["theme"] == "dark" and data["docs"] == "https://example.com/a//b"
    assert set(gitmem_servers(data)) == {"gitmem"}
    cli("uninstall", "gemini")
    assert path.read_text() == GEMINI_WITH_COMMENTS


def test_a_trailing_comma_is_read_where_the_agent_reads_it(isolated_env: Path) -> None:
    gemini = isolated_env / ".gemini" / "settings.json"
    gemini.parent.mkdir()
    gemini.write_text('{\n  "theme": "dark",\n}\n')  # Gemini CLI's JSON.parse refuses it too
    result = run_cli("install", "gemini")
    assert result.code != 0 and "not valid JSON" in result.err and len(result.err.strip().splitlines()) == 1
    assert gemini.read_text() == '{\n  "theme": "dark",\n}\n'
    opencode = isolated_env / ".config" / "opencode" / "opencode.json"
    opencode.parent.mkdir(parents=True)
    opencode.write_text('{\n  "theme": "dark",\n}\n')  # OpenCode's jsonc parser allows it
    cli("install", "opencode")
    assert without_comments(re.sub(r",(\s*[}\]])", r"\1", opencode.read_text()))["mcp"]["gitmem"]  # type: ignore[index]
    cli("uninstall", "opencode")
    assert opencode.read_text() == '{\n  "theme": "dark",\n}\n'


@pytest.mark.parametrize("scope", ["user", "project"])
def test_opencode_writes_the_jsonc_file_the_user_has(scope: str, isolated_env: Path) -> None:
    folder = isolated_env / ".config" / "opencode" if scope == "user" else isolated_env
    folder.mkdir(parents=True, exist_ok=True)
    original = '{\n  // my OpenCode\n  "$schema": "https://opencode.ai/config.json"\n}\n'
    (folder / "opencode.jsonc").write_text(original)
    out = cli("install", "opencode", "--scope", scope)
    assert "opencode.jsonc" in out and not (folder / "opencode.json").exists()
    written = without_comments((folder / "opencode.jsonc").read_text())
    assert gitmem_servers(written, "mcp")["gitmem"]["type"] == "local"  # type: ignore[index]
    cli("uninstall", "opencode", "--scope", scope)
    assert (folder / "opencode.jsonc").read_text() == original and not (folder / "opencode.json").exists()


def test_a_comment_gitmem_cannot_keep_is_a_one_line_refusal(isolated_env: Path) -> None:
    path = isolated_env / ".gemini" / "settings.json"
    path.parent.mkdir()
    original = '{\n  "mcpServers": {\n    "gitmem": [1, /* what is this */ 2]\n  }\n}\n'
    path.write_text(original)
    result = run_cli("install", "gemini")
    assert result.code not in (0, 70) and "Traceback" not in result.err
    assert len(result.err.strip().splitlines()) == 1
    assert "comments" in result.err and '"gitmem"' in result.err and '"mcp"' in result.err
    assert path.read_text() == original
