"""Extraction from what a commit says about other findings and commits: reverts take back what the reverted commit
taught, a BREAKING CHANGE footer restating its ``!`` subject is one finding, a dependency the message explains
without naming it is folded in, and ``extract`` refuses options it would ignore. Real code and memory repositories,
through the ``gitmem extract`` CLI and the library."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from gitmem.config import Config
from gitmem.learn.commits import related, restates, reverted_sha, sentence
from gitmem.learn.extract import findings_for_commit, from_message
from gitmem.store import document as docs
from gitmem.store.memories import MemoryRepo
from gitmem.text.records import replace
from tests.helpers import PROJECT, assert_clean, code_repo, git, run_cli

SWITCH = "Switch cache from Redis to memcached: Redis eviction broke sessions"
PYPROJECT = '[project]\nname = "shop"\ndependencies = [{deps}]\n'
BREAKING = ("chore!: drop Python 3.9", "BREAKING CHANGE: drop Python 3.9; the minimum is now 3.10")


def _pyproject(*deps: str) -> str:
    return PYPROJECT.format(deps=", ".join(f'"{d}"' for d in deps))


@pytest.fixture
def code(tmp_path: Path, repo_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's code project (origin on GitHub), a pyproject.toml listing its dependencies."""
    monkeypatch.setenv("GITMEM_REPO", str(repo_path))
    root = code_repo(tmp_path)
    (root / "pyproject.toml").write_text(_pyproject("redis>=5", "flask"))
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "initial")
    return root


def _memories(repo_path: Path) -> list[docs.Memory]:
    return MemoryRepo(Config(repo=repo_path)).list(deprecated=True)


def _extract(code: Path, *args: str) -> dict[str, Any]:
    result = run_cli("extract", "--repo", str(code), "--json", *args)
    assert result.code == 0, result.err
    data: dict[str, Any] = json.loads(result.out)
    return data


def _switch_cache(code: Path) -> str:
    (code / "pyproject.toml").write_text(_pyproject("pymemcache>=4", "flask"))
    git(code, "commit", "-q", "-am", SWITCH)
    return git(code, "rev-parse", "HEAD").strip()


# -- 1. a revert takes back what the reverted commit taught ---------------------------------------------
def test_reverted_sha_reads_gits_revert_form() -> None:
    sha = "29ec896ebb3ed8a1acc5507635c9556567dd60ef"
    assert reverted_sha(f'Revert "{SWITCH}"\n\nThis reverts commit {sha}.\n') == sha
    assert reverted_sha(f'Revert "Revert "{SWITCH}""\n\nThis reverts commit {sha}.') == sha
    assert reverted_sha(f'Reapply "{SWITCH}"\n\nThis reverts commit {sha[:10]}.') == sha[:10]
    assert reverted_sha(f"revert(cache): switch to memcached\n\nThis reverts commit {sha}.") == sha
    assert reverted_sha(f"Revert the cache switch\n\nThis reverts commit {sha}.") == ""  # not git's subject
    assert reverted_sha(f'Revert "{SWITCH}"') == ""  # no reverted commit named
    assert reverted_sha(SWITCH) == ""


def test_a_revert_yields_no_findings_of_its_own() -> None:
    message = f'Revert "{SWITCH}"\n\nThis reverts commit 29ec896ebb3ed8a1acc5507635c9556567dd60ef.\n'
    files = {"pyproject.toml": (_pyproject("pymemcache>=4"), _pyproject("redis>=5"))}
    assert findings_for_commit(message, files) == []


def test_revert_deprecates_the_reverted_commits_memories_in_one_commit(code: Path, repo_path: Path) -> None:
    switched = _switch_cache(code)
    assert _extract(code)["added"] == 1
    (decision,) = _memories(repo_path)
    git(code, "revert", "--no-edit", "HEAD")
    revert = git(code, "rev-parse", "HEAD").strip()
    data = _extract(code)
    (result,) = data["results"]
    assert result["reverts"] == switched and result["findings"] == [] and result["added"] == []
    assert result["deprecated"] == [decision.id] and data["deprecated"] == 1
    (memory,) = _memories(repo_path)  # no "Removed dependency pymemcache", no "Added dependency redis"
    assert memory.id == decision.id and memory.deprecated
    assert memory.deprecated_reason.startswith(f"reverted by commit {revert[:12]}")
    assert f'Revert "{SWITCH}"' in memory.deprecated_reason
    repo = MemoryRepo(Config(repo=repo_path))
    (entry,) = repo.log(op="deprecate")  # one commit
    assert entry.trailers["Gitmem-Commit"] == [revert] and entry.trailers["Gitmem-Reverts"] == [switched]
    assert entry.source == f"commit:{PROJECT}@{revert}" and entry.ids == [decision.id]
    assert _extract(code)["deprecated"] == 0  # running it again changes nothing
    assert len(repo.log(op="deprecate")) == 1
    assert_clean(repo_path)


def test_reverting_the_revert_restores_the_memories(code: Path, repo_path: Path) -> None:
    _switch_cache(code)
    _extract(code)
    git(code, "revert", "--no-edit", "HEAD")
    _extract(code)
    git(code, "revert", "--no-edit", "HEAD")  # git 2.39: Revert "Revert "…""; git 2.43+: Reapply "…"
    data = _extract(code)
    assert data["restored"] == 1 and data["added"] == 0
    (memory,) = _memories(repo_path)
    assert not memory.deprecated and memory.deprecated_reason == "" and memory.text == SWITCH
    (entry,) = MemoryRepo(Config(repo=repo_path)).log(op="restore")
    assert entry.subject.startswith("reapply: Switch cache")  # the log says what happened ("revert:" before)


