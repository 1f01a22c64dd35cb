"""Instinct files broken by hand: the listing names them, doctor reports what is wrong, and learning refuses to
write over one (it would start the instinct over and lose the confidence and evidence the file holds)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitmem.errors import DocumentError
from gitmem.learn import instincts as ins
from gitmem.store.memories import MemoryRepo
from tests.helpers import git, run_cli
from tests.learn.test_instincts import T0, read_edit_session, write_obs

PATH = "instincts/editing/read-before-edit--github.com-acme-shop.md"


def _learned_then_broken(repo: MemoryRepo, repo_path: Path) -> str:
    """One instinct learned from two sessions (0.55, evidence 6), then its confidence broken by hand and committed;
    the good text is returned."""
    write_obs(repo_path, read_edit_session("s1") + read_edit_session("s2"))
    ins.learn(repo, now=T0, decay_days=0)
    good = (repo_path / PATH).read_text("utf-8")
    assert "confidence: 0.55" in good and "evidence_count: 6" in good
    (repo_path / PATH).write_text(good.replace("confidence: 0.55", "confidence: [0.55"), "utf-8")
    git(repo_path, "commit", "-qam", "hand edit")
    return good


def test_list_names_a_broken_instinct_file_and_doctor_reports_it(repo: MemoryRepo, repo_path: Path) -> None:
    _learned_then_broken(repo, repo_path)
    env = {"GITMEM_REPO": str(repo_path)}
    listed = run_cli("instincts", "list", env=env)
    assert listed.code == 0
    assert f"gitmem: warning: skipped {PATH}: frontmatter is not valid YAML" in listed.err
    assert "(run gitmem doctor)" in listed.err and "no instincts yet" not in listed.out
    assert json.loads(run_cli("instincts", "list", "--json", env=env).out) == []
    doctor = run_cli("doctor", env=env)
    assert doctor.code == 1
    [line] = [line for line in doctor.out.splitlines() if PATH in line]
    assert line.startswith(f"error   {PATH}: frontmatter is not valid YAML: while parsing a flow sequence (line 5)")
    assert "ok      instincts/: 0 instincts readable" in doctor.out


def test_learning_refuses_to_write_over_a_file_it_cannot_read(repo: MemoryRepo, repo_path: Path) -> None:
    good = _learned_then_broken(repo, repo_path)
    broken = (repo_path / PATH).read_bytes()
    head = git(repo_path, "rev-parse", "HEAD")
    write_obs(repo_path, read_edit_session("s3"))
    env = {"GITMEM_REPO": str(repo_path)}
    refused = run_cli("instincts", "learn", "--decay-days", "0", env=env)
    assert refused.code != 0
    assert f"{PATH} cannot be read (frontmatter is not valid YAML" in refused.err
    assert "losing its confidence and evidence; nothing was written" in refused.err
    assert f"git -C {repo_path} log -- {PATH}" in refused.err
    assert (repo_path / PATH).read_bytes() == broken
    assert git(repo_path, "rev-parse", "HEAD") == head
    # once the file is fixed, the session it refused is learned: nothing was lost, nothing counted twice
    (repo_path / PATH).write_text(good, "utf-8")
    git(repo_path, "commit", "-qam", "fixed")
    assert run_cli("instincts", "learn", "--decay-days", "0", env=env).code == 0
    [item] = ins.list_instincts(repo_path)
    assert (item.confidence, item.evidence_count, item.sessions) == (0.6, 9, 3)


@pytest.mark.parametrize(("line", "problem"), [
    ("confidence: high", "confidence must be a number from 0 to 1, not 'high'"),
    ("confidence: 7", "confidence must be a number from 0 to 1, not 7"),
    ("evidence_count: -2", "evidence_count must be a whole number, 0 or more, not -2"),
    ("sessions: 1.5", "sessions must be a whole number, 0 or more, not 1.5"),
    ("last_seen: yesterday", "'last_seen' is not a date: 'yesterday'"),
])
def test_an_invalid_field_is_an_error_naming_the_file_and_the_field(repo_path: Path, line: str, problem: str) -> None:
    item = ins.Instinct(id="x--p", pattern="x", trigger="t", action="a", domain="editing", confidence=0.6,
                        evidence_count=3, sessions=2)
    key = line.split(":")[0]
    text = "\n".join(line if row.startswith(f"{key}:") else row for row in ins.dumps(item).splitlines()) + "\n"
    with pytest.raises(DocumentError) as caught:
        ins.loads(text, item.path)
    assert caught.value.message == f"{item.path}: {problem}"
    (repo_path / item.path).parent.mkdir(parents=True)
    (repo_path / item.path).write_text(text, "utf-8")
    problems: list[DocumentError] = []
    assert ins.list_instincts(repo_path, warnings=problems) == []
    assert [p.message for p in problems] == [f"{item.path}: {problem}"]
    [issue] = [i for i in ins.doctor_issues(repo_path) if i.level == "error"]
    assert (issue.path, issue.message.split(" (")[0]) == (item.path, problem.split(" (")[0])


def test_session_end_work_goes_on_when_learning_refuses(repo: MemoryRepo, repo_path: Path) -> None:
    """The detached session-end learner: the instinct is left as it is and said in the log, and the session's
    memories are captured all the same."""
    _learned_then_broken(repo, repo_path)
    broken = (repo_path / PATH).read_bytes()
    write_obs(repo_path, read_edit_session("s3"))
    transcript = repo_path.parent / "t.jsonl"
    transcript.write_text(json.dumps({"type": "user", "message": {"role": "user",
                                                                  "content": "Never push directly to main."}}) + "\n")
    ended = run_cli("learn-session", "--session", "s3", "--transcript", str(transcript), "--timeout", "0",
                    env={"GITMEM_REPO": str(repo_path)})
    assert ended.code == 0, ended.err
    assert f"gitmem: error: {PATH} cannot be read" in ended.err
    done = json.loads((repo_path / "local" / "last-learn.json").read_text("utf-8"))
    assert done["instincts"]["error"].startswith(f"{PATH} cannot be read")
    assert [a["category"] for a in done["capture"]["added"]] == ["constraint"]
    assert (repo_path / PATH).read_bytes() == broken
