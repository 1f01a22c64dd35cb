"""The search index takes exactly the files the store reads as memories: none at the wrong depth, none with another
extension, none in a hidden folder, none whose name is not its id's; an index built under the earlier rule drops
them at its next update."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gitmem.search import build
from gitmem.search.index import Index
from gitmem.store import document as docs
from gitmem.store.document import Memory
from gitmem.store.memories import MemoryRepo
from tests.helpers import bm25_only, git, run_cli

#: where a copy of a memory is planted → its id (the files the store does not read as memories, and one it reads)
PLANTED = {
    "memories/stray-top.md": "stray-top",
    "memories/global/sub/nested.md": "nested",
    "memories/global/upper-Case.md": "upper-Case",
    "memories/global/texty.txt": "texty",
    "memories/.trash/hidden.md": "hidden",
}


def _plant(repo: MemoryRepo) -> None:
    """``zebra-one`` and the project memory ``zebra-shop`` remembered, then a copy of the first (another id,
    another word) at every path of :data:`PLANTED`, committed by hand."""
    repo.remember("Zebra stripes on the shop's charts", id="zebra-shop", scope="project", project="shop")
    original = repo.remember("Use zebra tables for reports", id="zebra-one")
    text = (repo.path / original.path).read_text("utf-8")
    for rel, memory_id in PLANTED.items():
        (repo.path / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo.path / rel).write_text(text.replace("zebra-one", memory_id).replace("tables", memory_id), "utf-8")
    git(repo.path, "add", "-A")
    git(repo.path, "commit", "-qm", "planted by hand")


def _work_tree_files(root: Path) -> set[str]:
    return {(Path(folder) / name).relative_to(root).as_posix()
            for folder, _dirs, files in os.walk(root / "memories") for name in files}


def test_search_finds_only_memories_that_show_opens_at_paths_that_exist(repo: MemoryRepo, repo_path: Path) -> None:
    _plant(repo)
    bm25_only(repo_path)
    env = {"GITMEM_REPO": str(repo_path)}
    found = run_cli("search", "zebra", "--json", env=env)
    assert found.code == 0, found.err
    hits = json.loads(found.out)
    assert sorted(h["id"] for h in hits) == ["zebra-one", "zebra-shop"]
    for hit in hits:
        assert (repo_path / hit["memory"]["path"]).is_file()
        assert run_cli("show", hit["id"], env=env).code == 0
    for memory_id in ("stray-top", "nested", "upper-Case", "texty", "hidden"):
        assert run_cli("show", memory_id, env=env).code != 0


def test_the_rule_is_the_one_the_store_reads_by(repo: MemoryRepo) -> None:
    _plant(repo)
    assert {p for p in _work_tree_files(repo.path) if docs.memory_file(p)} == {rel for rel, _ in repo.iter_files()}
    index = Index(repo, embedder=None)
    stats = index.refresh()
    loaded = build.load_state(index)
    assert loaded is not None
    indexed = {p for p, entry in loaded[0].items() if entry[build.OK]}
    # every file the store reads whose name is its id's (show opens it by that name)
    assert indexed == {rel for rel, item in repo.iter_files()
                       if isinstance(item, Memory) and docs.named_by_id(rel, item.id)}
    assert indexed == {"memories/global/zebra-one.md", "memories/shop/zebra-shop.md"}
    [skipped] = stats.unreadable
    assert skipped.startswith("memories/global/upper-Case.md: its id 'upper-Case' names the file "
                              "memories/global/upper-case-")


def test_an_index_built_under_the_earlier_rule_drops_the_files_it_no_longer_takes(
        repo: MemoryRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    _plant(repo)
    with monkeypatch.context() as earlier:  # every .md file under memories/, as the index took them before
        earlier.setattr(docs, "memory_file", lambda path: path.startswith("memories/") and path.endswith(".md"))
        earlier.setattr(docs, "named_by_id", lambda path, memory_id: True)
        earlier.setattr(build, "FILES_RULE", 0)
        before = Index(repo, embedder=None)
        assert {h.id for h in before.search("zebra", mode="bm25")} == {
            "zebra-one", "zebra-shop", "stray-top", "nested", "upper-Case", "hidden"}
    repo.remember("Zebra crossings near the office", id="zebra-two")  # any commit: the next search updates
    after = Index(repo, embedder=None)
    assert {h.id for h in after.search("zebra", mode="bm25")} == {"zebra-one", "zebra-shop", "zebra-two"}
