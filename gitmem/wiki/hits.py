"""From a folder index's matching documents to one hit per page (:meth:`gitmem.wiki.search.PageIndex.search`).

A long page is indexed as its own document and one per chunk (:mod:`gitmem.wiki.documents`), so a query's matches
are collapsed to each page's best document (BM25 alone), or its BM25 score is fused with the cosines of its rows
(with vectors), and the snippet is cut from the document that earned the page its place.
"""

from __future__ import annotations

from typing import Any

#: pages a search with vectors takes from each side (BM25, cosine) before fusing
CANDIDATES = 30

Best = dict[int, tuple[float, Any, int]]  # page → (score, address, chunk number) of its best document
Chunks = dict[int, dict[int, tuple[float, Any]]]  # page → chunk number → (score, address), best first
_Ranked = dict[int, tuple[float, Any, int, bool]]  # page → (score, address, chunk number, chosen by fusion)


def fused(searcher: Any, schema: Any, filters: list[Any], best: Best, chunk: Chunks,
          near: dict[int, tuple[str, dict[int, float]]], tuning: Any, k: int) -> _Ranked:
    """The ``k`` best pages by BM25 (``best``, ``chunk``) and cosine (``near``) fused (``scoring.fuse``), best
    first, each with its fused score and the address and number of the document to show: of its chunks (its
    whole body for a short page), the one with the best fused score (True); a page without a vector is scored
    by BM25 alone and shows its best document (False). A page only the cosines found is kept when it passes the
    ``filters``."""
    import tantivy

    from gitmem.search import scoring as ranking

    def documents(key: str) -> dict[int, Any]:
        """chunk number → address of the documents of the page ``key`` that pass the filters"""
        found = searcher.search(tantivy.Query.boolean_query(
            [(tantivy.Occur.Must, tantivy.Query.term_query(schema, "key", key)), *filters]), limit=1000).hits
        addrs = [addr for _score, addr in found]
        return {int(part): addr for part, addr in zip(searcher.fast_field_values("part", addrs), addrs, strict=True)}

    bm25 = {page: score for page, (score, _addr, _part) in best.items()}
    cosine = {page: max(rows.values()) for page, (_key, rows) in near.items()}
    docs: dict[int, dict[int, Any]] = {}
    for page in sorted(cosine, key=lambda p: -cosine[p])[:max(k, CANDIDATES)]:
        if page not in bm25 and (found := documents(near[page][0])):
            docs[page] = found
    def addresses(page: int) -> dict[int, Any]:
        return docs.get(page) or documents(near[page][0])

    candidates = set(bm25) | set(docs)
    fused = ranking.fuse(bm25, {p: cosine[p] for p in candidates if p in cosine}, tuning,
                         [p for p in candidates if p not in cosine])
    out: _Ranked = {}
    for page in sorted(candidates, key=lambda p: -fused.get(p, 0.0))[:k]:
        if page not in cosine:
            out[page] = (fused[page], best[page][1], best[page][2], False)
            continue
        rows = {n: cos for n, cos in near[page][1].items() if n}
        if not rows:  # a short page: its only document
            whole = page in best and best[page][2] == 0  # BM25 found that document already
            out[page] = (fused[page], best[page][1] if whole else addresses(page)[0], 0, True)
            continue
        scores = {n: score for n, (score, _addr) in chunk.get(page, {}).items()}
        within = ranking.fuse(scores, rows, tuning)
        number = max(within, key=lambda n: within[n])
        addr = chunk[page][number][1] if number in chunk.get(page, {}) else addresses(page)[number]
        out[page] = (fused[page], addr, number, True)
    return out


def shown(texts: list[tuple[int, str, str]], title: str, terms: set[str], analyzer: Any) -> tuple[int, str, str]:
    """(chunk number, section, snippet) of the first of ``texts`` (chunk number, section, text) in which a query
    term occurs; when none does, only the title or tags matched: the title and the start of the last text."""
    from gitmem.search import scoring as ranking

    for part, section, text in texts:
        snippet, spans = ranking.snippet(text, terms, analyzer)
        if spans:
            return part, section, snippet
    return 0, "", ranking.snippet(f"{title}. {texts[-1][2][:400]}", terms, analyzer)[0]


def best_per_page(searcher: Any, query: Any, k: int) -> tuple[Best, Chunks]:
    """The ``k`` best pages for ``query``, each with its best document's score, address and chunk number (0: the
    page itself), best first, and the chunks of each page among the matches (number → score and address, best
    first). The chunks of a few pages can fill the first places, so the search asks for more documents until
    ``k`` pages are found or none is left."""
    limit = 4 * k
    while True:
        found = searcher.search(query, limit=limit, count=False).hits
        addrs = [addr for _score, addr in found]
        best: Best = {}
        chunk: Chunks = {}
        pages = searcher.fast_field_values("page", addrs)
        parts = searcher.fast_field_values("part", addrs)
        for (score, addr), page, part in zip(found, pages, parts, strict=True):
            if page not in best and len(best) < k:
                best[page] = (float(score), addr, int(part))
            if part:
                chunk.setdefault(page, {})[int(part)] = (float(score), addr)
        if len(best) >= k or len(found) < limit:
            return best, chunk
        limit *= 4
