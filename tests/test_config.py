"""Finding the memory repository and reading settings, with errors that name the file and key."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

from gitmem.config import ENV_FLAGS, SNAPSHOT_FILE, default_user_config_path, discover, load
from gitmem.errors import ConfigError


def _discover(home: Path, cwd: Path, env: dict[str, str] | None = None, repo: Path | None = None) -> Path:
    return discover(env=env or {}, cwd=cwd, home=home, repo=repo).repo


def test_repo_resolution_order(tmp_path: Path) -> None:
    home = tmp_path / "home"
    project = tmp_path / "code" / "app" / "src"
    project.mkdir(parents=True)
    assert _discover(home, project) == home / ".gitmem"
    user_cfg = home / ".config" / "gitmem" / "config.toml"
    user_cfg.parent.mkdir(parents=True)
    user_cfg.write_text('repo = "~/from-user-config"\n')
    assert _discover(home, project, env={}) == Path("~/from-user-config").expanduser()
    (tmp_path / "code" / ".memrepo").write_text('repo = "../shared-mem"\nproject = "app"\n')
    assert _discover(home, project) == (tmp_path / "shared-mem").resolve()
    assert _discover(home, project, env={"GITMEM_REPO": str(tmp_path / "env")}) == (tmp_path / "env").resolve()
    assert _discover(home, project, env={"GITMEM_REPO": "x"}, repo=tmp_path / "flag") == (tmp_path / "flag")
    assert discover(env={}, cwd=project, home=home).project == "app"


def test_repo_settings_travel_and_local_files_override(tmp_path: Path) -> None:
    repo = tmp_path / "mem"
    repo.mkdir()
    (repo / "gitmem.toml").write_text("schema_version = 1\n[ranking]\nw_sim = 0.6\n[recall]\nbudget = 1500\n")
    assert load(repo).ranking.w_sim == 0.6
    (tmp_path / ".memrepo").write_text(f'repo = "{repo}"\n[recall]\nbudget = 800\n')
    config = discover(env={}, cwd=tmp_path, home=tmp_path / "h")
    assert (config.ranking.w_sim, config.recall.budget) == (0.6, 800)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("repo = [1", "not valid TOML"),
        ("[ranking]\nw_sim = 'high'\n", "key 'ranking.w_sim' must be a number"),
        ("[ranking]\nweight = 1\n", "unknown key 'ranking.weight'"),
        ("colour = 'blue'\n", "unknown key 'colour'"),
        ("[sync]\nmode = 'yolo'\n", "use one of: direct, review"),
        ("[recall]\nbudget = -5\n", "must not be negative"),
        ("[redaction]\nextra_patterns = ['(unclosed']\n", "not a valid regular expression"),
    ],
)
def test_bad_config_names_file_key_and_fix(tmp_path: Path, content: str, message: str) -> None:
    bad = tmp_path / ".memrepo"
    bad.write_text(content)
    with pytest.raises(ConfigError) as info:
        discover(env={}, cwd=tmp_path, home=tmp_path / "h")
    assert str(bad) in str(info.value) and message in str(info.value)
    if "regular expression" in message:  # the hint names the file the pattern is in, not always gitmem.toml
        assert (info.value.hint or "").endswith("rewrite or remove it in .memrepo")


def test_a_newer_gitmems_setting_in_the_shared_file_is_ignored_and_named(tmp_path: Path) -> None:
    """The repository's gitmem.toml syncs between machines: a key a teammate's newer gitmem wrote stopped every
    command here, sync (which would bring the fix) and doctor included. It is ignored and named; a user's own
    file stays strict (a typo there is this user's)."""
    from tests.helpers import run_cli

    mem = tmp_path / "mem"
    assert run_cli("init", str(mem)).code == 0
    (mem / "gitmem.toml").write_text((mem / "gitmem.toml").read_text()
                                     + "\nfuture_switch = true\n[recall]\nnew_feature = 3\n[telemetry]\nmode = 'x'\n")
    config = load(mem)
    assert config.ignored == ("gitmem.toml: future_switch", "gitmem.toml: recall.new_feature", "gitmem.toml: telemetry")
    assert run_cli("--repo", str(mem), "remember", "Still works").code == 0
    doctor = run_cli("--repo", str(mem), "doctor")
    assert "unknown key 'recall.new_feature' ignored" in doctor.out and doctor.code == 0
    assert "# ignored, unknown to this version" in run_cli("--repo", str(mem), "config").out
    (tmp_path / ".memrepo").write_text(f'repo = "{mem}"\n[recall]\nnew_feature = 3\n')
    with pytest.raises(ConfigError, match=r"unknown key 'recall\.new_feature'"):
        discover(env={}, cwd=tmp_path, home=tmp_path / "h")


def test_every_environment_variable_the_code_names_is_in_the_one_table() -> None:
    """A ``GITMEM_*`` name anywhere in the package (Python or the shipped shell script) is declared in
    ``ENV_FLAGS`` and documented in docs/config.md, and the table names nothing the code no longer reads."""
    root = Path(__file__).resolve().parents[1]
    package = root / "gitmem"
    named: set[str] = set()
    for path in [*package.rglob("*.py"), package / "data" / "post-commit"]:
        if path.name != "config.py":
            named.update(re.findall(r"GITMEM_[A-Z0-9_]+", path.read_text(encoding="utf-8")))
    assert named, "the scan found no flag at all"
    assert sorted(named - set(ENV_FLAGS)) == [], "declare these in ENV_FLAGS (gitmem/config.py)"
    assert sorted(set(ENV_FLAGS) - named) == [], "nothing reads these any more: drop them from ENV_FLAGS"
    doc = (root / "docs" / "config.md").read_text()
    assert doc == runpy.run_path(str(root / "scripts" / "doc_tables.py"))["doc_text"]("config.md", doc), \
        "docs/config.md is stale: run python scripts/doc_tables.py"
    assert all(f"| `{name}` |" in doc for name in ENV_FLAGS)


def test_the_hooks_snapshot_gives_the_same_settings_until_a_file_changes(tmp_path: Path) -> None:
    """``discover_cached`` serves what ``discover`` resolved (tuples, paths and sources included) from its JSON
    snapshot, and reads the files again when one of them changes."""
    import os
    import time

    from gitmem.config import as_dict, discover_cached, from_dict

    home, repo = tmp_path / "home", tmp_path / "mem"
    repo.mkdir()
    (repo / "gitmem.toml").write_text("[recall]\nbudget = 1500\n[redaction]\nextra_patterns = ['acme-[0-9]+']\n")
    user = home / ".config" / "gitmem" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text('author = "Ada <ada@example.com>"\n')
    old = time.time() - 10  # files written well before the snapshot is taken (a same-tick change cannot hide)
    for path in (user, repo / "gitmem.toml"):
        os.utime(path, (old, old))
    env = {"GITMEM_REPO": str(repo)}
    snapshot = repo / SNAPSHOT_FILE
    full = discover(env=env, cwd=tmp_path, home=home)
    assert from_dict(as_dict(full)) == full
    assert discover_cached(env=env, cwd=tmp_path, home=home, snapshot=snapshot) == full
    assert snapshot.is_file()
    # served from the snapshot: a value planted in it shows (the files were not read again)
    planted = snapshot.read_text().replace('"budget":1500', '"budget":1234')
    snapshot.write_text(planted)
    assert discover_cached(env=env, cwd=tmp_path, home=home, snapshot=snapshot).recall.budget == 1234
    user.write_text('author = "Grace <grace@example.com>"\n')  # a changed file: read again, snapshot rewritten
    changed = discover_cached(env=env, cwd=tmp_path, home=home, snapshot=snapshot)
    assert changed.author == "Grace <grace@example.com>" and changed.recall.budget == 1500
    assert changed.redaction.extra_patterns == ("acme-[0-9]+",)
    assert changed == discover(env=env, cwd=tmp_path, home=home)


@pytest.mark.parametrize(("env", "expected"), [
    ({}, "/home/ada/.config/gitmem/config.toml"),
    ({"XDG_CONFIG_HOME": "/x/cfg"}, "/x/cfg/gitmem/config.toml"),
    ({"GITMEM_CONFIG": "~/my.toml"}, "/home/ada/my.toml"),
    ({"GITMEM_CONFIG": "/etc/g.toml", "XDG_CONFIG_HOME": "/x/cfg"}, "/etc/g.toml")])
def test_the_user_settings_file_is_where_the_variables_say(env: dict[str, str], expected: str,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/ada")  # what ~ expands to
    assert default_user_config_path(env, Path("/home/ada")) == Path(expected)
