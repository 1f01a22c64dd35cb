"""Lifecycle on real repositories: TTL and gc with local usage counters, compaction, the index file, digest."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from gitmem.config import load
from gitmem.errors import ConfigError
from gitmem.store import document as docs
from gitmem.store.lifecycle import (
    MAX_SUMMARY_BYTES,
    MEMORY_MD_LINES,
    RAW_SOURCES,
    compact,
    digest,
    gc,
    render_memory_md,
    write_memory_md,
)
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


def test_forgetting_a_summary_brings_back_what_it_summarised(repo: MemoryRepo) -> None:
    """A summary forgotten took its members with it: deprecated for it, they were lost to every search, with no way
    back short of restoring each by hand. Its forget (or purge) makes them active again, in the same commit."""
    repo.import_records([{"id": f"db-{i}", "text": f"Database fact number {i}", "tags": ["database"],
                          "project": PROJECT} for i in range(12)])
    summary = compact(repo).clusters[0].summary
    assert summary is not None
    commits = int(git(repo.path, "rev-list", "--count", "HEAD"))
    out = run_cli("--repo", str(repo.path), "forget", summary.id, "--reason", "a bad summary", "--json")
    assert out.code == 0, out.err
    assert sorted(json.loads(out.out)["restored"]) == sorted(f"db-{i}" for i in range(12))
    assert int(git(repo.path, "rev-list", "--count", "HEAD")) == commits + 1
    for i in range(12):
        member = repo.get(f"db-{i}")
        assert not member.deprecated and not member.superseded_by and not member.deprecated_reason
    assert repo.get(summary.id).deprecated
    assert "db-" in run_cli("--repo", str(repo.path), "search", "database fact number 7").out
    plain = repo.remember("Not a summary", project=PROJECT)
    assert run_cli("--repo", str(repo.path), "forget", plain.id, "--reason", "x", "--json").out.count("db-") == 0
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


def _deploy_records(n: int, size: int = 1500, **fields: object) -> list[dict[str, object]]:
    """``n`` memories tagged deploy in project shop, each about ``size`` bytes with a unique marker, a why and a
    how."""
    return [{"id": f"deploy-{i:02d}", "text": f"Deploy rule MARKER-{i:02d}: " + "canary first, then the fleet. "
             * (size // 30), "tags": ["deploy"], "project": "shop", "why": f"outage WHY-{i:02d}",
             "how": f"pipeline HOW-{i:02d}", **fields} for i in range(n)]


def _memory_files(repo: MemoryRepo, project: str) -> dict[str, docs.Memory]:
    """Every memory file of ``project``'s folder as it is on disk, by id."""
    found = (docs.loads(p.read_text("utf-8"), str(p)) for p in (repo.path / "memories" / project).glob("*.md"))
    return {m.id: m for m in found}


def test_compact_loses_nothing_when_a_cluster_outgrows_one_summary(repo: MemoryRepo) -> None:
    """11 memories of ~1.5 KB do not fit in one summary of 12 KiB: every member's text, why and how is in the
    summary that supersedes it, each summary counts the memories it holds, and no TTL expires the summaries of
    memories that never expire."""
    repo.import_records(_deploy_records(11))
    result = compact(repo)
    (cluster,) = result.clusters
    files = _memory_files(repo, "shop")
    summaries = {m.id: m for m in files.values() if "summary" in m.tags}
    assert len(summaries) == 2 and {s.id for s, _ in cluster.parts} == set(summaries)
    held: dict[str, list[str]] = {s: [] for s in summaries}
    for i in range(11):
        member = files[f"deploy-{i:02d}"]
        assert member.deprecated and member.superseded_by in summaries, member.id
        held[member.superseded_by].append(member.id)
        text = summaries[member.superseded_by].text
        assert f"MARKER-{i:02d}" in text and f"WHY-{i:02d}" in text and f"HOW-{i:02d}" in text
        assert sum(f"MARKER-{i:02d}" in s.text for s in summaries.values()) == 1
    for summary_id, members in held.items():
        summary = summaries[summary_id]
        assert len(summary.text.encode()) <= MAX_SUMMARY_BYTES
        assert summary.text.startswith(f"Summary of {len(members)} memories about deploy (part ")
        assert summary.text.count("\n- ") == len(members)
        assert summary.source not in RAW_SOURCES and summary.expires is None
    later = gc(repo, now=docs.utcnow() + timedelta(days=400), dry_run=True)  # past every TTL
    assert not [m.id for m, _ in later.deprecated if m.id in summaries]
    log = git(repo.path, "log", "-2", "--format=%B")
    assert "compact: 1 cluster into 2 summaries" in log and "Gitmem-Op: compact" in log
    assert compact(repo).clusters == []
    assert_clean(repo.path)