def test_a_change_landed_again_after_its_revert_is_learned_again(code: Path, repo_path: Path) -> None:
    first = git(code, "rev-parse", "HEAD").strip()
    switched = _switch_cache(code)
    _extract(code)
    git(code, "revert", "--no-edit", "HEAD")
    _extract(code)
    git(code, "cherry-pick", switched)  # the same message: its finding is no longer skipped as known
    assert _extract(code)["added"] == 1
    found = sorted((m.deprecated, m.source_ref) for m in _memories(repo_path) if m.text == SWITCH)
    assert found == [(False, f"{PROJECT}@{git(code, 'rev-parse', 'HEAD').strip()}"), (True, f"{PROJECT}@{switched}")]
    commits = len(MemoryRepo(Config(repo=repo_path)).log())
    again = _extract(code, "--range", f"{first}..HEAD")  # a backfill over all of it changes nothing
    assert (again["commits"], again["added"], again["deprecated"], again["restored"]) == (3, 0, 0, 0)
    assert len(MemoryRepo(Config(repo=repo_path)).log()) == commits


def test_backfill_over_a_revert_of_a_revert_twice_commits_once(code: Path, repo_path: Path) -> None:
    first = git(code, "rev-parse", "HEAD").strip()
    _switch_cache(code)
    git(code, "revert", "--no-edit", "HEAD")
    git(code, "revert", "--no-edit", "HEAD")
    data = _extract(code, "--range", f"{first}..HEAD")
    assert (data["added"], data["deprecated"], data["restored"]) == (1, 1, 1)
    commits = len(MemoryRepo(Config(repo=repo_path)).log())
    again = _extract(code, "--range", f"{first}..HEAD")
    assert (again["added"], again["deprecated"], again["restored"]) == (0, 0, 0)
    assert len(MemoryRepo(Config(repo=repo_path)).log()) == commits
    assert [(m.text, m.deprecated) for m in _memories(repo_path)] == [(SWITCH, False)]


def test_backfill_over_a_commit_and_its_revert(code: Path, repo_path: Path) -> None:
    first = git(code, "rev-parse", "HEAD").strip()
    _switch_cache(code)
    git(code, "revert", "--no-edit", "HEAD")
    result = run_cli("extract", "--range", f"{first}..HEAD", "--repo", str(code))
    assert result.code == 0, result.err
    assert "1 memory added, 1 deprecated to project" in result.err
    assert f"deprecated {SWITCH}" in " ".join(result.out.split())
    assert [(m.text, m.deprecated) for m in _memories(repo_path)] == [(SWITCH, True)]


def test_the_post_commit_hook_takes_back_a_revert(code: Path, repo_path: Path) -> None:
    """The user's way: the hook extracts the commit, then its ``git revert``."""
    assert run_cli("git-hooks", "install", "--repo", str(code)).code == 0
    _switch_cache(code)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not _memories(repo_path):
        time.sleep(0.1)
    time.sleep(0.3)
    git(code, "revert", "--no-edit", "HEAD")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not all(m.deprecated for m in _memories(repo_path)):
        time.sleep(0.1)
    time.sleep(0.5)  # anything else the background run would store lands by now
    assert [(m.text, m.deprecated) for m in _memories(repo_path)] == [(SWITCH, True)]


def _decisions(code: Path, messages: list[str]) -> list[str]:
    shas = []
    for number, message in enumerate(messages):
        (code / f"notes{number}.txt").write_text(message)
        git(code, "add", ".")
        git(code, "commit", "-q", "-m", message)
        shas.append(git(code, "rev-parse", "HEAD").strip())
    return shas


DECISIONS = ["Switch the queue from Celery to RQ", "Use ruff instead of flake8", "Adopt uv for installs"]


def test_a_revert_takes_its_decision_out_of_a_compaction_summary(code: Path, repo_path: Path) -> None:
    """``gitmem compact`` folded the commits' decisions into one summary; reverting one of the commits left its
    decision active in the summary (the revert found only its deprecated memory)."""
    first = git(code, "rev-parse", "HEAD").strip()
    shas = _decisions(code, DECISIONS)
    _extract(code, "--range", f"{first}..HEAD")
    assert run_cli("compact", "--min-size", "2").code == 0
    (before,) = [m for m in _memories(repo_path) if not m.deprecated]
    assert all(text in before.text for text in DECISIONS)
    git(code, "revert", "--no-edit", shas[1])
    data = _extract(code)
    found = {m.id: m for m in _memories(repo_path)}
    (summary,) = [m for m in found.values() if not m.deprecated]
    assert summary.id == before.id and "Use ruff instead of flake8" not in summary.text
    assert DECISIONS[0] in summary.text and DECISIONS[2] in summary.text
    assert summary.text.startswith("Summary of 2 memories")
    (ruff,) = [m for m in found.values() if m.text == DECISIONS[1]]
    assert ruff.deprecated and ruff.deprecated_reason.startswith("reverted by commit") and not ruff.superseded_by
    assert data["deprecated"] == 1 and data["restored"] == 0
    # reverting the revert: the decision is back, on its own (the summary does not hold it again)
    git(code, "revert", "--no-edit", "HEAD")
    assert _extract(code)["restored"] == 1
    active = sorted(m.text.splitlines()[0] for m in _memories(repo_path) if not m.deprecated)
    assert active == ["Summary of 2 memories about commit:", DECISIONS[1]]
    assert_clean(repo_path)


