"""Instincts from real observation files, their confidence over sessions, decay, promotion, evolve, export."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from gitmem.learn import instincts as ins
from gitmem.learn.evolve import evolve, jaccard, keywords, merge_groups, plan
from gitmem.learn.patterns import BY_PATTERN, Call, detect, sessions_from
from gitmem.store.local import append_line
from gitmem.store.memories import MemoryRepo
from tests.helpers import assert_clean, git, run_cli

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)


def record(session: str, tool: str, project: str = "github.com-acme-shop", when: datetime = T0, output: str = "ok",
           **inp: Any) -> dict[str, Any]:
    """One line as the post-tool-use hook writes it (see gitmem/agents/claude/handlers.py::_observe)."""
    return {"session": session, "time": when.strftime("%Y-%m-%dT%H:%M:%SZ"), "phase": "post", "tool": tool,
            "input": json.dumps(inp, separators=(",", ":")), "output": output, "cwd": "/code/shop",
            "project": project}


def read_edit_session(session: str, project: str = "github.com-acme-shop", when: datetime = T0) -> list[dict[str, Any]]:
    rows = []
    for name in ("a.py", "b.py", "c.py"):
        rows.append(record(session, "Read", project, when, file_path=f"/code/shop/{name}"))
        rows.append(record(session, "Edit", project, when, file_path=f"/code/shop/{name}", old_string="x",
                           new_string="y"))
    return rows


def write_obs(repo_path: Path, rows: list[dict[str, Any]]) -> None:
    for row in rows:
        append_line(repo_path / "local" / "observations.jsonl", row)


def calls(*spec: tuple[str, str]) -> list[Call]:
    out = []
    for tool, arg in spec:
        if tool == "Bash":
            command, _, output = arg.partition(" => ")
            out.append(Call(tool, command=command, output=output))
        else:
            out.append(Call(tool, path=arg))
    return out


# -- arithmetic at its bounds ---------------------------------------------------------------------------
def test_confidence_arithmetic_at_the_bounds() -> None:
    assert ins.NEW == 0.5
    assert ins.confirm(0.5) == 0.55
    assert ins.confirm(0.85) == 0.9
    assert ins.confirm(0.9) == 0.9
    assert ins.confirm(0.88) == 0.9
    assert ins.weaken(0.55) == 0.5
    assert ins.weaken(0.02) == 0.0
    assert not ins.is_deprecated(0.55)
    assert ins.is_deprecated(ins.weaken(0.55))
    value = ins.NEW
    for _ in range(100):
        value = ins.confirm(value)
    assert value == ins.CAP


# -- detectors ------------------------------------------------------------------------------------------
def test_detectors_fire_on_their_pattern_and_not_on_others() -> None:
    found = {d.pattern for d in detect(calls(("Read", "a.py"), ("Edit", "a.py"), ("Read", "b.py"),
                                             ("Edit", "b.py")))}
    assert found == {"read-before-edit"}
    assert not detect(calls(("Edit", "a.py"), ("Edit", "b.py"), ("Read", "c.py")))
    searched = [Call("Grep", output='{"filenames":["src/a.py","src/b.py"]}'), Call("Edit", path="src/a.py"),
                Call("Edit", path="src/b.py")]
    assert {d.pattern for d in detect(searched)} == {"search-before-edit"}
    assert not detect([Call("Grep", output="docs/x.md"), *calls(("Edit", "a.py"), ("Edit", "b.py"))])
    tested = calls(("Edit", "a.py"), ("Bash", "pytest -x"), ("Edit", "b.py"), ("Bash", "python -m pytest tests"))
    assert "test-after-edit" in {d.pattern for d in detect(tested)}
    linted = calls(("Edit", "a.py"), ("Bash", "ruff check ."), ("Edit", "b.py"), ("Bash", "ruff format"))
    assert "lint-after-edit" in {d.pattern for d in detect(linted)}
    assert "status-before-commit" in {d.pattern for d in detect(calls(
        ("Bash", "git status"), ("Bash", "git diff --staged"), ("Bash", "git commit -m x")))}
    assert not detect(calls(("Bash", "git commit -m x")))
    missing = calls(("Bash", "gh pr list => gh: command not found"), ("Bash", "which gh"))
    assert {d.pattern for d in detect(missing)} == {"check-missing-cli"}
    retry = calls(("Bash", "make => error: x"), ("Bash", "make => error: x"), ("Bash", "make => error: x"))
    assert {d.pattern for d in detect(retry)} == {"no-blind-retry"}


def test_the_usual_fix_loop_teaches_nothing_false() -> None:
    """Fail, edit, re-run counted as blind retries; `grep error:` and `git log` printing "error:" as failures; and
    `pip install pytest-cov` or `cat pytest.ini` after an edit as a test run."""
    fixing = calls(("Read", "tests/test_calc.py"), ("Bash", "python -m pytest -q => FAILED tests/test_calc.py"),
                   ("Read", "src/calc.py"), ("Edit", "src/calc.py"), ("Bash", "python -m pytest -q => 1 passed"),
                   ("Bash", "ruff check . => error: unused import"), ("Read", "src/util.py"),
                   ("Edit", "src/util.py"), ("Bash", "ruff check . => All checks passed"))
    assert "no-blind-retry" not in {d.pattern for d in detect(fixing)}
    reading = calls(("Bash", "git log --oneline -3 => abc fix: error: handle empty input"),
                    ("Bash", "git log --oneline -3 => abc fix: error: handle empty input"),
                    ("Bash", "grep -rn 'error:' src => src/a.py: raise ValueError('error: x')"),
                    ("Bash", "grep -rn 'error:' src => src/a.py: raise ValueError('error: x')"))
    assert not detect(reading)
    mentioned = calls(("Edit", "a.py"), ("Bash", "pip install pytest-cov"), ("Edit", "b.py"),
                      ("Bash", "cat pytest.ini"), ("Edit", "c.py"), ("Bash", "pip install ruff"))
    assert not {"test-after-edit", "lint-after-edit"} & {d.pattern for d in detect(mentioned)}
    ran = calls(("Edit", "a.py"), ("Bash", "cd app && FOO=1 uv run pytest -q"), ("Edit", "b.py"),
                ("Bash", "npx vitest run"))
    assert "test-after-edit" in {d.pattern for d in detect(ran)}


def test_a_rejected_instinct_stays_rejected_whatever_the_sessions_show(repo_path: Path) -> None:
    """There was no way to be rid of a wrong instinct: a deprecated one came back at 0.5 when its pattern showed."""
    env = {"GITMEM_REPO": str(repo_path)}
    write_obs(repo_path, read_edit_session("s1") + read_edit_session("s2"))
    assert run_cli("instincts", "learn", env=env).code == 0
    item = "read-before-edit--github.com-acme-shop"
    refused = run_cli("instincts", "reject", item, env=env)
    assert refused.code != 0 and "--reason" in refused.err
    done = run_cli("instincts", "reject", item, "--reason", "reads are cheap here, not a rule", env=env)
    assert done.code == 0 and f"rejected {item}" in done.out
    assert git(repo_path, "log", "-1", "--format=%s").strip() == f"instincts: reject {item}"
    write_obs(repo_path, read_edit_session("s3") + read_edit_session("s4"))
    assert run_cli("instincts", "learn", env=env).code == 0
    shown = json.loads(run_cli("instincts", "show", item, "--json", env=env).out)
    assert shown["deprecated"] and shown["deprecated_reason"] == "rejected: reads are cheap here, not a rule"
    assert shown["confidence"] == 0.0
    assert run_cli("instincts", "reject", item, "--reason", "again", env=env).code != 0
    assert_clean(repo_path)


def test_a_resumed_session_s_later_calls_are_learned(repo: MemoryRepo, repo_path: Path) -> None:
    """A session learned at its end and resumed later (`claude --resume`, the same session id) was never learned
    from again: its id was in the learned list."""
    write_obs(repo_path, read_edit_session("s1", when=T0) + read_edit_session("s1b", when=T0))
    first = ins.learn(repo, now=T0 + timedelta(hours=1))
    assert sorted(first.sessions) == ["s1", "s1b"]
    assert ins.get_instinct(repo_path, "read-before-edit--github.com-acme-shop").confidence == 0.55
    assert ins.learn(repo, now=T0 + timedelta(hours=2)).sessions == []  # nothing new: nothing learned
    later = T0 + timedelta(days=1)
    write_obs(repo_path, read_edit_session("s1", when=later))  # the same session, resumed
    again = ins.learn(repo, now=later + timedelta(hours=1))
    assert again.sessions == ["s1"]
    assert ins.get_instinct(repo_path, "read-before-edit--github.com-acme-shop").confidence == 0.6


def test_input_summaries_cut_short_still_give_the_path() -> None:
    rows = [{"session": "s", "phase": "post", "tool": "Edit", "time": "2026-11-01T09:00:00Z",
             "input": '{"file_path":"/x/a.py","old_string":"' + "z" * 480 + "…[+900]", "output": ""}]
    assert sessions_from(rows)["s"][0].path == "/x/a.py"


# -- learning from real observation files ---------------------------------------------------------------
def test_three_sessions_raise_the_confidence_visible_in_list_and_git_log(repo_path: Path) -> None:
    """Acceptance: tool calls through the real hook entry, read before edit, three sessions."""
    code = repo_path.parent / "shop"
    code.mkdir()
    env = {**os.environ, "GITMEM_REPO": str(repo_path)}
    seen = []
    for n in (1, 2, 3):
        for name in ("a.py", "b.py"):
            for tool, inp in (("Read", {"file_path": str(code / name)}),
                              ("Edit", {"file_path": str(code / name), "old_string": "a", "new_string": "b"})):
                payload = {"session_id": f"sess-{n}", "cwd": str(code), "hook_event_name": "PostToolUse",
                           "tool_name": tool, "tool_input": inp, "tool_response": {"ok": True},
                           "tool_use_id": f"t{n}{name}{tool}", "transcript_path": str(code / "t.jsonl")}
                proc = subprocess.run([sys.executable, "-m", "gitmem.agents.claude.entry", "post-tool-use"],
                                      input=json.dumps(payload).encode(), env=env, capture_output=True, timeout=60)
                assert proc.returncode == 0
        # a session still running is left alone ...
        assert run_cli("instincts", "learn", "--json", env={"GITMEM_REPO": str(repo_path)}).out.count(
            f"sess-{n}") == 0
        # ... until it ends (the detached learner is switched off here: this test drives learning itself)
        end = {"session_id": f"sess-{n}", "cwd": str(code), "hook_event_name": "SessionEnd", "reason": "exit"}
        subprocess.run([sys.executable, "-m", "gitmem.agents.claude.entry", "session-end"],
                       input=json.dumps(end).encode(),
                       env={**env, "GITMEM_LEARN": "0"}, capture_output=True, timeout=60, check=True)
        assert run_cli("instincts", "learn", env={"GITMEM_REPO": str(repo_path)}).code == 0
        listed = json.loads(run_cli("instincts", "list", "--json", env={"GITMEM_REPO": str(repo_path)}).out)
        item = next(i for i in listed if i["pattern"] == "read-before-edit")
        seen.append(item["confidence"])
    assert seen == [0.5, 0.55, 0.6]
    log = git(repo_path, "log", "--format=%s%n%b", "--", item["path"])
    assert log.count("Gitmem-Evidence:") == 3
    assert "Gitmem-Op: add" in log and "Gitmem-Op: update" in log
    assert "0.55 -> 0.60 (evidence 6, sessions 3)" in log
    shown = json.loads(run_cli("instincts", "show", item["id"], "--json", env={"GITMEM_REPO": str(repo_path)}).out)
    assert [h["confidence"] for h in shown["history"]] == [0.6, 0.55, 0.5]
    # learning again counts nothing twice
    before = git(repo_path, "rev-list", "--count", "HEAD")
    assert run_cli("instincts", "learn", env={"GITMEM_REPO": str(repo_path)}).code == 0
    assert git(repo_path, "rev-list", "--count", "HEAD") == before
    assert_clean(repo_path)


def test_decay_weakens_then_deprecates_with_a_commit(repo: MemoryRepo, repo_path: Path) -> None:
    write_obs(repo_path, read_edit_session("s1") + read_edit_session("s2"))
    ins.learn(repo, now=T0, decay_days=14)
    item = ins.list_instincts(repo_path)[0]
    assert item.confidence == 0.55
    assert ins.learn(repo, now=T0 + timedelta(days=13), decay_days=14).changes == []
    result = ins.learn(repo, now=T0 + timedelta(days=15), decay_days=14)
    assert [(c.kind, c.before, c.instinct.confidence) for c in result.changes] == [("deprecate", 0.55, 0.5)]
    assert result.decay_commit and not result.commit


def test_deprecation_below_the_floor_is_a_deprecate_commit(repo: MemoryRepo, repo_path: Path) -> None:
    write_obs(repo_path, [*read_edit_session("s1"), *read_edit_session("s2"), *read_edit_session("s3")])
    ins.learn(repo, now=T0, decay_days=10)
    assert ins.list_instincts(repo_path)[0].confidence == 0.6
    ins.learn(repo, now=T0 + timedelta(days=11), decay_days=10)  # 0.55: kept
    item = ins.list_instincts(repo_path)[0]
    assert (item.confidence, item.deprecated) == (0.55, False)
    ins.learn(repo, now=T0 + timedelta(days=15), decay_days=10)  # not a full period since the last decay
    assert ins.list_instincts(repo_path)[0].confidence == 0.55
    ins.learn(repo, now=T0 + timedelta(days=21), decay_days=10)  # 0.5 < 0.55: deprecated
    item = ins.list_instincts(repo_path)[0]
    assert (item.confidence, item.deprecated) == (0.5, True)
    assert not ins.list_instincts(repo_path, deprecated=False)
    last = git(repo_path, "log", "-1", "--format=%B")
    assert "Gitmem-Op: deprecate" in last and "deprecate read-before-edit" in last
    # seen again: revived at the starting confidence
    write_obs(repo_path, read_edit_session("s4", when=T0 + timedelta(days=30)))
    ins.learn(repo, now=T0 + timedelta(days=30), decay_days=10)
    item = ins.list_instincts(repo_path)[0]
    assert (item.confidence, item.deprecated) == (0.5, False)
    assert_clean(repo_path)


def test_promotion_to_global_after_two_strong_projects(repo: MemoryRepo, repo_path: Path) -> None:
    rows = []
    for n in range(7):
        rows += read_edit_session(f"a{n}", "github.com-acme-shop") + read_edit_session(f"b{n}", "github.com-acme-api")
    write_obs(repo_path, rows[: len(rows) // 2])
    ins.learn(repo, now=T0, decay_days=0)
    assert "read-before-edit" not in {i.id for i in ins.list_instincts(repo_path)}
    write_obs(repo_path, rows[len(rows) // 2:])
    ins.learn(repo, now=T0, decay_days=0)
    by_id = {i.id: i for i in ins.list_instincts(repo_path)}
    assert by_id["read-before-edit--github.com-acme-shop"].confidence == 0.8
    glob = by_id["read-before-edit"]
    assert (glob.scope, glob.project, glob.confidence) == ("global", "", 0.8)
    assert glob.path == "instincts/editing/read-before-edit.md"


def test_distractor_sessions_make_no_instinct(repo: MemoryRepo, repo_path: Path) -> None:
    rows = [record("d1", "Read", file_path="/code/x.py"), record("d1", "Bash", command="ls"),
            record("d1", "Edit", file_path="/code/y.py"), record("d1", "Bash", command="git commit -m wip"),
            record("d1", "Edit", file_path="/code/z.py")]
    write_obs(repo_path, rows)
    result = ins.learn(repo, now=T0)
    assert result.sessions == ["d1"] and not result.changes and not result.commit


# -- evolve ---------------------------------------------------------------------------------------------
def _instinct(pattern: str, domain: str, confidence: float, project: str = "p", action: str = "") -> ins.Instinct:
    det = BY_PATTERN.get(pattern)
    return ins.Instinct(id=ins.instinct_id(pattern, project), pattern=pattern, trigger=det.trigger if det else pattern,
                        action=action or (det.action if det else pattern), domain=domain, confidence=confidence,
                        project=project, evidence_count=int(confidence * 100))


def test_keywords_jaccard_and_union_find() -> None:
    a = _instinct("test-after-edit", "testing", 0.8, "p1")
    b = _instinct("test-after-edit", "testing", 0.7, "p2")
    c = _instinct("lint-after-edit", "style", 0.9)
    assert "tests" not in keywords(a) and "test" in keywords(a)
    assert jaccard(keywords(a), keywords(b)) == 1.0
    groups = merge_groups([b, c, a])
    assert [[i.id for i in g] for g in groups] == [[c.id], [a.id, b.id]]


def test_plan_keeps_confident_groups_by_domain() -> None:
    items = [_instinct("read-before-edit", "editing", 0.75), _instinct("search-before-edit", "editing", 0.7),
             _instinct("test-after-edit", "testing", 0.9), _instinct("lint-after-edit", "style", 0.65)]
    files, result = plan(items)
    assert set(files) == {"evolved/editing.md", "rules/auto-evolved.md"}
    assert {r.pattern for r in result.rules} == {"read-before-edit", "search-before-edit", "test-after-edit"}
    assert "Run the linter" not in files["rules/auto-evolved.md"]


def test_evolve_commits_once_and_a_second_run_commits_nothing(repo_path: Path) -> None:
    rows = []
    for n in range(6):
        rows += read_edit_session(f"s{n}")
        rows += [record(f"s{n}", "Write", file_path="/code/shop/new.py"), record(f"s{n}", "Bash", command="pytest -q"),
                 record(f"s{n}", "Write", file_path="/code/shop/new2.py"), record(f"s{n}", "Bash", command="pytest")]
    write_obs(repo_path, rows)
    env = {"GITMEM_REPO": str(repo_path)}
    assert run_cli("instincts", "learn", env=env).code == 0
    first = run_cli("evolve", "--json", "--no-install", env=env)
    assert first.code == 0, first.err
    data = json.loads(first.out)
    assert data["commit"] and "+ rules/auto-evolved.md" in data["changes"]
    rules = (repo_path / "rules" / "auto-evolved.md").read_text()
    assert "Read the file before editing it." in rules and "Run the test suite" in rules
    body = git(repo_path, "log", "-1", "--format=%B")
    assert "Gitmem-Op: evolve" in body and "+ rules/auto-evolved.md" in body
    count = git(repo_path, "rev-list", "--count", "HEAD")
    second = run_cli("evolve", "--no-install", env=env)
    assert second.code == 0 and "nothing changed" in second.out
    assert git(repo_path, "rev-list", "--count", "HEAD") == count
    assert_clean(repo_path)


def test_evolve_removes_a_domain_file_that_no_longer_qualifies(repo: MemoryRepo, repo_path: Path) -> None:
    items = [_instinct("read-before-edit", "editing", 0.8), _instinct("search-before-edit", "editing", 0.8)]
    with repo.git.locked():
        repo.git.commit({i.path: ins.dumps(i).encode() for i in items}, "seed\n", repo.git.author())
    assert evolve(repo).commit
    assert (repo_path / "evolved" / "editing.md").is_file()
    weak = ins.dumps(ins.Instinct(**{**items[1].__dict__, "confidence": 0.6}))
    with repo.git.locked():
        repo.git.commit({items[1].path: weak.encode()}, "weaken\n", repo.git.author())
    result = evolve(repo)
    assert "- evolved/editing.md" in result.changes and not (repo_path / "evolved" / "editing.md").exists()
    assert_clean(repo_path)


def test_the_rules_file_names_a_project_s_rules_and_stays_put_as_confidence_grows(repo: MemoryRepo,
                                                                                     repo_path: Path) -> None:
    """Claude Code loads the rules file in every project: a rule learned in one project was given as everyone's,
    and each line's confidence and observation count rewrote the file (and its copy) at every confirming session."""
    mine = _instinct("read-before-edit", "editing", 0.8, project="github.com-acme-web")
    shared = [_instinct("test-after-edit", "testing", 0.8, project=p) for p in ("github.com-a-x", "github.com-b-y")]
    promoted = ins.Instinct(**{**_instinct("status-before-commit", "git", 0.85, project="").__dict__,
                               "scope": "global"})
    with repo.git.locked():
        repo.git.commit({i.path: ins.dumps(i).encode() for i in [mine, *shared, promoted]}, "seed\n",
                        repo.git.author())
    assert evolve(repo).commit
    rules = (repo_path / "rules" / "auto-evolved.md").read_text()
    assert "Read the file before editing it. (in github.com-acme-web only)" in rules
    assert "(in github.com-a-x, github.com-b-y only)" in rules
    assert "Check git status and the diff before committing.\n" in rules  # global: no project named
    assert "confidence" not in rules.split("\n", 3)[3]  # the header names the threshold; no line has a figure
    stronger = ins.Instinct(**{**mine.__dict__, "confidence": 0.85, "evidence_count": 99})
    with repo.git.locked():
        repo.git.commit({stronger.path: ins.dumps(stronger).encode()}, "confirm\n", repo.git.author())
    evolve(repo)
    assert (repo_path / "rules" / "auto-evolved.md").read_text() == rules


