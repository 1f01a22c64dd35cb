"""One read state of the search index (a real tantivy index): where each blob lives and what filters admit."""

from __future__ import annotations

from typing import Any

import tantivy

from gitmem.search import analysis
from gitmem.search import schema as indexdoc
from gitmem.search import scoring as ranking
from gitmem.search.snapshot import Snapshot
from gitmem.store import document as docs
from gitmem.text.records import replace


def _memory(text: str, **fields: Any) -> docs.Memory:
    return docs.make_memory(text, **fields)


def _index(memories: list[tuple[docs.Memory, str]]) -> Any:
    index = tantivy.Index(indexdoc.schema())
    index.register_tokenizer(analysis.TOKENIZER, analysis.build_analyzer())
    writer = index.writer(heap_size=15_000_000, num_threads=1)
    for seq, (memory, sha) in enumerate(memories):
        for doc in indexdoc.documents(memory, memory.path, sha, 0, seq, ""):
            writer.add_document(doc)
    writer.commit()
    index.reload()
    return index


def test_a_snapshot_finds_documents_by_blob_and_by_filters() -> None:
    live = _memory("Use PostgreSQL.", project="acme", scope="project", type="project")
    other = _memory("Prefer pnpm.", category="preference")
    gone = replace(_memory("Use MySQL."), deprecated=True)
    shas = ["a" * 40, "b" * 40, "c" * 40]
    index = _index([(live, shas[0]), (other, shas[1]), (gone, shas[2]), (replace(live, id="copy"), shas[0])])
    searcher = index.searcher()
    snap = Snapshot(searcher)

    def ids(keys: Any) -> set[str]:
        return {indexdoc.memory_from_json(searcher.doc(tantivy.DocAddress(s, d))["doc"][0]).id for s, d in keys}

    assert ids(snap.addresses(indexdoc.sha64(shas[0]))) == {live.id, "copy"}  # one blob at two paths
    assert ids(snap.addresses(indexdoc.sha64(shas[1]))) == {other.id}
    assert snap.addresses(indexdoc.sha64("d" * 40)) == ()

    exclude, keys = snap.admits("plain", ranking.filter_clauses(index.schema))
    assert exclude and ids(keys) == {gone.id}  # everything but the deprecated one
    exclude, keys = snap.admits("acme", ranking.filter_clauses(index.schema, project="acme"))
    assert not exclude and ids(keys) == {live.id, "copy", other.id}  # the project's and the global ones
    assert snap.admits("acme", []) == (exclude, keys)  # the same combination is answered from the memo