def test_a_member_too_long_for_any_summary_stays_active(repo: MemoryRepo) -> None:
    records = _deploy_records(11, 400)
    records[0]["text"] = "Deploy rule MARKER-BIG: " + "the long runbook step by step. " * 420  # ~13 KB
    records[0]["importance"] = 4
    repo.import_records(records)
    (cluster,) = compact(repo).clusters
    big = repo.get("deploy-00")
    assert not big.deprecated and big.superseded_by == "" and [m.id for m in cluster.kept] == ["deploy-00"]
    (summary, folded) = cluster.parts[0]
    assert len(cluster.parts) == 1 and len(folded) == 10
    stored = repo.get(summary.id)
    assert stored.text.startswith("Summary of 10 memories about deploy:") and "MARKER-BIG" not in stored.text
    assert stored.importance == 3  # the kept member's importance is not the summary's
    assert all(repo.get(f"deploy-{i:02d}").superseded_by == summary.id for i in range(1, 11))
    assert "kept deploy-00" in git(repo.path, "log", "-2", "--format=%B")


def test_a_summary_lasts_as_long_as_its_most_lasting_member(repo: MemoryRepo) -> None:
    """Raw members of one type keep their TTL through the summary; one memory a person stated (or one of
    another type) makes the summary last; it expires only when every member does, at the latest time."""
    repo.import_records([
        *_deploy_records(11, 100, source="capture", type="project"),
        *({"id": f"db-{i:02d}", "text": f"Database rule DB-{i:02d}", "tags": ["database"], "project": "shop",
           "source": "capture" if i else "import"} for i in range(11)),
        *({"id": f"ui-{i:02d}", "text": f"UI rule UI-{i:02d}", "tags": ["ui"], "project": "shop",
           "expires": old(-10 - i)} for i in range(11)),
        {"id": "ui-gone", "text": "UI rule that expired", "tags": ["ui"], "project": "shop", "expires": old(1)},
    ])
    assert len(compact(repo).clusters) == 3
    summaries = {t: m for m in repo.list(tag="summary") for t in m.tags if t != "summary"}
    assert summaries["deploy"].source == "capture"
    assert summaries["database"].source == "cli"
    assert summaries["ui"].expires is not None
    assert summaries["ui"].expires.date() == (docs.utcnow() + timedelta(days=20)).date()
    assert not repo.get("ui-gone").deprecated  # expired: left to gc, never brought back through a summary
    assert "UI rule that expired" not in summaries["ui"].text


@pytest.mark.parametrize("value", ["9", "0", "-1", "true", "2.5"])
def test_gc_max_importance_outside_1_to_5_is_refused_naming_file_and_key(repo_path: Path, value: str) -> None:
    settings = repo_path / "gitmem.toml"
    settings.write_text(f"[lifecycle]\ngc_max_importance = {value}\n", "utf-8")
    with pytest.raises(ConfigError) as info:
        load(repo_path)
    assert str(settings) in str(info.value) and "lifecycle.gc_max_importance" in str(info.value)
    out = run_cli("gc", "--dry-run", env={"GITMEM_REPO": str(repo_path)})
    assert out.code != 0 and "Traceback" not in out.err
    assert str(settings) in out.err and "lifecycle.gc_max_importance" in out.err


def test_gc_max_importance_from_1_to_5_is_taken(repo_path: Path) -> None:
    for value in (1, 5):
        (repo_path / "gitmem.toml").write_text(f"[lifecycle]\ngc_max_importance = {value}\n", "utf-8")
        assert load(repo_path).lifecycle.gc_max_importance == value


def test_gc_spares_an_earlier_summary_written_as_captured_when_its_members_would_not_expire(
        repo: MemoryRepo) -> None:
    """Summaries written before summaries took their members' most lasting rule all say ``source: capture``:
    the TTL takes one only when it would have taken each memory it holds."""
    summary = {"text": "Summary of 2 memories about {0}:\n- {0} one\n- {0} two", "source": "capture",
               "project": PROJECT, "created": old(100)}
    member = {"deprecated": True, "project": PROJECT, "created": old(100)}
    repo.import_records([
        {**summary, "id": "sum-stated", "text": summary["text"].format("stated"), "tags": ["stated", "summary"],
         "source_ref": "compact:tag:stated"},
        {**summary, "id": "sum-raw", "text": summary["text"].format("raw"), "tags": ["raw", "summary"],
         "source_ref": "compact:tag:raw"},
        {**member, "id": "stated-1", "text": "stated one", "superseded_by": "sum-stated", "source": "cli"},
        {**member, "id": "stated-2", "text": "stated two", "superseded_by": "sum-stated", "source": "capture"},
        {**member, "id": "raw-1", "text": "raw one", "superseded_by": "sum-raw", "source": "capture"},
        {**member, "id": "raw-2", "text": "raw two", "superseded_by": "sum-raw", "source": "hook"},
    ])
    assert [m.id for m, _ in gc(repo, dry_run=True).deprecated] == ["sum-raw"]