def test_evolve_without_instincts_writes_nothing(repo: MemoryRepo, repo_path: Path) -> None:
    result = evolve(repo)
    assert not result.commit and not result.changes and not (repo_path / "rules").exists()


def test_evolve_installs_the_rules_for_claude_code(repo: MemoryRepo, repo_path: Path, tmp_path: Path) -> None:
    item = _instinct("read-before-edit", "editing", 0.8)
    with repo.git.locked():
        repo.git.commit({item.path: ins.dumps(item).encode()}, "seed\n", repo.git.author())
    target = tmp_path / "claude-rules"
    out = run_cli("evolve", "--rules-dir", str(target), env={"GITMEM_REPO": str(repo_path)})
    assert out.code == 0, out.err
    assert (target / "gitmem-auto-evolved.md").read_text() == (repo_path / "rules/auto-evolved.md").read_text()


# -- export ---------------------------------------------------------------------------------------------
def test_export_shares_no_paths_projects_or_sessions(repo: MemoryRepo, repo_path: Path) -> None:
    write_obs(repo_path, read_edit_session("secret-session-1", "github.com-acme-shop"))
    write_obs(repo_path, read_edit_session("secret-session-2", "github.com-acme-shop"))
    ins.learn(repo, now=T0)
    out = run_cli("instincts", "export", env={"GITMEM_REPO": str(repo_path)})
    assert out.code == 0
    assert "read-before-edit" in out.out
    for leak in ("acme", "secret-session", "/code/shop", "a.py"):
        assert leak not in out.out
    record_ = json.loads(out.out.splitlines()[0])
    assert set(record_) >= {"id", "trigger", "action", "domain", "confidence"}


