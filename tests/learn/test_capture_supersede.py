"""The newest statement wins: a correction of one value, or a contradicting statement of another category,
supersedes the older memory in the capture's one commit; a restatement with the same values still merges or is
skipped, and two rules that only share words both stay. Through the real CLI on real repositories."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gitmem.learn import dedup
from gitmem.learn.capture import capture
from gitmem.router.route import conflicts_with
from gitmem.store.memories import MemoryRepo
from tests.helpers import PROJECT, assert_clean, git, run_cli


def say(tmp_path: Path, session: str, *messages: str) -> Path:
    """A Claude Code transcript of ``session`` in which the user says ``messages``."""
    path = tmp_path / f"{session}.jsonl"
    path.write_text("".join(json.dumps({"type": "user", "sessionId": session, "message": {
        "role": "user", "content": m}}, ensure_ascii=False) + "\n" for m in messages), "utf-8")
    return path


def cli_capture(repo_path: Path, transcript: Path, *args: str) -> dict[str, Any]:
    out = run_cli("capture", "--transcript", str(transcript), "--project", PROJECT, "--json", *args,
                  env={"GITMEM_REPO": str(repo_path)})
    assert out.code == 0, out.err
    result: dict[str, Any] = json.loads(out.out)
    return result


def active(repo_path: Path) -> list[str]:
    """The texts of the active memories, as ``gitmem list`` shows them."""
    out = run_cli("list", "--json", env={"GITMEM_REPO": str(repo_path)})
    assert out.code == 0, out.err
    return sorted(m["text"] for m in json.loads(out.out))


def show(repo_path: Path, memory_id: str) -> dict[str, Any]:
    out = run_cli("show", memory_id, "--json", env={"GITMEM_REPO": str(repo_path)})
    assert out.code == 0, out.err
    shown: dict[str, Any] = json.loads(out.out)
    return shown


def commits(repo_path: Path) -> int:
    return int(git(repo_path, "rev-list", "--count", "HEAD"))


CORRECTED = [
    ("no, the API timeout should be 30 seconds.", "no, the API timeout should be 60 seconds.",
     "The API timeout should be 60 seconds."),
    ("不对，接口超时时间应该是 30 秒。", "不对，接口超时时间应该是 60 秒。", "接口超时时间应该是 60 秒。"),
    ("Always run the database migrations with alembic before deploying to staging.",
     "Always run the database migrations with flyway before deploying to staging.",
     "Always run the database migrations with flyway before deploying to staging."),
]


@pytest.mark.parametrize(("first", "then", "stored"), CORRECTED, ids=["en-number", "zh-number", "en-tool"])
def test_a_correction_of_one_value_supersedes_the_older_statement(repo_path: Path, tmp_path: Path, first: str,
                                                                   then: str, stored: str) -> None:
    old = cli_capture(repo_path, say(tmp_path, "b3", first), "--session", "b3")["added"][0]
    before = commits(repo_path)
    result = cli_capture(repo_path, say(tmp_path, "b4", then), "--session", "b4")
    assert result["merged"] == [] and result["skipped"] == []
    assert [a["text"] for a in result["added"]] == [stored]
    new = result["added"][0]["id"]
    assert result["superseded"] == [{"old": old["id"], "new": new}]
    # one commit: the new memory and the old one deprecated as superseded by it
    assert commits(repo_path) == before + 1
    changed = git(repo_path, "show", "--name-only", "--format=", "HEAD").split()
    assert sorted(Path(p).stem for p in changed) == sorted([old["id"], new])
    gone = show(repo_path, old["id"])
    assert gone["deprecated"] and gone["superseded_by"] == new
    assert active(repo_path) == [stored]
    assert_clean(repo_path)


@pytest.mark.parametrize(("first", "again", "kind"), [
    ("no, the API timeout should be 30 seconds.", "No, the API timeout should be 30 seconds!", "skipped"),
    ("no, the API timeout should be 30 seconds.", "no, the API timeout really should be 30 seconds.", "skipped"),
    ("no, the API timeout should be 30 seconds.", "no, the API request timeout should always be 30 seconds.",
     "merged"),
    ("不对，接口超时时间应该是 30 秒。", "不对，接口超时时间应该是 30 秒！", "skipped"),
    ("Always run the database migrations with alembic before deploying to staging.",
     "Always run the database migrations with alembic before deploying to staging!", "skipped"),
])
def test_a_restatement_with_the_same_values_still_merges_or_is_skipped(repo_path: Path, tmp_path: Path,
                                                                        first: str, again: str, kind: str) -> None:
    old = cli_capture(repo_path, say(tmp_path, "r1", first))["added"][0]
    before = commits(repo_path)
    result = cli_capture(repo_path, say(tmp_path, "r2", again))
    assert result["added"] == [] and result["superseded"] == []
    if kind == "skipped":
        assert [s["duplicate_of"] for s in result["skipped"]] == [old["id"]]
        assert commits(repo_path) == before
    else:
        assert result["merged"] == [old["id"]]
    assert active(repo_path) == [old["text"]]
    assert_clean(repo_path)


@pytest.mark.parametrize(("first", "then"), [
    ("Never commit secrets to the repository.", "Never commit directly to main."),
    ("Always run the unit tests before pushing.", "Always run the linter before pushing."),
])
def test_two_rules_that_share_words_both_stay(repo_path: Path, tmp_path: Path, first: str, then: str) -> None:
    cli_capture(repo_path, say(tmp_path, "w1", first))
    result = cli_capture(repo_path, say(tmp_path, "w2", then))
    assert len(result["added"]) == 1 and result["superseded"] == []
    assert active(repo_path) == sorted([first, then])


def test_contradictory_corrections_leave_the_newest_active(repo_path: Path, tmp_path: Path) -> None:
    old = cli_capture(repo_path, say(tmp_path, "c1", "不对，端口应该是 8080。"))["added"][0]
    result = cli_capture(repo_path, say(tmp_path, "c2", "不对，端口应该是 9090。"))
    new = result["added"][0]
    assert result["superseded"] == [{"old": old["id"], "new": new["id"]}]
    assert active(repo_path) == ["端口应该是 9090。"]
    assert show(repo_path, old["id"])["superseded_by"] == new["id"]


def test_a_decision_supersedes_a_contradicting_correction(repo_path: Path, tmp_path: Path) -> None:
    old = cli_capture(repo_path, say(tmp_path, "p1", "no, use pnpm not npm."))["added"][0]
    assert old["category"] == "correction"
    result = cli_capture(repo_path, say(tmp_path, "p2", "We decided to use npm instead of pnpm."))
    assert [(a["category"], a["text"]) for a in result["added"]] == [("decision", "Use npm instead of pnpm.")]
    assert result["superseded"] == [{"old": old["id"], "new": result["added"][0]["id"]}]
    assert active(repo_path) == ["Use npm instead of pnpm."]
    assert_clean(repo_path)


def test_within_one_transcript_the_later_statement_wins(repo_path: Path, tmp_path: Path) -> None:
    before = commits(repo_path)
    result = cli_capture(repo_path, say(tmp_path, "one", "不对，端口应该是 8080。", "好的", "不对，端口应该是 9090。"))
    first, second = (a["id"] for a in result["added"])
    assert result["superseded"] == [{"old": first, "new": second}]
    assert commits(repo_path) == before + 1
    assert active(repo_path) == ["端口应该是 9090。"]
    assert show(repo_path, first)["deprecated"]
    assert_clean(repo_path)


def test_a_superseding_statement_holds_where_the_old_one_held(repo: MemoryRepo) -> None:
    old = repo.remember("Use pnpm, not npm.", category="preference", importance=3)  # a global preference
    result = capture(repo, texts=["We decided to use npm instead of pnpm."], project=PROJECT, session="s3")
    new = repo.get(result.added[0].id)
    assert (new.scope, new.project, new.text) == ("global", "", "Use npm instead of pnpm.")
    assert repo.get(old.id).superseded_by == new.id
    assert [m.id for m in repo.list()] == [new.id]
    assert_clean(repo.path)


def test_a_dry_run_shows_what_would_be_superseded(repo_path: Path, tmp_path: Path) -> None:
    old = cli_capture(repo_path, say(tmp_path, "d1", "不对，端口应该是 8080。"))["added"][0]
    before = commits(repo_path)
    dry = cli_capture(repo_path, say(tmp_path, "d2", "不对，端口应该是 9090。"), "--dry-run")
    assert dry["superseded"] == [{"old": old["id"], "new": dry["added"][0]["id"]}]
    assert commits(repo_path) == before and active(repo_path) == ["端口应该是 8080。"]


@pytest.mark.parametrize(("new", "old", "conflict", "replaces"), [
    *((then, first, True, True) for first, then, _ in CORRECTED),
    ("端口应该是 9090。", "端口应该是 8080。", True, True),
    ("Use npm instead of pnpm.", "Use pnpm not npm.", True, True),
    # two rules sharing words: remember --auto asks the user; capture keeps both
    ("Never commit secrets to the repository.", "Never commit directly to main.", True, False),
    ("The API timeout should be 30 seconds!", "The API timeout should be 30 seconds.", False, False),
    ("Use PostgreSQL instead of MySQL.", "Use MySQL instead of PostgreSQL.", True, True),
    ("用 pnpm，不用 npm", "用 npm，不用 pnpm", True, True),
    # one word of five swapped: 4/5 words shared, exactly the merge threshold (computed as 0.7999999999999998)
    ("Run database migrations with flyway.", "Run database migrations with alembic.", True, True),
])
def test_capture_replaces_only_the_conflicts_that_say_which_value_holds(new: str, old: str, conflict: bool,
                                                                        replaces: bool) -> None:
    """``remember --auto`` (gitmem.router) flags a conflict with the same check capture uses; capture replaces the
    older statement only when the difference says which value holds."""
    assert conflicts_with(new, old) is conflict and dedup.supersedes(new, old) is replaces
