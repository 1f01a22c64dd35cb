"""Lifecycle on real repositories: TTL and gc with local usage counters, compaction, the index file, digest."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from gitmem.store import document as docs
from gitmem.store.lifecycle import MEMORY_MD_LINES, compact, digest, gc, render_memory_md, write_memory_md
from gitmem.store.memories import MemoryRepo
from gitmem.store.usage import bump_usage
from tests.helpers import assert_clean, git, run_cli

PROJECT = "github.com-acme-shop"


def old(days: int) -> str:
    return docs.format_time(docs.utcnow() - timedelta(days=days))


def test_gc_deprecates_unused_low_importance_expired_and_raw_past_ttl(repo: MemoryRepo) -> None:
    repo.import_records([
        {"id": "unused-low", "text": "The staging VM was called kiwi", "importance": 2, "created": old(120)},
        {"id": "used-low", "text": "The wiki lives on confluence", "importance": 2, "created": old(120)},
        {"id": "unused-high", "text": "Never deploy on Fridays", "importance": 4, "created": old(400)},
        {"id": "stated-old", "text": "We use tabs", "importance": 3, "created": old(200)},
        {"id": "raw-old", "text": "Port 8080 for the API", "importance": 3, "created": old(70), "source": "capture",
         "project": PROJECT},
        {"id": "raw-fresh", "text": "Port 9090 for admin", "importance": 3, "created": old(10), "source": "capture",
         "project": PROJECT},
        {"id": "expired", "text": "Freeze until the release", "importance": 5, "created": old(5),
         "expires": old(1)},
        {"id": "directive-x", "text": "Always answer in English", "importance": 2, "tags": ["directive"],
         "created": old(300)},
    ])
    bump_usage(repo.path, ["used-low"])
    head = git(repo.path, "rev-parse", "HEAD")
    dry = gc(repo, dry_run=True)
    assert sorted(m.id for m, _ in dry.deprecated) == ["expired", "raw-old", "unused-low"]
    assert git(repo.path, "rev-parse", "HEAD") == head
    result = gc(repo)
    reasons = {m.id: r for m, r in result.deprecated}
    assert reasons["unused-low"].startswith("unused for 120 days")
    assert "60-day TTL of project" in reasons["raw-old"]
    assert reasons["expired"].startswith("expired on")
    assert all(repo.get(i).deprecated for i in reasons)
    assert not repo.get("used-low").deprecated and not repo.get("stated-old").deprecated
    body = git(repo.path, "log", "--format=%B", "-2")
    assert "Gitmem-Op: deprecate" in body and "Gitmem-Source: gc" in body
    assert "unused-low" not in (repo.path / "MEMORY.md").read_text()  # the index file follows
    assert gc(repo).commit == ""
    assert_clean(repo.path)


def test_gc_cli(repo_path: Path) -> None:
    env = {"GITMEM_REPO": str(repo_path)}
    out = run_cli("gc", "--json", env=env)
    assert out.code == 0, out.err
    assert json.loads(out.out) == {"commit": "", "deprecated": []}


def test_compact_replaces_a_big_tag_by_one_summary_that_supersedes_it(repo: MemoryRepo) -> None:
    records = [{"id": f"db-{i}", "text": f"Database fact number {i}", "tags": ["database"], "importance": 2 + i % 3,
                "project": PROJECT} for i in range(12)]
    records.append({"id": "other", "text": "Unrelated", "tags": ["ui"], "project": PROJECT})
    repo.import_records(records)
    result = compact(repo)
    assert len(result.clusters) == 1
    summary = result.clusters[0].summary
    assert summary is not None
    stored = repo.get(summary.id)
    assert stored.text.startswith("Summary of 12 memories about database:")
    assert stored.text.count("\n- ") == 12 and stored.importance == 4
    assert set(stored.tags) == {"database", "summary"} and stored.project == PROJECT
    for i in range(12):
        member = repo.get(f"db-{i}")
        assert member.deprecated and member.superseded_by == summary.id
    assert not repo.get("other").deprecated
    assert "Gitmem-Op: compact" in git(repo.path, "log", "--format=%B")
    assert compact(repo).clusters == []
    assert_clean(repo.path)


def test_compact_a_category_over_the_token_threshold(repo: MemoryRepo) -> None:
    repo.import_records([{"id": f"bg-{i}", "text": "Background detail " * 30 + str(i)} for i in range(5)])
    result = compact(repo, token_limit=200, dry_run=True)
    assert [c.key for c in result.clusters] == ["category:background"]
    assert all(not m.deprecated for m in repo.list())


def test_index_file_stays_within_its_lines_most_important_first(repo: MemoryRepo) -> None:
    repo.import_records([{"id": f"m-{i}", "text": f"Fact {i}", "importance": 1 + i % 5} for i in range(300)])
    sha, lines = write_memory_md(repo)
    text = (repo.path / "MEMORY.md").read_text()
    assert sha and lines == MEMORY_MD_LINES == len(text.splitlines())
    rows = [line for line in text.splitlines() if line.startswith("- [")]
    assert rows[0].startswith("- [background 5]") and text.splitlines()[-1].startswith("- … 145 more")
    assert write_memory_md(repo) == ("", lines)
    assert render_memory_md([], 160).count("\n") == 4
    assert_clean(repo.path)


def test_digest_counts_what_happened(repo_path: Path, repo: MemoryRepo) -> None:
    repo.remember("Use PostgreSQL", category="decision")
    gone = repo.remember("Use MySQL", category="decision")
    repo.forget(gone.id, reason="wrong")
    result = digest(repo, since=timedelta(days=7))
    assert result["counts"]["added"] == 2 and result["counts"]["deprecated"] == 1
    assert "2 added" in result["text"]
    # the two adds are two commits, the forget one: counted in words a reader expects
    assert "\nadded (2 commits):" in result["text"] and "\ndeprecated (1 commit):" in result["text"]
    assert digest(repo, since=timedelta(days=1))["text"].startswith("gitmem digest, last 1 day: ")
    assert digest(repo, since=timedelta(hours=1))["text"].startswith("gitmem digest, last 1 hour: ")
    assert digest(repo, since=timedelta(hours=36))["text"].startswith("gitmem digest, last 36 hours: ")
    out = run_cli("digest", "--since", "7d", env={"GITMEM_REPO": str(repo_path)})
    assert out.code == 0 and "1 deprecated" in out.out
    bad = run_cli("digest", "--since", "soon", env={"GITMEM_REPO": str(repo_path)})
    assert bad.code != 0 and "7d" in bad.err