@pytest.mark.parametrize("bad", ["", "---\nfoo: [\n---\n", "---\nid: x\n---\n"])
def test_unreadable_instinct_files_are_skipped(repo_path: Path, bad: str) -> None:
    (repo_path / "instincts" / "x").mkdir(parents=True)
    (repo_path / "instincts" / "x" / "bad.md").write_text(bad)
    assert ins.list_instincts(repo_path) == []


def test_session_end_learns_in_a_detached_process(repo_path: Path) -> None:
    """The real hooks: tool calls, then session-end with a transcript; the hook returns at once and a detached
    process learns the instinct and captures the transcript's constraint."""
    import time

    code = repo_path.parent / "shop"
    code.mkdir()
    transcript = code / "t.jsonl"
    transcript.write_text(json.dumps({"type": "user", "message": {"role": "user",
                                                                  "content": "Never push directly to main."}}) + "\n")
    env = {**os.environ, "GITMEM_REPO": str(repo_path)}
    base = {"session_id": "end-1", "cwd": str(code), "transcript_path": str(transcript)}
    for name in ("a.py", "b.py"):
        for tool in ("Read", "Edit"):
            data = {**base, "hook_event_name": "PostToolUse", "tool_name": tool,
                    "tool_input": {"file_path": str(code / name)}, "tool_response": {}}
            subprocess.run([sys.executable, "-m", "gitmem.agents.claude.entry", "post-tool-use"],
                           input=json.dumps(data).encode(),
                           env=env, capture_output=True, timeout=60, check=True)
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "gitmem.agents.claude.entry", "session-end"], env=env,
                          capture_output=True,
                          input=json.dumps({**base, "hook_event_name": "SessionEnd", "reason": "exit"}).encode(),
                          timeout=60)
    assert proc.returncode == 0 and proc.stdout == b""
    assert time.monotonic() - start < 5
    marker = repo_path / "local" / "last-learn.json"
    deadline = time.monotonic() + 60
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    done = json.loads(marker.read_text())
    assert done["session"] == "end-1"
    assert [c["kind"] for c in done["instincts"]["changes"]] == ["new"]
    assert [a["category"] for a in done["capture"]["added"]] == ["constraint"]
    assert ins.list_instincts(repo_path)[0].pattern == "read-before-edit"
    assert_clean(repo_path)