def test_a_revert_that_leaves_one_member_retires_the_summary(code: Path, repo_path: Path) -> None:
    first = git(code, "rev-parse", "HEAD").strip()
    shas = _decisions(code, DECISIONS)
    _extract(code, "--range", f"{first}..HEAD")
    assert run_cli("compact", "--min-size", "2").code == 0
    for sha in shas[:2]:
        git(code, "revert", "--no-edit", sha)
        _extract(code)
    state = sorted((m.text.splitlines()[0], m.deprecated) for m in _memories(repo_path))
    assert state == [("Adopt uv for installs", False), ("Summary of 2 memories about commit:", True),
                     ("Switch the queue from Celery to RQ", True), ("Use ruff instead of flake8", True)]


# -- 1b. an amended or rebased commit hands what it taught to the commit that replaced it ----------------
def _head(code: Path) -> str:
    return git(code, "rev-parse", "HEAD").strip()


def _rewritten(code: Path, kind: str, pairs: list[tuple[str, str]], *args: str) -> dict[str, Any]:
    result = run_cli("extract", "--repo", str(code), "--json", "--rewritten", kind, *args,
                     stdin="".join(f"{old} {new}\n" for old, new in pairs))
    assert result.code == 0, result.err
    data: dict[str, Any] = json.loads(result.out)
    return data


def _settled(repo_path: Path, check: Any, seconds: float = 30) -> list[docs.Memory]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not check(_memories(repo_path)):
        time.sleep(0.1)
    time.sleep(0.5)  # anything else the background runs would store lands by now
    return _memories(repo_path)


def test_an_amend_that_rewords_the_decision_deprecates_the_old_wording(code: Path, repo_path: Path) -> None:
    """The user's way, through the hooks: the decision first committed is amended; the discarded commit's memory
    must not stay active beside the amended one's."""
    assert run_cli("git-hooks", "install", "--repo", str(code)).code == 0
    first = _switch_cache(code)
    _settled(repo_path, lambda found: len(found) == 1)
    reworded = "Switch cache from Redis to memcached: Redis eviction broke carts"
    git(code, "commit", "-q", "--amend", "-m", reworded)
    amended = _head(code)
    found = _settled(repo_path, lambda found: len(found) == 2 and any(m.deprecated for m in found))
    state = sorted((m.text, m.deprecated, m.source_ref) for m in found)
    assert state == [(reworded, False, f"{PROJECT}@{amended}"), (SWITCH, True, f"{PROJECT}@{first}")]
    (old,) = [m for m in found if m.deprecated]
    assert old.deprecated_reason.startswith(f"rewritten as commit {amended[:12]} (amend: ")
    assert_clean(repo_path)


def test_an_amend_that_keeps_the_message_moves_the_memory_so_a_revert_still_finds_it(code: Path,
                                                                                    repo_path: Path) -> None:
    assert run_cli("git-hooks", "install", "--repo", str(code)).code == 0
    _switch_cache(code)
    _settled(repo_path, lambda found: len(found) == 1)
    (code / "README.md").write_text("forgot this\n")
    git(code, "add", "README.md")
    git(code, "commit", "-q", "--amend", "--no-edit")
    amended = _head(code)
    (memory,) = _settled(repo_path, lambda found: found[0].source_ref.endswith(amended))
    assert (memory.text, memory.deprecated, memory.source_ref) == (SWITCH, False, f"{PROJECT}@{amended}")
    git(code, "revert", "--no-edit", "HEAD")  # reverting the amended commit takes the decision back
    (memory,) = _settled(repo_path, lambda found: found[0].deprecated)
    assert memory.deprecated and memory.deprecated_reason.startswith("reverted by commit")


def test_a_rebase_that_squashes_keeps_what_the_squashed_message_says(code: Path, repo_path: Path) -> None:
    switched = _switch_cache(code)
    (code / "Dockerfile").write_text("FROM python:3.12-slim\n")
    git(code, "add", "Dockerfile")
    git(code, "commit", "-q", "-m", "Containerise the shop")
    docker = _head(code)
    assert _extract(code, "--range", "HEAD~2..HEAD")["added"] == 2
    # squash both into one commit with the first message (a fixup): the Dockerfile is still in its diff
    git(code, "reset", "-q", "--soft", "HEAD~2")
    git(code, "commit", "-q", "-m", SWITCH)
    squashed = _head(code)
    data = _rewritten(code, "rebase", [(switched, squashed), (docker, squashed)])
    assert len(data["moved"]) == 2 and data["dropped"] == [] and data["added"] == 0
    assert {(m.deprecated, m.source_ref) for m in _memories(repo_path)} == {(False, f"{PROJECT}@{squashed}")}
    # a reword that drops the decision: its memory goes, the Dockerfile's stays
    git(code, "commit", "-q", "--amend", "-m", "wip")
    data = _rewritten(code, "amend", [(squashed, _head(code))])
    found = {m.text: m for m in _memories(repo_path)}
    assert found[SWITCH].deprecated and data["dropped"] == [found[SWITCH].id]
    assert not found["Docker base image python:3.12-slim (Dockerfile)"].deprecated
    again = _rewritten(code, "amend", [(squashed, _head(code))])
    assert (again["moved"], again["dropped"], again["added"]) == ([], [], 0)
    git(code, "commit", "-q", "--amend", "-m", SWITCH)  # and back: the decision is learned again
    assert _extract(code)["added"] == 1
    assert sorted(m.deprecated for m in _memories(repo_path) if m.text == SWITCH) == [False, True]
    assert_clean(repo_path)


