"""Knowledge capture from real transcripts and the prompt hook's corrections: rules, dedup, merge, supersede."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gitmem.learn.capture import capture, classify, contradicts, extract, sentences, similarity, transcript_texts
from gitmem.store.memories import MemoryRepo
from tests.helpers import assert_clean, git, run_cli

PROJECT = "github.com-acme-shop"


def user(content: Any, **extra: Any) -> dict[str, Any]:
    return {"type": "user", "sessionId": "s1", "message": {"role": "user", "content": content}, **extra}


def assistant(text: str) -> dict[str, Any]:
    return {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": text}]}}


def write_transcript(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records) + "not json\n", "utf-8")
    return path


def test_acceptance_transcript_yields_a_decision_and_a_constraint(repo_path: Path, tmp_path: Path) -> None:
    transcript = write_transcript(tmp_path / "t.jsonl", [
        user("我们决定用 PostgreSQL 而不是 MySQL"),
        assistant("Understood. We must never use MySQL again, I decided."),
        user([{"type": "text", "text": "Never push directly to main"}]),
        user([{"type": "tool_result", "tool_use_id": "x", "content": "We decided to rewrite everything"}]),
        user("thanks!"),
        user("what time is it?"),
    ])
    env = {"GITMEM_REPO": str(repo_path)}
    out = run_cli("capture", "--transcript", str(transcript), "--session", "s1", "--project", PROJECT, "--json",
                  env=env)
    assert out.code == 0, out.err
    added = json.loads(out.out)["added"]
    assert [(a["category"], a["text"]) for a in added] == [
        ("decision", "我们决定用 PostgreSQL 而不是 MySQL。"), ("constraint", "Never push directly to main.")]
    listed = json.loads(run_cli("list", "--json", env=env).out)
    assert {m["category"] for m in listed} == {"decision", "constraint"}
    assert all(m["source"] == "capture" and m["source_ref"] == "s1" and m["project"] == PROJECT for m in listed)
    body = git(repo_path, "log", "-1", "--format=%B")
    assert "Gitmem-Op: extract" in body and "Gitmem-Session: s1" in body
    # the same transcript again: already read, nothing to do; the same sentences in another transcript: duplicates
    count = git(repo_path, "rev-list", "--count", "HEAD")
    again = json.loads(run_cli("capture", "--transcript", str(transcript), "--project", PROJECT, "--json",
                               env=env).out)
    assert again["added"] == again["skipped"] == []
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(transcript.read_bytes())
    dup = json.loads(run_cli("capture", "--transcript", str(copy), "--project", PROJECT, "--json", env=env).out)
    assert dup["added"] == [] and len(dup["skipped"]) == 2
    assert git(repo_path, "rev-list", "--count", "HEAD") == count
    # the session goes on: only the new lines are read
    with transcript.open("a") as fh:
        fh.write(json.dumps(user("We decided to use ruff instead of flake8.")) + "\n")
    more = json.loads(run_cli("capture", "--transcript", str(transcript), "--project", PROJECT, "--json",
                              env=env).out)
    assert [a["text"] for a in more["added"]] == ["Use ruff instead of flake8."] and more["skipped"] == []
    assert_clean(repo_path)


def test_transcript_reader_takes_only_the_users_text(tmp_path: Path) -> None:
    path = write_transcript(tmp_path / "t.jsonl", [
        user("one"), user("meta", isMeta=True), user("<command-name>/clear</command-name>"),
        user([{"type": "text", "text": "two <system-reminder>never do X</system-reminder>"},
              {"type": "image", "source": {}}]),
        assistant("three"), {"type": "summary", "summary": "four"},
    ])
    assert [t.strip() for t in transcript_texts(path)] == ["one", "two"]


@pytest.mark.parametrize(("sentence", "category"), [
    ("We decided to use ruff instead of flake8.", "decision"),
    ("我们改用 pnpm 管理依赖", "decision"),
    ("I prefer small pull requests with one change each", "preference"),
    ("别用 print 调试，用 logging", "preference"),
    # 比较/一般 between 我 and 喜欢/习惯 hid the preference
    ("我比较喜欢把 SQL 写在 repository 层，不要散落在 service 里", "preference"),
    ("我们一般习惯用 ruff 做格式化", "preference"),
    ("All API responses must stay under 200 ms", "constraint"),
    ("生产环境的配置不能提交到仓库", "constraint"),
    ("No, the port should be 8080 instead", "correction"),
    ("不对，应该是 UTC 时间", "correction"),
    ("No, the port is 8080, not 9090.", "correction"),
    # what went wrong this time, for the agent to fix: a task, not a standing correction
    ("No, that's wrong, the offset is off by one on page 2.", None),
    ("不对，第二页还是少了一条数据，你再看看 items 函数", None),
    ("That's wrong, the build fails again, please fix it.", None),
    ("thanks!", None), ("what time is it?", None), ("Can you fix the failing test?", None),
    ("I like it", None), ("for now just skip that check", None), ("好的", None), ("你能帮我看看这个报错吗", None),
    ("Please rename the variable", None), ("You must be tired", None),
])
def test_rules_classify(sentence: str, category: str | None) -> None:
    assert classify(sentence) == category


def test_decisions_become_actionable_statements() -> None:
    assert [c.text for c in extract("OK, we decided to use PostgreSQL instead of MySQL. Thanks!")] == [
        "Use PostgreSQL instead of MySQL."]


def test_similarity_and_contradiction() -> None:
    assert similarity("Never push directly to main", "never push directly to main!") == pytest.approx(1.0)
    assert 0.8 <= similarity("Never push directly to the main branch", "Never push directly to main.") <= 0.9
    assert similarity("用 PostgreSQL", "PostgreSQL 用") > 0.5
    assert contradicts("Don't use tabs for indentation", "I prefer tabs for indentation")
    assert contradicts("We switched to MySQL instead of PostgreSQL.", "Use PostgreSQL instead of MySQL.")
    assert not contradicts("Use PostgreSQL instead of MySQL for the shop", "Use PostgreSQL instead of MySQL.")


def test_merge_refreshes_and_keeps_the_higher_importance(repo: MemoryRepo) -> None:
    old = repo.remember("Never push directly to the main branch", category="constraint", importance=2,
                        project=PROJECT)
    result = capture(repo, texts=["Never push directly to main."], project=PROJECT)
    assert result.added == [] and [m.id for m in result.merged] == [old.id]
    now = repo.get(old.id)
    assert now.importance == 4 and now.updated >= old.updated and now.text == old.text
    assert_clean(repo.path)


def test_contradiction_supersedes_the_older_memory(repo: MemoryRepo) -> None:
    old = repo.remember("Use PostgreSQL instead of MySQL.", category="decision", importance=4, project=PROJECT)
    count = git(repo.path, "rev-list", "--count", "HEAD")
    result = capture(repo, texts=["We switched to MySQL instead of PostgreSQL."], project=PROJECT, session="s9")
    assert len(result.added) == 1
    new = result.added[0]
    gone = repo.get(old.id)
    assert gone.deprecated and gone.superseded_by == new.id
    # one commit holds the new memory and the deprecation of the old one
    assert int(git(repo.path, "rev-list", "--count", "HEAD")) == int(count) + 1
    log = git(repo.path, "log", "-1", "--format=%B")
    assert "Gitmem-Op: extract" in log and f"Gitmem-Id: {new.id}" in log and f"Gitmem-Id: {old.id}" in log
    assert f"superseded {old.id} by {new.id}" in log
    assert [e.op for e in repo.log(old.id)][:1] == ["extract"]
    assert_clean(repo.path)


def test_prompt_hook_corrections_become_correction_memories(repo_path: Path, repo: MemoryRepo) -> None:
    code = repo_path.parent / "shop"
    code.mkdir()
    payload = {"session_id": "s5", "cwd": str(code), "hook_event_name": "UserPromptSubmit",
               "prompt": "No, that's wrong: the API base URL should be /api/v2 instead of /api/v1."}
    proc = subprocess.run([sys.executable, "-m", "gitmem.agents.claude.entry", "user-prompt-submit"],
                          input=json.dumps(payload).encode(), env={**os.environ, "GITMEM_REPO": str(repo_path)},
                          capture_output=True, timeout=60)
    assert proc.returncode == 0
    assert (repo_path / "local" / "candidates.jsonl").is_file()
    result = capture(repo)
    assert [(m.category, m.importance, m.source_ref) for m in result.added] == [("correction", 4, "s5")]
    assert "/api/v2" in result.added[0].text
    assert capture(repo).added == []  # the queue was consumed
    assert_clean(repo_path)


def test_a_queued_prompt_is_read_as_a_message_is(repo_path: Path, repo: MemoryRepo) -> None:
    """The prompt hook queues a whole prompt that corrects the agent; capture took it whole as an importance-4
    rule ("the offset is off by one on page 2…" among every later session's Essentials), and from a prompt holding a
    correction and a decision the whole-prompt memory superseded the decision stored beside it."""
    code = repo_path.parent / "shop"
    code.mkdir()
    prompts = ["No, that's wrong, the offset is off by one on page 2, the first item repeats. Please fix it.",
               "不对，第二页还是少了一条数据，你再看看 items 函数",
               "No, that's wrong: never run pip here, uv manages the venv. We decided to use PostgreSQL instead of "
               "SQLite for production."]
    for prompt in prompts:
        payload = {"session_id": "s6", "cwd": str(code), "hook_event_name": "UserPromptSubmit", "prompt": prompt}
        proc = subprocess.run([sys.executable, "-m", "gitmem.agents.claude.entry", "user-prompt-submit"],
                              input=json.dumps(payload).encode(), env={**os.environ, "GITMEM_REPO": str(repo_path)},
                              capture_output=True, timeout=60)
        assert proc.returncode == 0
    result = capture(repo)
    assert sorted((m.category, m.text) for m in result.added) == [
        ("correction", "Never run pip here, uv manages the venv."),
        ("decision", "Use PostgreSQL instead of SQLite for production.")]
    assert result.superseded == [] and all(not m.deprecated for m in repo.list())
    assert_clean(repo_path)


def test_dry_run_writes_nothing(repo: MemoryRepo) -> None:
    head = git(repo.path, "rev-parse", "HEAD")
    result = capture(repo, texts=["Never commit secrets to the repository."], dry_run=True)
    assert len(result.added) == 1
    assert git(repo.path, "rev-parse", "HEAD") == head and repo.list() == []


# -- refinement by the optional model, with a script standing in for it -----------------------------------
REFINER = """import json, sys, time
prompt = sys.stdin.read()
mode = sys.argv[1]
if mode == "valid":
    # candidate 0 rewritten and re-rated, candidate 1 dropped as noise, candidate 2 not mentioned (kept as is)
    print(json.dumps({"memories": [
        {"i": 0, "keep": True, "text": "Use PostgreSQL, not MySQL, for every service.", "category": "decision",
         "importance": 5},
        {"i": 1, "keep": False}]}))
elif mode == "invalid":
    print(json.dumps({"memories": [{"i": 7, "keep": True, "text": "x", "category": "decision", "importance": 3}]}))
elif mode == "slow":
    time.sleep(30)
"""
SAID = ["We decided to use PostgreSQL instead of MySQL.", "You must be right about this one, I guess we always "
        "must deploy at night", "Never push directly to main."]


def _refiner(repo_path: Path, mode: str, budget: int = 20) -> None:
    script = repo_path.parent / "refiner.py"
    script.write_text(REFINER)
    (repo_path / "local").mkdir(exist_ok=True)
    (repo_path / "local" / "learning.toml").write_text(
        f"semantic_command = {json.dumps([sys.executable, str(script), mode])}\nsemantic_timeout = 1\n"
        f"semantic_daily_budget = {budget}\n")


def test_the_model_refines_rule_candidates(repo: MemoryRepo) -> None:
    rules_only = capture(repo, texts=SAID, dry_run=True)
    assert len(rules_only.added) == 3 and rules_only.model == "off"
    _refiner(repo.path, "valid")
    result = capture(repo, texts=SAID)
    assert result.model == "ok"
    assert [(m.text, m.category, m.importance) for m in result.added] == [
        ("Use PostgreSQL, not MySQL, for every service.", "decision", 5),
        ("Never push directly to main.", "constraint", 4)]


@pytest.mark.parametrize(("mode", "status"), [("invalid", "invalid"), ("slow", "timeout")])
def test_a_failing_model_leaves_the_rules_result(repo: MemoryRepo, mode: str, status: str) -> None:
    _refiner(repo.path, mode)
    result = capture(repo, texts=SAID, dry_run=True)
    assert result.model == status and len(result.added) == 3


def test_the_model_budget_is_respected(repo: MemoryRepo) -> None:
    _refiner(repo.path, "valid", budget=1)
    assert capture(repo, texts=SAID, dry_run=True).model == "ok"
    second = capture(repo, texts=SAID, dry_run=True)
    assert second.model == "budget" and len(second.added) == 3


# -- statements: clauses and their full stop --------------------------------------------------------------
@pytest.mark.parametrize(("said", "captured"), [
    # both clauses are the rule: one statement, ended once
    ("Never commit directly to main; always open a PR.", ["Never commit directly to main; always open a PR."]),
    ("生产环境的配置不能提交到仓库；必须用环境变量。", ["生产环境的配置不能提交到仓库；必须用环境变量。"]),
    # a clause that is no rule is left out, and the one that is gets a full stop instead of its semicolon
    ("Never push directly to main; what do you think?", ["Never push directly to main."]),
    ("Thanks; never push directly to main.", ["Never push directly to main."]),
    ("Never push directly to main;", ["Never push directly to main."]),
    ("我们决定用 PostgreSQL；", ["我们决定用 PostgreSQL。"]),
    ("Always use ruff for linting, ", ["Always use ruff for linting."]),
    ("Never use print for logging -", ["Never use print for logging."]),
    ("Never use print for logging…", ["Never use print for logging…"]),
    # a rule that points back keeps the clause it points to
    ("Please fix the bug in `parseDate()`; it must return UTC.", ["Fix the bug in `parseDate()`; it must return UTC."]),
    # a Chinese question keeps its question mark, which says it asks
    ("是不是必须先跑测试？", []),
    ("必须先跑测试。是不是也要跑 lint？", ["必须先跑测试。"]),
    # code in a fenced block is what the code does, not what the user asks
    ("Never push to main.\n```python\n# never call this in prod.\ndef f(): return eval(x)  # always sanitize.\n```\n"
     "Always open a PR.", ["Never push to main.", "Always open a PR."]),
    ("Look:\n~~~\n# must not be empty\n", []),
])
def test_a_statement_keeps_its_rule_clauses_and_ends_with_one_full_stop(said: str, captured: list[str]) -> None:
    assert [c.text for c in extract(said)] == captured


def test_capture_dry_run_keeps_a_two_clause_rule_whole(repo_path: Path, tmp_path: Path) -> None:
    transcript = write_transcript(tmp_path / "d.jsonl", [user("Never commit directly to main; always open a PR.")])
    out = run_cli("capture", "--transcript", str(transcript), "--dry-run", env={"GITMEM_REPO": str(repo_path)})
    assert out.code == 0, out.err
    assert out.out.startswith("+ [constraint, 4] Never commit directly to main; always open a PR.  (")
    assert ";." not in out.out and len(out.out.splitlines()) == 1


# -- ids and sessions ---------------------------------------------------------------------------------------
TOKEN = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"


@pytest.mark.parametrize(("args", "session"), [((), "s1"), (("--session", "given"), "given")],
                         ids=["transcript-session", "given-session"])
def test_a_dry_run_shows_the_ids_the_capture_commits(repo_path: Path, tmp_path: Path, args: tuple[str, ...],
                                                     session: str) -> None:
    transcript = write_transcript(tmp_path / "t.jsonl", [
        user("We decided to use ruff instead of flake8."), user("Never push directly to main."),
        user(f"Never commit the token {TOKEN} to the repository.")])
    env = {"GITMEM_REPO": str(repo_path)}
    cmd = ("capture", "--transcript", str(transcript), "--project", PROJECT, "--json", *args)
    dry = json.loads(run_cli(*cmd, "--dry-run", env=env).out)
    shown = run_cli(*(a for a in cmd if a != "--json"), "--dry-run", env=env)
    assert shown.code == 0 and "[REDACTED:github-token]" in shown.out and TOKEN not in shown.out
    real = json.loads(run_cli(*cmd, env=env).out)
    assert len(real["added"]) == 3 and real["commit"]
    assert [a["id"] for a in dry["added"]] == [a["id"] for a in real["added"]]
    assert not any(TOKEN.lower() in a["id"] for a in real["added"])  # derived from the redacted text
    # what it prints is what it stores: the text redacted, in the dry run too (the token reached the terminal)
    assert TOKEN not in json.dumps([dry, real]) and "[REDACTED:github-token]" in json.dumps(real)
    listed = json.loads(run_cli("list", "--json", env=env).out)
    # without --session, the transcript's own sessionId
    assert {m["source_ref"] for m in listed} == {session}
    assert f"Gitmem-Session: {session}" in git(repo_path, "log", "-1", "--format=%B")
    assert_clean(repo_path)


def test_a_derived_id_never_overwrites_a_stored_memory(repo_path: Path, tmp_path: Path) -> None:
    env = {"GITMEM_REPO": str(repo_path)}
    said = [user("Never commit secrets to the repository.")]
    first = json.loads(run_cli("capture", "--transcript", str(write_transcript(tmp_path / "a.jsonl", said)),
                               "--json", env=env).out)["added"][0]
    assert run_cli("forget", first["id"], "--reason", "wrong", env=env).code == 0
    # the same words in the same session again: the id derived first is taken (by a deprecated memory)
    again = json.loads(run_cli("capture", "--transcript", str(write_transcript(tmp_path / "b.jsonl", said)),
                               "--json", env=env).out)["added"][0]
    assert again["id"] != first["id"] and again["id"].rsplit("-", 1)[0] == first["id"].rsplit("-", 1)[0]
    old = json.loads(run_cli("show", first["id"], "--json", env=env).out)
    assert old["deprecated"] and old["deprecated_reason"] == "wrong"
    assert_clean(repo_path)


@pytest.mark.parametrize(("text", "expected"), [
    ('Always answer "done." when a task is over', ['Always answer "done." when a task is over']),
    ('Always answer "done."', ['Always answer "done."']),
    ('"Never push on Fridays."', ["Never push on Fridays."]),
    ("- Don't use npm. Use pnpm.", ["Don't use npm.", "Use pnpm."]),
])
def test_a_quote_inside_a_sentence_keeps_its_closing_mark(text: str, expected: list[str]) -> None:
    assert sentences(text) == expected
