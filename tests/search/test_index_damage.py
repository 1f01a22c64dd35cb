"""A damaged search index (a ``meta.json`` that is not JSON, segment files cut to nothing) is derived state: the next
search or update rebuilds it whole from the memory files, never keeps only what changed since, and says to run
``gitmem reindex`` in one line when it cannot rebuild it."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from gitmem.config import Config
from gitmem.errors import SearchError
from gitmem.search.index import Index
from gitmem.store.memories import MemoryRepo
from tests.helpers import assert_clean, damage_tantivy, lock_held, run_cli

MEMORIES = 60


def _damage(repo: Path, how: str) -> None:
    damage_tantivy(repo / ".cache" / "search" / "tantivy", how)


def _found(repo: Path, query: str) -> list[str]:
    done = run_cli("--repo", str(repo), "search", query, "--mode", "bm25", "--json")
    assert done.code == 0, done.err
    assert "internal error" not in done.err
    return [hit["id"] for hit in json.loads(done.out)]


@pytest.fixture
def indexed(repo_path: Path) -> Path:
    """A repository of 60 memories whose index ``gitmem reindex`` built."""
    MemoryRepo(Config(repo=repo_path)).import_records(
        [{"text": f"The widget{i} service runs on port {8000 + i} and pages the platform team", "id": f"m{i:02d}"}
         for i in range(MEMORIES)])
    done = run_cli("--repo", str(repo_path), "reindex", "--bm25-only")
    assert done.code == 0, done.err
    return repo_path


@pytest.mark.parametrize("how", ["meta", "terms"])
def test_an_update_over_a_damaged_index_rebuilds_every_memory(indexed: Path, how: str) -> None:
    _damage(indexed, how)
    added = run_cli("--repo", str(indexed), "remember", "kafka consumers lag alert threshold", "--id", "kafka")
    assert added.code == 0, added.err
    assert _found(indexed, "kafka consumers") == ["kafka"]
    assert _found(indexed, "widget7") == ["m07"]  # not only the memory that changed since
    assert Index(MemoryRepo(Config(repo=indexed)), embedder=None).size == MEMORIES + 1
    assert_clean(indexed)


@pytest.mark.parametrize("how", ["meta", "terms"])
def test_a_search_rebuilds_an_index_it_cannot_read(indexed: Path, how: str) -> None:
    _damage(indexed, how)
    assert _found(indexed, "widget7") == ["m07"]
    assert _found(indexed, "widget42") == ["m42"]  # and the next search reads what the first one rebuilt
    assert_clean(indexed)


@pytest.mark.parametrize("how", ["meta", "terms"])
def test_the_library_rebuilds_a_damaged_index_whole(indexed: Path, how: str) -> None:
    repo = MemoryRepo(Config(repo=indexed))
    _damage(indexed, how)
    stats = Index(repo, embedder=None).refresh()  # the marker still names HEAD: only opening shows the damage
    assert stats.rebuilt and stats.indexed == MEMORIES
    repo.remember("kafka consumers lag alert threshold", id="kafka")
    _damage(indexed, how)
    stats = Index(repo, embedder=None).refresh()  # behind HEAD: the update must not trust the old state
    assert stats.rebuilt and stats.indexed == MEMORIES + 1


def test_a_damaged_index_that_cannot_be_rebuilt_says_to_reindex(indexed: Path) -> None:
    _damage(indexed, "terms")
    with lock_held(indexed / ".cache" / "search.lock"):  # another process is updating it: no rebuild now
        with pytest.raises(SearchError, match="run gitmem reindex"):
            Index(MemoryRepo(Config(repo=indexed)), embedder=None, lock_wait=0.2).search("widget7", mode="bm25")
        started = time.perf_counter()
        done = run_cli("--repo", str(indexed), "search", "widget7", "--mode", "bm25")
        assert time.perf_counter() - started < 30
    assert done.code == 1 and done.out == ""
    lines = done.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gitmem: error: the search index in ")
    assert "cannot be read" in lines[0] and lines[0].endswith("(run gitmem reindex)")
    assert "internal error" not in done.err and "Traceback" not in done.err
    assert _found(indexed, "widget7") == ["m07"]  # once the lock is free, the next search rebuilds it