def test_an_old_commits_run_that_starts_after_the_amends_stores_nothing(code: Path, repo_path: Path) -> None:
    """An agent commits and amends within a second: the amend's background run can start before the first
    commit's. It found nothing to move, and the old wording landed afterwards, active beside the new one."""
    first = _switch_cache(code)
    reworded = "Switch cache from Redis to memcached: Redis eviction broke carts"
    git(code, "commit", "-q", "--amend", "-m", reworded)
    data = _rewritten(code, "amend", [(first, _head(code))])  # the amend's run first...
    assert data["added"] == 1
    late = _extract(code, "--commit", first)  # ...then the first commit's
    assert late["added"] == 0 and late["results"][0]["skipped"] == f"rewritten as {_head(code)[:10]}"
    assert [(m.text, m.deprecated) for m in _memories(repo_path)] == [(reworded, False)]


def test_two_extractions_at_once_store_a_decision_once(code: Path, repo_path: Path) -> None:
    from tests.helpers import GITMEM

    shas = []
    for _ in range(2):
        git(code, "commit", "-q", "--allow-empty", "-m", "Adopt Kafka for events")
        shas.append(_head(code))
    runs = [subprocess.Popen([GITMEM, "extract", "--commit", sha, "--repo", str(code), "--quiet"]) for sha in shas]
    assert [run.wait(timeout=60) for run in runs] == [0, 0]
    assert [m.text for m in _memories(repo_path)] == ["Adopt Kafka for events"]


def test_a_rebase_learns_its_result_once(code: Path, repo_path: Path) -> None:
    """An interactive rebase (reword, fixup): the post-commit hook leaves the rebase's intermediate commits alone
    (one process for all, not two a commit), and the post-rewrite run learns the final commits."""
    assert run_cli("git-hooks", "install", "--repo", str(code)).code == 0
    base = _head(code)
    _decisions(code, DECISIONS)
    _settled(repo_path, lambda found: len(found) == 3)
    before = set(git(code, "rev-list", f"{base}..HEAD").split())
    editor = "sed -i -e '2s/^pick/reword/' -e '3s/^pick/fixup/'"
    git(code, "-c", f"sequence.editor={editor}", "-c", "core.editor=sed -i '1s/.*/Use ruff instead of flake8 and "
        "black/'", "rebase", "-q", "-i", base)
    head = git(code, "rev-parse", "HEAD").strip()
    reachable = set(git(code, "rev-list", f"{base}..HEAD").split())
    found = _settled(repo_path, lambda found: any("black" in m.text for m in found))
    time.sleep(2)
    found = _memories(repo_path)
    active = sorted((m.text, m.source_ref.rpartition("@")[2] in reachable) for m in found if not m.deprecated)
    # the fixup's message is dropped with its commit: its decision goes with it
    assert active == [("Switch the queue from Celery to RQ", True), ("Use ruff instead of flake8 and black", True)]
    assert len(reachable) == 2 and head in reachable
    # nothing was learned from the commits the rebase made and replaced at once (the reworded one before the fixup)
    log = MemoryRepo(Config(repo=repo_path)).log()
    learned = {sha for entry in log for sha in entry.trailers.get("Gitmem-Commit", [])}
    assert learned <= before | reachable
    assert_clean(repo_path)


def test_a_revert_of_a_revert_of_a_revert_takes_the_decision_back(code: Path, repo_path: Path) -> None:
    _switch_cache(code)
    _extract(code)
    outcomes = []
    for _ in range(3):
        git(code, "revert", "--no-edit", "HEAD")
        _extract(code)
        (memory,) = _memories(repo_path)
        outcomes.append(memory.deprecated)
    assert outcomes == [True, False, True]


def test_reverting_a_cherry_pick_takes_back_the_decision_it_restated(code: Path, repo_path: Path) -> None:
    """The cherry-pick's finding is skipped as known (its memory names the feature branch's commit): its revert
    found nothing to take back."""
    main = git(code, "rev-parse", "--abbrev-ref", "HEAD").strip()
    git(code, "checkout", "-q", "-b", "feature")
    switched = _switch_cache(code)
    _extract(code)
    git(code, "checkout", "-q", main)
    git(code, "commit", "-q", "--allow-empty", "-m", "Meanwhile on main")  # the pick is a commit of its own
    git(code, "cherry-pick", switched)
    assert _head(code) != switched
    assert _extract(code)["added"] == 0
    git(code, "revert", "--no-edit", "HEAD")
    assert _extract(code)["deprecated"] == 1
    (memory,) = _memories(repo_path)
    assert memory.deprecated and memory.source_ref == f"{PROJECT}@{switched}"


def test_a_memory_edited_by_hand_keeps_the_users_wording_through_an_amend(code: Path, repo_path: Path) -> None:
    first = _switch_cache(code)
    _extract(code)
    (memory,) = _memories(repo_path)
    repo = MemoryRepo(Config(repo=repo_path))
    repo.save(replace(memory, text="Cache is memcached; Redis eviction broke sessions"))
    git(code, "commit", "-q", "--amend", "-m", "Switch cache to memcached")
    data = _rewritten(code, "amend", [(first, _head(code))])
    found = {m.text: m for m in _memories(repo_path)}
    memory = found["Cache is memcached; Redis eviction broke sessions"]
    assert data["dropped"] == [] and not memory.deprecated and memory.source_ref == f"{PROJECT}@{_head(code)}"
    assert not found["Switch cache to memcached"].deprecated  # what the amended message says, learned


