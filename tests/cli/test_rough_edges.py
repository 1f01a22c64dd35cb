"""Rough edges users met in the CLI, each through the installed ``gitmem`` command on real repositories: a missing
--cwd, init with another remote, empty and secret notepad notes, doctor's wording, compact's dry run, a write
waiting for the lock."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers import PROJECT, assert_clean, bm25_only, code_repo, git, hook, hook_env, payload, run_cli

#: a GitHub token the redaction rules know (built here so no scanner takes this file for a leak)
TOKEN = "ghp_" + "1234567890abcdefghijklmnopqrstuvwxyz12"


def _mem(tmp_path: Path) -> Path:
    path = tmp_path / "mem"
    assert run_cli("init", str(path)).code == 0
    return path


def test_recall_refuses_a_cwd_that_does_not_exist(tmp_path: Path) -> None:
    mem = _mem(tmp_path)
    result = run_cli("--repo", str(mem), "recall", "--cwd", str(tmp_path / "nonexistent"))
    assert result.code != 0 and result.out == ""
    assert len(result.err.strip().splitlines()) == 1 and "does not exist" in result.err
    assert "no memories for project" not in result.err


def test_a_repository_path_that_holds_something_else_gets_advice_that_works(tmp_path: Path) -> None:
    """A file, or a folder of other things, where the memory repository should be: the CLI and the hooks said
    "create it with: gitmem init PATH", which then refused the path."""
    (tmp_path / "file").write_text("hi\n", "utf-8")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "notes.txt").write_text("mine\n", "utf-8")
    for path, said in ((tmp_path / "file", "is a file, not a memory repository"),
                       (tmp_path / "full", "holds other files and no .git")):
        listed = run_cli("--repo", str(path), "list")
        assert listed.code == 1 and said in listed.err and "gitmem init " + str(path) not in listed.err
        started = hook("session-start", payload("SessionStart", tmp_path), hook_env(path), cwd=tmp_path)
        assert started.returncode == 0 and said in started.stderr
        assert run_cli("init", str(path)).code != 0  # the advice it replaced
    missing = run_cli("--repo", str(tmp_path / "new"), "list")
    assert f"create it with: gitmem init {tmp_path / 'new'}" in missing.err
    assert run_cli("init", str(tmp_path / "new")).code == 0


def test_ids_importance_and_projects_given_by_hand_get_the_right_message(tmp_path: Path) -> None:
    mem = _mem(tmp_path)
    for args in (("show", ""), ("forget", "", "--reason", "gone")):  # a lookup cannot leave its id out
        looked = run_cli("--repo", str(mem), *args)
        assert looked.code != 0 and "'id' is empty (give the id of a memory; gitmem list shows them)" in looked.err
    (tmp_path / "bool.jsonl").write_text('{"text": "t9", "importance": true}\n', "utf-8")
    imported = run_cli("--repo", str(mem), "import", str(tmp_path / "bool.jsonl"))
    assert imported.code != 0 and "importance True is not allowed" in imported.err  # it said "None"
    (tmp_path / "up.jsonl").write_text('{"text": "t9", "project": "../x"}\n', "utf-8")
    imported = run_cli("--repo", str(mem), "import", str(tmp_path / "up.jsonl"))
    assert imported.code != 0 and "contains a path separator" in imported.err
    made = run_cli("--repo", str(mem), "remember", "Orders live in PostgreSQL", "--json")
    moved = run_cli("--repo", str(mem), "move", json.loads(made.out)["id"], "--project", "bad/x")
    assert moved.code != 0 and "contains a path separator" in moved.err  # move took it as a project
    assert git(mem, "ls-files", "memories").strip().startswith("memories/global/")
    # a text that starts with a dash reads as an option: the error says how to pass it, and that way works
    dashed = run_cli("--repo", str(mem), "remember", "-x is a flag we never pass")
    assert dashed.code == 2 and "gitmem remember -- '-x …'" in dashed.err
    assert run_cli("--repo", str(mem), "remember", "--", "-x is a flag we never pass").code == 0
    assert "(see: gitmem list --help)" in run_cli("--repo", str(mem), "list", "--bogus").err  # no text to pass
    assert_clean(mem)


def test_init_with_another_remote_says_how_to_change_it(tmp_path: Path) -> None:
    mem = _mem(tmp_path)
    first, second = tmp_path / "first.git", tmp_path / "second.git"
    for bare in (first, second):
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    # without a remote, status's hint is a command that works as it is printed, URL aside
    hint = run_cli("--repo", str(mem), "status").out.splitlines()[0]
    assert hint.startswith("no remote (add one with: gitmem init ")
    command = hint.split("add one with: ")[1].rstrip(")").split()
    assert command[:3] == ["gitmem", "init", str(mem)] and command[-1] == "URL"
    added = run_cli(*command[1:-1], str(first))
    assert added.code == 0 and str(first) in added.out
    assert run_cli("--repo", str(mem), "status").out.startswith(f"remote {first} (main)")
    # the same remote again changes nothing; another one is refused with the command that changes it
    assert run_cli("init", str(mem), "--remote", str(first)).code == 0
    other = run_cli("init", str(mem), "--remote", str(second))
    assert other.code != 0 and len(other.err.strip().splitlines()) == 1
    assert f"already has the remote {first}" in other.err
    change = other.err.split("to change it: ")[1].rstrip(")\n")
    assert change == f"git -C {mem} remote set-url origin {second}"
    assert git(mem, "remote", "get-url", "origin").strip() == str(first)
    subprocess.run(change.split(), check=True)
    assert run_cli("init", str(mem), "--remote", str(second)).code == 0
    assert_clean(mem)


def test_notepad_refuses_a_note_it_would_cut(tmp_path: Path) -> None:
    """A 1,500-character note was cut to 500 without a word."""
    mem = _mem(tmp_path)
    refused = run_cli("--repo", str(mem), "notepad", "add", "word " * 300)
    assert refused.code != 0 and "1499 characters" in refused.err and "at most 500" in refused.err
    assert len(refused.err.strip().splitlines()) == 1
    assert json.loads(run_cli("--repo", str(mem), "notepad", "show", "--json").out)["working"] == []
    kept = "step " * 99 + "end"
    assert run_cli("--repo", str(mem), "notepad", "add", kept).code == 0
    assert json.loads(run_cli("--repo", str(mem), "notepad", "show", "--json").out)["working"][0]["text"] == kept


def test_notepad_refuses_empty_notes_and_redacts_secrets(tmp_path: Path) -> None:
    mem = _mem(tmp_path)
    (mem / "gitmem.toml").write_text((mem / "gitmem.toml").read_text("utf-8")
                                     + "\n[redaction]\nextra_patterns = ['ACME-[0-9]{6}']\n", "utf-8")
    git(mem, "commit", "-qam", "settings: a custom secret")
    for empty in ("", "   \n"):
        refused = run_cli("--repo", str(mem), "notepad", "add", empty)
        assert refused.code != 0 and "empty" in refused.err and len(refused.err.strip().splitlines()) == 1
    assert not (mem / "local" / "notepad").exists() or not any((mem / "local" / "notepad").iterdir())
    added = run_cli("--repo", str(mem), "notepad", "add", "--section", "priority",
                    f"token={TOKEN} and ticket ACME-123456")
    assert added.code == 0 and "added to priority" in added.out
    assert "github-token" in added.err and "custom" in added.err
    stored = "".join(p.read_text("utf-8") for p in (mem / "local" / "notepad").glob("*.json"))
    assert TOKEN not in stored and "ACME-123456" not in stored and "[REDACTED:github-token]" in stored
    shown = run_cli("--repo", str(mem), "notepad", "show", "--json")
    assert json.loads(shown.out)["priority"][0]["text"] == "token=[REDACTED:github-token] and ticket " \
                                                           "[REDACTED:custom]"
    # what the router puts on the notepad is redacted too
    routed = run_cli("--repo", str(mem), "remember", "--auto", f"Remind me to rotate {TOKEN} tomorrow.")
    assert routed.code == 0 and routed.out.startswith("notepad:")
    stored = "".join(p.read_text("utf-8") for p in (mem / "local" / "notepad").glob("*.json"))
    assert TOKEN not in stored


def test_doctor_names_each_path_once_and_points_nowhere_else(tmp_path: Path) -> None:
    mem = _mem(tmp_path)
    folder = mem / "memories" / "global"
    (folder / "broken1.md").write_text("---\nid: broken1\nimportance: high\n---\ntext\n", "utf-8")
    (folder / "broken2.md").write_text("---\nid: broken2\n  bad: [\n---\ntext\n", "utf-8")
    doctor = run_cli("--repo", str(mem), "doctor")
    assert doctor.code == 1
    lines = {name: [line for line in doctor.out.splitlines() if name in line] for name in ("broken1", "broken2")}
    assert lines["broken1"] == ["error   memories/global/broken1.md: importance 'high' is not allowed (use a whole "
                                "number from 1 to 5)"]
    assert len(lines["broken2"]) == 1 and lines["broken2"][0].count("memories/global/broken2.md") == 1
    assert "broken YAML frontmatter" in lines["broken2"][0] and "gitmem doctor" not in doctor.out
    for issue in json.loads(run_cli("--repo", str(mem), "doctor", "--json").out):
        assert not issue["message"].startswith(issue["path"]) and "gitmem doctor" not in issue["message"]
    listed = run_cli("--repo", str(mem), "list")
    warnings = [line for line in listed.err.splitlines() if line.startswith("gitmem: warning:")]
    assert len(warnings) == 2 and all(line.count("gitmem doctor") == 1 for line in warnings)
    # run in the home folder, where the project's Claude settings file is the user's: that file is named once
    home = Path(os.environ["HOME"])
    assert run_cli("install", "claude", cwd=home).code == 0
    installed = [line for line in run_cli("--repo", str(mem), "doctor", cwd=home).out.splitlines()
                 if "gitmem hooks installed" in line]
    assert installed == [f"ok      {home / '.claude' / 'settings.json'}: " + installed[0].split(": ", 1)[1]]


def test_compact_dry_run_shows_the_ids_the_commit_uses(tmp_path: Path) -> None:
    mem = _mem(tmp_path)
    for n in range(3):
        assert run_cli("--repo", str(mem), "remember", f"Deploy fact number {n}", "--tags", "deploy").code == 0
    planned = [json.loads(run_cli("--repo", str(mem), "compact", "--min-size", "2", "--dry-run", "--json").out)
               for _ in range(2)]
    assert planned[0] == planned[1] and planned[0]["commit"] == ""
    (summary,) = [c["summary"] for c in planned[0]["clusters"]]
    done = run_cli("--repo", str(mem), "compact", "--min-size", "2")
    assert done.code == 0 and f"-> {summary}" in done.out
    assert json.loads(run_cli("--repo", str(mem), "show", summary, "--json").out)["id"] == summary
    subjects = git(mem, "log", "--format=%s").splitlines()
    assert "compact: 1 cluster into a summary" in subjects
    assert_clean(mem)


HOLD = ("import sys, time\nfrom gitmem.git.store import GitStore\n"
        "with GitStore(sys.argv[1]).locked():\n    print('held', flush=True)\n    time.sleep(float(sys.argv[2]))\n")


def _hold_lock(mem: Path, seconds: float) -> subprocess.Popen[str]:
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(mem), str(seconds)], stdout=subprocess.PIPE,
                              text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def test_a_write_that_waits_for_the_lock_says_so_once(tmp_path: Path) -> None:
    mem = _mem(tmp_path)
    holder = _hold_lock(mem, 2.0)
    started = time.monotonic()
    result = run_cli("--repo", str(mem), "remember", "Waited for the lock", "--scope", "global")
    holder.wait()
    assert result.code == 0 and time.monotonic() - started >= 1.0
    waiting = [line for line in result.err.splitlines() if "waiting" in line]
    assert waiting == [f"gitmem: waiting for another gitmem process (pid {holder.pid}) holding the lock on {mem}…"]
    # no wait, no line
    quick = run_cli("--repo", str(mem), "remember", "No wait", "--scope", "global")
    assert quick.code == 0 and "waiting" not in quick.err


def test_a_hook_that_waits_for_the_lock_stays_silent(tmp_path: Path) -> None:
    mem = _mem(tmp_path)
    code = code_repo(tmp_path)
    env = hook_env(mem)
    hook("session-start", payload("SessionStart", code), env, cwd=code)
    hook("user-prompt-submit", payload("UserPromptSubmit", code, prompt="Always use uv."), env, cwd=code)
    holder = _hold_lock(mem, 1.3)
    result = hook("stop", payload("Stop", code), env, cwd=code)
    holder.wait()
    assert result.returncode == 0 and result.stderr == ""
    assert "Gitmem-Session: sess-1" in git(mem, "log", "--format=%B")


def test_resolve_and_status_wording(tmp_path: Path) -> None:
    mem = _mem(tmp_path)
    memory_id = run_cli("--repo", str(mem), "remember", "Nothing to settle", "--scope", "global").out.strip()
    refused = run_cli("--repo", str(mem), "resolve", memory_id)
    assert refused.code == 2 and "not conflicted" in refused.err and "))" not in refused.err


def test_a_group_without_a_subcommand_prints_its_help(tmp_path: Path) -> None:
    """``gitmem``, ``gitmem wiki``, ``gitmem writer character``: the whole usage came wrapped as one error line."""
    for args in ((), ("wiki",), ("model",), ("writer", "character")):
        result = run_cli(*args)
        asked = run_cli(*args, "--help")
        assert result.code == 0 and result.err == "" and "error" not in result.out
        assert result.out == asked.out and result.out.startswith(f"Usage: {' '.join(('gitmem', *args))} [OPTIONS]")


def test_recall_says_when_nothing_fit_the_budget(tmp_path: Path) -> None:
    """35 memories, 5 of them about the query: a 10-token budget said "no memories for project …"."""
    mem = _mem(tmp_path)
    bm25_only(mem)
    shop = code_repo(tmp_path)
    for n in range(30):
        assert run_cli("--repo", str(mem), "remember", f"The subsystem number {n} keeps its own schema",
                       cwd=shop).code == 0
    for n in range(5):
        assert run_cli("--repo", str(mem), "remember", f"Stripe webhooks rule {n}: verify the signature",
                       cwd=shop).code == 0
    args = ("--repo", str(mem), "recall", "--query", "stripe webhooks", "--budget", "10")
    assert json.loads(run_cli(*args, "--json", cwd=shop).out)["left_out"] == 5
    tight = run_cli(*args, cwd=shop)
    assert tight.code == 0 and tight.out == "" and "no memories" not in tight.err
    assert f"nothing fit the 10-token budget: 5 memories for project {PROJECT} left out (raise it with --budget " \
           "2000)" in tight.err
    assert "Stripe webhooks rule" in run_cli(*args[:-1], "2000", cwd=shop).out  # the advice works
    nothing = run_cli("--repo", str(mem), "recall", "--query", "kubernetes", "--budget", "10", cwd=shop)
    assert f"no memories for project {PROJECT} (query: 'kubernetes')" in nothing.err


def test_wiki_log_of_a_page_that_never_existed_is_an_error(tmp_path: Path) -> None:
    mem = _mem(tmp_path)
    missing = run_cli("--repo", str(mem), "wiki", "log", "nope", "--project", "shop")
    assert missing.code == 1 and missing.out == "" and len(missing.err.strip().splitlines()) == 1
    assert "no wiki page 'nope' in the history of project shop" in missing.err
    assert "gitmem wiki list --project shop" in missing.err
    # a deleted page keeps its history
    assert run_cli("--repo", str(mem), "wiki", "add", "--title", "Deploy notes", "--project", "shop",
                   "Deploy with make ship.").code == 0
    assert run_cli("--repo", str(mem), "wiki", "delete", "deploy-notes", "--reason", "gone", "--project",
                   "shop").code == 0
    history = run_cli("--repo", str(mem), "wiki", "log", "deploy-notes", "--project", "shop")
    assert history.code == 0 and len(history.out.splitlines()) == 2 and "wiki: delete Deploy notes" in history.out
    assert run_cli("--repo", str(mem), "wiki", "log", "--project", "shop").code == 0  # the whole wiki
    assert_clean(mem)


def test_move_model_remove_and_a_dry_run_supersede_say_what_happened(tmp_path: Path) -> None:
    mem = _mem(tmp_path)
    made = json.loads(run_cli("--repo", str(mem), "remember", "We decided to use PostgreSQL instead of MySQL.",
                              "--json").out)["id"]
    both = run_cli("--repo", str(mem), "move", made, "--project", "shop", "--global")
    assert both.code == 2 and "--project and --global cannot be combined" in both.err
    assert "say where" in run_cli("--repo", str(mem), "move", made).err  # neither: as before
    packaged = run_cli("--repo", str(mem), "model", "remove", "minilm-l6-int8")
    assert packaged.code == 1 and "is not installed" not in packaged.err
    assert "model 'minilm-l6-int8' is packaged with gitmem and cannot be removed" in packaged.err
    assert "is not installed" in run_cli("--repo", str(mem), "model", "remove", "nosuch").err
    swapped = ("--repo", str(mem), "remember", "--auto", "We decided to use MySQL instead of PostgreSQL.")
    dry = run_cli(*swapped, "--dry-run", "--supersede")
    assert dry.code == 0 and "--supersede" not in dry.out.replace("without --dry-run", "")
    assert f"dry run, nothing stored: without --dry-run it would be stored as a memory and {made} deprecated" \
           in dry.out
    assert "store it anyway with --supersede" in run_cli(*swapped, "--dry-run").out  # not given: the advice
    assert not json.loads(run_cli("--repo", str(mem), "show", made, "--json").out)["deprecated"]
    # --supersede given where it replaces nothing (a project note): not told to pass it
    notes = ("--repo", str(mem), "remember", "--auto", "--project", "shop")
    assert run_cli(*notes, "Run the tests with pytest -q from the repo root.").code == 0
    kept = run_cli(*notes, "Run the tests with pytest -x from the repo root.", "--supersede")
    assert "nothing stored (--supersede replaces only a stored memory" in kept.out
    assert "store it anyway" not in kept.out
    assert_clean(mem)


def test_capture_of_a_file_that_is_no_transcript_says_so(tmp_path: Path) -> None:
    """A file of anything else was read as a transcript with no message: "nothing to capture", exit 0."""
    mem = _mem(tmp_path)
    garbage = tmp_path / "notes.jsonl"
    garbage.write_text("this is not json\nnor this\n", "utf-8")
    refused = run_cli("--repo", str(mem), "capture", "--transcript", str(garbage))
    assert refused.code != 0 and "is not a Claude Code transcript" in refused.err
    assert len(refused.err.strip().splitlines()) == 1
    real = tmp_path / "t.jsonl"
    real.write_text(json.dumps({"type": "user", "message": {"role": "user", "content": "We decided to use "
                                                                                       "PostgreSQL 16."}}) + "\n")
    assert run_cli("--repo", str(mem), "capture", "--transcript", str(real), "--dry-run").code == 0
