"""A damaged wiki index (a ``meta.json`` that is not JSON, segment files cut to nothing) is derived state: the next
query or update rebuilds it whole from the page files, never keeps only the pages that changed since, and says in
one line how to recover when it cannot rebuild it yet."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from gitmem.config import Config
from gitmem.errors import SearchError
from gitmem.store.memories import MemoryRepo
from gitmem.wiki.store import Wiki
from tests.helpers import assert_clean, damage_tantivy, lock_held, run_cli

PAGES = 8


def _wiki(repo: Path) -> Wiki:
    return Wiki(MemoryRepo(Config(repo=repo)), "shop")


def _tantivy(repo: Path) -> Path:
    return repo / ".cache" / "wiki" / "shop" / "tantivy"


def _damage(repo: Path, how: str) -> None:
    damage_tantivy(_tantivy(repo), how)


def _query(repo: Path, text: str) -> list[str]:
    done = run_cli("--repo", str(repo), "wiki", "query", "--project", "shop", "--json", text)
    assert done.code == 0, done.err
    assert "internal error" not in done.err
    return [hit["page"] for hit in json.loads(done.out)]


def _ingest(repo: Path, title: str, text: str) -> None:
    done = run_cli("--repo", str(repo), "wiki", "ingest", "--title", title, "--project", "shop", text)
    assert done.code == 0, done.err


@pytest.fixture
def indexed(repo_path: Path) -> Path:
    """A repository whose wiki ``shop`` has 8 pages, indexed by a ``gitmem wiki query``."""
    wiki = _wiki(repo_path)
    for i in range(PAGES):
        wiki.ingest(f"Widget{i} service", f"The widget{i} service runs on port {8000 + i} and pages the platform team")
    assert _query(repo_path, "widget3") == ["widget3-service"]
    assert (_tantivy(repo_path) / "meta.json").is_file()
    return repo_path


@pytest.mark.parametrize("how", ["meta", "terms"])
def test_a_page_added_over_a_damaged_index_leaves_every_page_searchable(indexed: Path, how: str) -> None:
    _damage(indexed, how)
    _ingest(indexed, "Kafka lag", "kafka consumers lag alert threshold")
    assert _query(indexed, "kafka consumers") == ["kafka-lag"]
    assert _query(indexed, "widget3") == ["widget3-service"]  # not only the page that changed since
    assert _query(indexed, "widget6") == ["widget6-service"]
    assert_clean(indexed)


@pytest.mark.parametrize("how", ["meta", "terms"])
def test_a_query_rebuilds_a_wiki_index_it_cannot_read(indexed: Path, how: str) -> None:
    _damage(indexed, how)
    assert _query(indexed, "widget3") == ["widget3-service"]
    assert _query(indexed, "widget5") == ["widget5-service"]  # and the next query reads what the first one rebuilt
    assert_clean(indexed)


@pytest.mark.parametrize("how", ["meta", "terms"])
def test_the_library_rebuilds_a_damaged_wiki_index_whole(indexed: Path, how: str) -> None:
    wiki = _wiki(indexed)
    wiki.ingest("Kafka lag", "kafka consumers lag alert threshold")  # the index is now behind
    _damage(indexed, how)
    files = list((indexed / "wiki" / "shop").glob("*.md"))  # the pages, and the generated index.md
    assert wiki._index().refresh() == len(files)  # every file, not the two that changed
    hits = wiki.query("widget2 service")
    assert [hit.name for hit in hits][:1] == ["widget2-service"]
    assert [hit.name for hit in wiki.query("kafka")] == ["kafka-lag"]


def test_a_file_in_place_of_the_wiki_index_is_replaced(indexed: Path) -> None:
    tantivy = _tantivy(indexed)
    for item in tantivy.iterdir():
        item.unlink()
    tantivy.rmdir()
    tantivy.write_text("not an index", "utf-8")
    assert _query(indexed, "widget3") == ["widget3-service"]
    assert (tantivy / "meta.json").is_file()


def test_a_damaged_wiki_index_that_cannot_be_rebuilt_yet_says_so(indexed: Path) -> None:
    _damage(indexed, "terms")
    index = _wiki(indexed)._index()
    index.lock_wait = 0.2
    with lock_held(indexed / ".cache" / "wiki" / "shop" / "lock"):  # another process is updating it
        with pytest.raises(SearchError, match=r"cannot be read: .*\(try again: a query rebuilds it"):
            index.search("widget3")
        started = time.perf_counter()
        done = run_cli("--repo", str(indexed), "wiki", "query", "--project", "shop", "widget3")
        assert time.perf_counter() - started < 30
    assert done.code == 1 and done.out == ""
    lines = done.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gitmem: error: the search index of wiki/shop/ in ")
    assert "cannot be read" in lines[0] and "(try again: a query rebuilds it from the page files" in lines[0]
    assert "internal error" not in done.err and "Traceback" not in done.err
    assert _query(indexed, "widget3") == ["widget3-service"]  # once the lock is free, the next query rebuilds it