@pytest.mark.parametrize("given", ["not a sha line\n", "abc123\n"])
def test_rewritten_input_that_is_not_gits_is_refused(code: Path, repo_path: Path, given: str) -> None:
    result = run_cli("extract", "--repo", str(code), "--rewritten", "amend", stdin=given)
    assert result.code == 1 and "is not 'OLD NEW' commit SHAs" in result.err and "Traceback" not in result.err


# -- 2. a BREAKING CHANGE footer restating the ! subject is one finding ---------------------------------
def test_breaking_footer_subsumes_the_bang_subject() -> None:
    (finding,) = from_message("\n\n".join(BREAKING))
    assert finding.text == "Breaking change: drop Python 3.9; the minimum is now 3.10"
    assert finding.category == "constraint" and finding.importance == 4 and "chore" in finding.tags
    # without the !, the subject's decision is restated by the footer all the same
    (finding,) = from_message("build: dropped Python 3.9\n\nBREAKING CHANGE: drop Python 3.9")
    assert finding.text == "Breaking change: drop Python 3.9"


def test_a_footer_saying_something_else_keeps_the_subject_as_a_sentence() -> None:
    findings = from_message("feat!: drop Python 3.9\n\nBREAKING CHANGE: the config file moved to ~/.shop")
    assert [f.text for f in findings] == ["Drop Python 3.9", "Breaking change: the config file moved to ~/.shop"]
    assert [f.text for f in from_message("fix: never log tokens")] == ["Never log tokens"]


@pytest.mark.parametrize(("message", "text", "tag"), [
    ("chore：統一時區為 UTC；不再使用本地時間", "統一時區為 UTC；不再使用本地時間", "chore"),
    ("fix（api）：不要再返回 float 金额", "不要再返回 float 金额", "fix"),
    ("重构：金额改用整数分", "金额改用整数分", "refactor"),
])
def test_a_chinese_commit_s_type_is_read_with_a_full_width_colon(message: str, text: str, tag: str) -> None:
    """"chore：統一時區為 UTC…" was stored with its "chore：" and tagged commit only."""
    (finding,) = from_message(message)
    assert finding.text.rstrip("。") == text and tag in finding.tags


def test_wording_helpers() -> None:
    assert restates("Breaking change: drop Python 3.9; the minimum is now 3.10", "drop Python 3.9")
    assert not restates("Breaking change: drop Python 3.9", "drop Python 3.9 and 3.8 support")
    assert sentence("drop Python 3.9") == "Drop Python 3.9"
    for kept in ("iOS builds must be signed", "npm@9 is required", ".env must never be committed", "改用 Vite"):
        assert sentence(kept) == kept


def test_breaking_commit_is_one_memory(code: Path, repo_path: Path) -> None:
    (code / "README.md").write_text("shop\n")
    git(code, "add", "README.md")
    git(code, "commit", "-q", "-m", BREAKING[0], "-m", BREAKING[1])
    assert _extract(code)["added"] == 1
    (memory,) = _memories(repo_path)
    assert memory.text == "Breaking change: drop Python 3.9; the minimum is now 3.10"
    assert memory.category == "constraint"


def test_a_key_in_a_long_commit_subject_is_not_cut_into_the_memory_commits_subject(code: Path,
                                                                                     repo_path: Path) -> None:
    """The memory repository's commit subject is the memory's title, cut at 80 characters: it was cut from the
    text before redaction, so 15 of an AWS key's 20 characters reached git, no longer recognisable as a key."""
    key = "AKIA" + "ZXCVBNMLKJHGFDSA"
    (code / "README.md").write_text("shop\n")
    git(code, "add", "README.md")
    git(code, "commit", "-q", "-m", f"Switch cache from Redis to memcache, and never use {key} in any code")
    assert _extract(code)["added"] == 1
    logged = git(repo_path, "log", "-1", "--format=%B")
    assert "[REDACTED:aws" in logged and key[:8] not in logged and "ZXCVBNM" not in logged
    # a directive stored by remember --auto, whose subject is its title too
    stored = run_cli("--repo", str(repo_path), "remember", "--auto", f"Always keep the deploy key {key} out of the "
                     "repo, never commit it anywhere at all")
    assert stored.code == 0 and "stored directive-" in stored.out, stored.err
    assert git(repo_path, "log", "-1", "--format=%s").startswith("directive: Always keep the deploy key [REDACTED")
    assert "ZXCVBNM" not in git(repo_path, "log", "--all", "-p")
    assert_clean(repo_path)


def test_a_finding_with_a_secret_is_stored_once_however_often_extract_runs(code: Path, repo_path: Path) -> None:
    """Known texts are the stored memories', secrets redacted: a finding was compared before redaction, so it
    never matched and every run stored it again."""
    (code / "README.md").write_text("shop\n")
    git(code, "add", "README.md")
    git(code, "commit", "-q", "-m", "feat: read the key from env\n\nNever hardcode keys like AKIAIOSFODNN7EXAMPLE.")
    assert _extract(code, "--range", "HEAD~1..HEAD")["added"] == 1
    assert _extract(code, "--range", "HEAD~1..HEAD")["added"] == 0
    texts = [m.text for m in MemoryRepo(Config(repo=repo_path)).list()]
    assert len(texts) == 1 and "AKIAIOSFODNN7EXAMPLE" not in texts[0] and "REDACTED" in texts[0]