# -- the optional semantic analysis, with a script standing in for the model command ----------------------
MODEL = """import json, sys, time
prompt = sys.stdin.read()
mode = sys.argv[1]
open(sys.argv[2], "a").write(prompt + "\\n===\\n")
if mode == "valid":
    print(json.dumps({"result": "```json\\n" + json.dumps({"instincts": [{"pattern": "run-migrations-first",
          "trigger": "before starting the dev server", "action": "Run the database migrations first.",
          "domain": "database"}]}) + "\\n```"}))
elif mode == "invalid":
    print("Sure! Here are some instincts: read before edit")
elif mode == "bad-item":
    print(json.dumps([{"pattern": "../../etc", "trigger": "x", "action": "y", "domain": "z"}]))
elif mode == "slow":
    time.sleep(30)
"""


def _configure(repo_path: Path, mode: str, **extra: Any) -> Path:
    script = repo_path.parent / "model.py"
    script.write_text(MODEL)
    seen = repo_path.parent / "prompts.txt"
    lines = [f"semantic_command = {json.dumps([sys.executable, str(script), mode, str(seen)])}"]
    lines += [f"{k} = {v}" for k, v in extra.items()]
    (repo_path / "local").mkdir(exist_ok=True)
    (repo_path / "local" / "learning.toml").write_text("\n".join(lines) + "\n")
    return seen