# -- 3. a dependency the message explains without naming it is folded in --------------------------------
def test_switch_folds_both_sides_of_the_dependency_change() -> None:
    files = {"pyproject.toml": (_pyproject("redis>=5", "flask"), _pyproject("pymemcache>=4", "flask"))}
    (finding,) = findings_for_commit(SWITCH, files)
    assert finding.text == SWITCH and "dependency" in finding.tags
    assert finding.why == "pyproject.toml: +pymemcache; pyproject.toml: -redis"


def test_the_added_half_of_a_from_to_pair_is_folded() -> None:
    # "worker" names no package: the one package added beside the one removed is what "to …" switched to
    files = {"requirements.txt": ("celery\nflask\n", "rq\nflask\n")}
    (finding,) = findings_for_commit("Switch background jobs from Celery to a simpler worker", files)
    assert finding.why == "requirements.txt: +rq; requirements.txt: -celery"


def test_folding_stays_conservative() -> None:
    cases: list[tuple[str, dict[str, tuple[str, str]], list[str]]] = [
        # pymemcache is folded; an unrelated package added in the same commit stays a memory of its own
        (SWITCH, {"pyproject.toml": (_pyproject("redis"), _pyproject("pymemcache", "flask-login"))},
         ["Added dependency flask-login (pyproject.toml)"]),
        # generic words ("python") relate nothing
        ("Drop Python 3.9", {"requirements.txt": ("", "python-dateutil\n")},
         ["Added dependency python-dateutil (requirements.txt)"]),
        # a pair without "from X to Y": nothing says the one replaced the other
        ("Adopt a faster parser", {"requirements.txt": ("simplejson\n", "orjson\n")},
         ["Added dependency orjson (requirements.txt)", "Removed dependency simplejson (requirements.txt)"]),
    ]
    for message, files, separate in cases:
        texts = [f.text for f in findings_for_commit(message, files)]
        assert texts == [message, *separate]


def test_related_names() -> None:
    assert related(["pymemcache"], SWITCH)
    assert related(["urllib3"], "Switch HTTP client from urllib to requests")
    assert not related(["cachetools"], "Switch from http to grpc")
    assert not related(["pytest"], "Add tests for checkout")  # "test" is too short to relate


def test_switch_commit_is_one_memory(code: Path, repo_path: Path) -> None:
    _switch_cache(code)
    assert _extract(code)["added"] == 1
    (memory,) = _memories(repo_path)
    assert memory.text == SWITCH and memory.why == "pyproject.toml: +pymemcache; pyproject.toml: -redis"


# -- 4. options extract would ignore ---------------------------------------------------------------------
def test_commit_and_range_cannot_be_combined(code: Path, repo_path: Path) -> None:
    _switch_cache(code)
    result = run_cli("extract", "--commit", "HEAD", "--range", "HEAD~1..HEAD", "--repo", str(code))
    assert result.code == 2 and result.out == ""
    (line,) = result.err.splitlines()
    assert "--commit, --range and --rewritten cannot be combined" in line
    assert _memories(repo_path) == []


def test_husky_managed_hooks_are_left_alone(code: Path) -> None:
    """husky 9 (core.hooksPath .husky/_, git-ignored) runs .husky/<hook> from a script named after the hook:
    chained as post-commit.pre-gitmem it looked for .husky/post-commit.pre-gitmem, and the team's hook stopped
    running."""
    runner = code / ".husky" / "_"
    runner.mkdir(parents=True)
    (runner / "h").write_text('#!/usr/bin/env sh\nn=$(basename "$0")\ns=$(dirname "$(dirname "$0")")/$n\n'
                              '[ ! -f "$s" ] && exit 0\nsh -e "$s" "$@"\n')
    (runner / "post-commit").write_text('#!/usr/bin/env sh\n. "$(dirname "$0")/h"\n')
    (runner / "post-commit").chmod(0o755)
    (code / ".husky" / "post-commit").write_text("echo team hook ran\n")
    (code / ".gitignore").write_text(".husky/_\n")
    git(code, "add", ".gitignore", ".husky/post-commit")
    git(code, "commit", "-q", "-m", "husky")
    git(code, "config", "core.hooksPath", ".husky/_")
    refused = run_cli("git-hooks", "install", "--repo", str(code))
    assert refused.code == 1 and "husky manages the hooks" in refused.err
    assert "extract --commit HEAD" in refused.err and "extract --rewritten" in refused.err
    assert sorted(p.name for p in runner.iterdir()) == ["h", "post-commit"]
    result = subprocess.run(["git", "-C", str(code), "commit", "--allow-empty", "-m", "x"], capture_output=True,
                            text=True, check=True)
    assert "team hook ran" in result.stdout + result.stderr


def test_a_rebase_drop_deprecates_and_a_change_upstream_has_moves(code: Path, repo_path: Path) -> None:
    """git names no new commit for a commit a rebase dropped (``drop``, or its change already upstream): its
    memory stayed active, on a commit no branch had."""
    main = git(code, "rev-parse", "--abbrev-ref", "HEAD").strip()
    base = _head(code)
    git(code, "checkout", "-q", "-b", "work")
    adopt, ruff = _decisions(code, ["Adopt uv for installs", "Use ruff instead of flake8"])
    _extract(code, "--range", f"{base}..HEAD")
    git(code, "checkout", "-q", main)
    git(code, "commit", "-q", "--allow-empty", "-m", "Meanwhile on main")
    git(code, "cherry-pick", adopt)  # the upstream takes the first change
    upstream = _head(code)
    git(code, "checkout", "-q", "work")
    git(code, "rebase", "-q", main)  # drops the first commit: its change is upstream already
    assert git(code, "rev-list", "--count", f"{main}..HEAD").strip() == "1"
    data = _rewritten(code, "rebase", [(ruff, _head(code))], "--orig-head", ruff)
    found = {m.text: m for m in _memories(repo_path)}
    assert found["Adopt uv for installs"].source_ref == f"{PROJECT}@{upstream}"
    assert found["Use ruff instead of flake8"].source_ref == f"{PROJECT}@{_head(code)}"
    assert len(data["moved"]) == 2 and not any(m.deprecated for m in found.values())
    # and a plain drop: the decision goes with its commit
    rebased = _head(code)
    git(code, "-c", "sequence.editor=sed -i '1s/^pick/drop/'", "rebase", "-q", "-i", main)
    data = _rewritten(code, "rebase", [], "--orig-head", rebased)
    (memory,) = [m for m in _memories(repo_path) if m.text == "Use ruff instead of flake8"]
    assert memory.deprecated and memory.deprecated_reason == "its commit was dropped by git rebase"
    assert data["dropped"] == [memory.id]


def test_uninstall_says_what_it_left_when_another_tool_wrote_over_the_hook(code: Path) -> None:
    hooks = code / ".git" / "hooks"
    (hooks / "post-commit").write_text("#!/bin/sh\necho team\n")
    assert run_cli("git-hooks", "install", "--repo", str(code)).code == 0
    (hooks / "post-commit").write_text("#!/bin/sh\necho another tool\n")  # e.g. a hook manager's reinstall
    result = run_cli("git-hooks", "uninstall", "--repo", str(code))
    assert result.code == 0 and f"removed {hooks / 'post-rewrite'}" in result.out
    assert f"left {hooks / 'post-commit.pre-gitmem'}" in result.err and "merge the two by hand" in result.err
    assert (hooks / "post-commit").read_text() == "#!/bin/sh\necho another tool\n"


def test_extract_marks_what_the_project_knew_already(code: Path, repo_path: Path) -> None:
    _switch_cache(code)
    first = run_cli("extract", "--repo", str(code))
    again = run_cli("extract", "--repo", str(code))
    assert SWITCH in first.out and "(known)" not in first.out
    assert f"{SWITCH}  (known)" in again.out and "0 memories added" in again.err
    assert _extract(code)["results"][0]["findings"][0]["known"] is True


def test_a_background_extraction_that_fails_is_in_doctors_report(code: Path, repo_path: Path) -> None:
    """The hooks' runs are detached with their output thrown away: a failing one left no trace anywhere."""
    failed = run_cli("extract", "--commit", "0123456789abcdef", "--repo", str(code), "--quiet")
    assert failed.code == 1
    report = run_cli("doctor")
    assert "git hook: extract: no commit '0123456789abcdef'" in report.out + report.err


def test_the_daily_project_scan_brings_an_earlier_versions_hooks_up_to_date(code: Path) -> None:
    """Repositories whose hook an earlier version installed had no post-rewrite hook until the user ran install
    again in each of them; the session start's background scan updates them."""
    hooks = code / ".git" / "hooks"
    assert run_cli("git-hooks", "install", "--repo", str(code)).code == 0
    current = (hooks / "post-commit").read_text()
    (hooks / "post-rewrite").unlink()
    older = current.replace("# during a rebase", "# (an earlier version)\n# during a rebase")
    (hooks / "post-commit").write_text(older)
    result = run_cli("project", "scan", "--cwd", str(code), "--force")
    assert result.code == 0, result.err
    assert f"installed {hooks / 'post-rewrite'}" in result.out and f"updated {hooks / 'post-commit'}" in result.out
    assert (hooks / "post-commit").read_text() == current  # the executable it named is kept
    assert (hooks / "post-rewrite").is_file()
    again = run_cli("project", "scan", "--cwd", str(code), "--force")
    assert "gitmem's git hook" not in again.out
    assert not (hooks / "post-commit.pre-gitmem").exists()


def test_a_hand_added_hook_line_learns_nothing_in_the_middle_of_a_rebase(code: Path, repo_path: Path) -> None:
    """A tracked hooks folder or husky gets the hook lines by hand, without the scripts' rebase check: the commits
    a rebase makes and replaces at once were learned, and its inner amends handled, one by one."""
    first = _switch_cache(code)
    git(code, "commit", "-q", "--amend", "-m", "wip")
    (code / ".git" / "rebase-merge").mkdir()  # as git has it while a rebase runs
    during = _extract(code, "--commit", "HEAD")
    assert during["added"] == 0 and during["results"][0]["skipped"] == "made during a rebase"
    assert _rewritten(code, "amend", [(first, _head(code))])["added"] == 0
    (code / ".git" / "rebase-merge").rmdir()
    assert _extract(code, "--commit", "HEAD")["results"][0]["skipped"] == ""
    found = _memories(repo_path)  # the amended commit's own findings (its diff), learned after the rebase
    assert found and {m.source_ref for m in found} == {f"{PROJECT}@{_head(code)}"}
    assert SWITCH not in [m.text for m in found]