def _session_with_secret(repo_path: Path) -> None:
    write_obs(repo_path, [
        record("m1", "Bash", command="alembic upgrade head"),
        record("m1", "Read", file_path="/home/alice/secret-project/db.py", output="password=hunter2")])


def test_semantic_analysis_is_off_until_configured(repo: MemoryRepo, repo_path: Path) -> None:
    from gitmem.learn.modelreview import analyze

    _session_with_secret(repo_path)
    assert analyze(repo, "m1").status == "off"


def test_semantic_analysis_valid_answer_creates_an_instinct(repo: MemoryRepo, repo_path: Path) -> None:
    from gitmem.learn.modelreview import analyze

    _session_with_secret(repo_path)
    prompts = _configure(repo_path, "valid")
    result = analyze(repo, "m1")
    assert result.status == "ok" and result.commit
    item = ins.get_instinct(repo_path, "sem-run-migrations-first--github.com-acme-shop")
    assert (item.source, item.confidence, item.domain) == ("semantic", 0.5, "database")
    sent = prompts.read_text()
    assert "alembic upgrade head" in sent and "db.py" in sent
    assert "/home/alice" not in sent and "hunter2" not in sent  # base names only, no output text
    assert analyze(repo, "m1").changes[0].instinct.confidence == 0.55
    assert_clean(repo_path)