def test_amends_in_quick_succession_leave_the_last_wording_whatever_order_their_runs_take(code: Path,
                                                                                         repo_path: Path) -> None:
    """Each amend starts a background run; they took the lock in any order, and a run for an early amend stored
    its new commit's wording after a later amend had replaced that commit."""
    shas = []
    for version in (1, 2, 3):
        git(code, "commit", "-q", "--allow-empty", *(["--amend"] if version > 1 else []),
            "-m", f"Adopt Kafka v{version} for events")
        shas.append(_head(code))
    _rewritten(code, "amend", [(shas[1], shas[2])])  # the second amend's run first...
    _rewritten(code, "amend", [(shas[0], shas[1])])  # ...then the first's
    for sha in shas:  # and the commits' own runs last
        _extract(code, "--commit", sha)
    active = [(m.text, m.source_ref) for m in _memories(repo_path) if not m.deprecated]
    assert active == [("Adopt Kafka v3 for events", f"{PROJECT}@{shas[2]}")]


def test_a_rebase_learns_the_commits_made_at_its_stops(code: Path, repo_path: Path) -> None:
    """git names no pair for a commit made at an edit stop (a split) or by --exec: they were never learned, and
    the edited commit, still on the branch, was deprecated as rewritten into the inserted one."""
    assert run_cli("git-hooks", "install", "--repo", str(code)).code == 0
    base = _head(code)
    _decisions(code, ["Drop support for Python 3.8", "chore: tidy"])
    _settled(repo_path, lambda found: len(found) == 1)
    env = {**os.environ, "GIT_SEQUENCE_EDITOR": "sed -i '1s/^pick/edit/'", "GIT_EDITOR": "true"}
    subprocess.run(["git", "-C", str(code), "rebase", "-q", "-i", base], env=env, check=True, capture_output=True)
    (code / "g.txt").write_text("x\n")
    git(code, "add", "g.txt")
    git(code, "commit", "-q", "-m", "Use ruff instead of flake8")  # inserted at the stop
    git(code, "-c", "core.editor=true", "rebase", "--continue")
    found = _settled(repo_path, lambda found: any("ruff" in m.text for m in found))
    time.sleep(2)
    found = _memories(repo_path)
    assert sorted((m.text, m.deprecated) for m in found) == [("Drop support for Python 3.8", False),
                                                            ("Use ruff instead of flake8", False)]


def test_a_generated_message_gives_at_most_fifty_findings(code: Path, repo_path: Path) -> None:
    message = "Release notes\n\n" + "\n".join(f"Always run linter{i} before merging." for i in range(300))
    git(code, "commit", "-q", "--allow-empty", "-m", message)
    data = _extract(code)
    assert data["added"] == 50 and data["results"][0]["left_out"] == 250
    assert len(_memories(repo_path)) == 50


def test_a_message_in_the_encoding_its_commit_names_is_read_in_it(code: Path, repo_path: Path) -> None:
    (code / "m.txt").write_bytes("Migrate caf\xe9 service to Postgres; never use MySQL\n".encode("latin-1"))
    git(code, "-c", "i18n.commitEncoding=latin1", "commit", "-q", "--allow-empty", "-F", str(code / "m.txt"))
    _extract(code)
    assert any("café" in m.text for m in _memories(repo_path))


def test_a_run_kept_waiting_past_its_deadline_says_how_to_catch_up(code: Path, repo_path: Path) -> None:
    from gitmem.files.locks import file_lock

    sha = _switch_cache(code)
    (repo_path / "local").mkdir(exist_ok=True)
    with file_lock(str(repo_path / "local" / "extract.lock")):  # another extraction, running long
        run = run_cli("extract", "--commit", sha, "--repo", str(code), "--quiet", "--deadline", "2")
    assert run.code == 3
    report = run_cli("doctor").out
    assert "extract: stopped at its 2 s deadline" in report and f"gitmem extract --commit {sha}" in report


def test_reverting_a_merge_takes_back_what_its_branch_taught(code: Path, repo_path: Path) -> None:
    main = git(code, "rev-parse", "--abbrev-ref", "HEAD").strip()
    git(code, "checkout", "-q", "-b", "topic")
    _decisions(code, ["Replace moment with dayjs"])
    git(code, "checkout", "-q", main)
    git(code, "merge", "-q", "--no-ff", "topic", "-m", "Merge branch topic")
    _extract(code, "--range", "HEAD~1..HEAD")  # the merge's second parent: the topic commit
    assert [m.text for m in _memories(repo_path)] == ["Replace moment with dayjs"]
    git(code, "revert", "-m", "1", "--no-edit", "HEAD")
    assert _extract(code)["deprecated"] == 1
    assert [(m.text, m.deprecated) for m in _memories(repo_path)] == [("Replace moment with dayjs", True)]


def test_a_commit_checked_out_in_another_worktree_is_not_dropped(code: Path, repo_path: Path,
                                                                 tmp_path: Path) -> None:
    base = _head(code)
    second = _decisions(code, ["Adopt uv for installs", "Use ruff instead of flake8"])[1]
    _extract(code, "--range", f"{base}..HEAD")
    git(code, "worktree", "add", "-q", "--detach", str(tmp_path / "wt"), second)  # someone works on it there
    git(code, "-c", "sequence.editor=sed -i '2s/^pick/drop/'", "rebase", "-q", "-i", base)
    data = _rewritten(code, "rebase", [], "--orig-head", second)
    assert data["dropped"] == []
    found = sorted((m.text, m.deprecated) for m in _memories(repo_path))
    assert found == [("Adopt uv for installs", False), ("Use ruff instead of flake8", False)]