@pytest.mark.parametrize(("mode", "status"), [("invalid", "invalid"), ("bad-item", "invalid"), ("slow", "timeout")])
def test_semantic_analysis_failures_write_nothing(repo: MemoryRepo, repo_path: Path, mode: str, status: str) -> None:
    import time

    from gitmem.learn.modelreview import analyze

    _session_with_secret(repo_path)
    _configure(repo_path, mode, semantic_timeout=1)
    head = git(repo_path, "rev-parse", "HEAD")
    start = time.monotonic()
    result = analyze(repo, "m1")
    assert result.status == status, result.message
    assert time.monotonic() - start < 10
    assert git(repo_path, "rev-parse", "HEAD") == head and ins.list_instincts(repo_path) == []


def test_semantic_analysis_daily_budget(repo: MemoryRepo, repo_path: Path) -> None:
    from gitmem.learn.modelreview import analyze

    _session_with_secret(repo_path)
    prompts = _configure(repo_path, "valid", semantic_daily_budget=1)
    assert analyze(repo, "m1", now=T0).status == "ok"
    spent = analyze(repo, "m1", now=T0)
    assert spent.status == "budget" and "1 calls" in spent.message
    assert prompts.read_text().count("===") == 1  # the command was not run again
    assert analyze(repo, "m1", now=T0 + timedelta(days=1)).status == "ok"  # a new day, a new budget


def test_semantic_cli_and_bad_settings(repo_path: Path) -> None:
    env = {"GITMEM_REPO": str(repo_path)}
    out = run_cli("instincts", "analyze", "--session", "nope", "--json", env=env)
    assert out.code == 0 and json.loads(out.out)["status"] == "off"
    (repo_path / "local").mkdir(exist_ok=True)
    (repo_path / "local" / "learning.toml").write_text("semantic_command = 3\n")
    bad = run_cli("instincts", "analyze", "--session", "nope", env=env)
    assert bad.code != 0 and "semantic_command must be a list" in bad.err


def test_evolve_json_shows_no_secret_of_a_hand_edited_instinct(repo: MemoryRepo, repo_path: Path) -> None:
    """An instinct's file edited by hand (not through gitmem's gate) may hold a secret: the rules file is
    redacted, and so is what ``gitmem evolve --json`` prints."""
    token = "ghp_" + "a1B2" * 9
    item = _instinct("deploy-with-token", "deploy", 0.8, action="Deploy with the token PLACEHOLDER")
    path = repo_path / item.path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(ins.dumps(item).replace("PLACEHOLDER", token), "utf-8")
    git(repo_path, "add", item.path)
    git(repo_path, "commit", "-qm", "hand-written instinct")
    assert token in path.read_text("utf-8")
    for args in (("--dry-run",), ()):
        result = run_cli("evolve", "--json", "--no-install", *args, env={"GITMEM_REPO": str(repo_path)})
        assert result.code == 0, result.err
        assert token not in result.out and token not in result.err
        [rule] = json.loads(result.out)["rules"]
        assert rule["id"] == item.id and rule["action"].startswith("Deploy with the token ")
    rules = (repo_path / "rules" / "auto-evolved.md").read_text("utf-8")
    assert "Deploy with the token" in rules and token not in rules
