"""The candidates of a search that BM25 finds: the best matches of the question's words (a long memory by its best
chunk), the past states of a supersede chain a question about order reads, the standing rules that name the
question's subject, and the memory a "before/after X" question is anchored on.

Each function takes the :class:`~gitmem.search.index.Index` it searches and the searcher of one snapshot; keys are
``(segment, doc)`` addresses (:data:`~gitmem.search.snapshot.Key`). Imported by every search, so, like the index,
it imports neither :mod:`re`, :mod:`pathlib` nor :mod:`typing`.
"""

from __future__ import annotations

import tantivy

from gitmem.search import analysis
from gitmem.search import schema as idoc
from gitmem.search import scoring as ranking
from gitmem.search.order import FLOOR
from gitmem.search.standing import GOVERNING, alternatives

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from gitmem.search.analysis import QueryTerms
    from gitmem.search.index import Index
    from gitmem.search.order import Order
    from gitmem.search.scoring import Tuning
    from gitmem.search.snapshot import Key
    from gitmem.store.memory import Memory

    #: tantivy (occur, query) pairs every candidate must satisfy
    Filters = list[tuple[Any, Any]]

__all__ = ["anchor", "bm25", "naming", "stored", "superseded"]

#: the best matches of the X in "before/after X" the memory about X is chosen among
ANCHORS = 5
#: the rules sharing a word with the question whose subjects a search reads to find the ones it names whole
SUBJECTS = 32


def bm25(ix: Index, searcher: Any, terms: QueryTerms, filters: Filters, n: int, tuning: Tuning,
         matched: dict[Key, dict[int, float]]) -> dict[Key, float]:
    """The ``n`` best memories by BM25; each chunk of a long memory among the hits goes into ``matched``
    (chunk number → its score, 0 for the memory as a whole), so a hit knows which of its parts matched."""
    query = tantivy.Query.boolean_query([(tantivy.Occur.Must, ranking.text_query(ix._schema, terms, tuning)),
                                         *filters])
    hits = searcher.search(query, limit=n, count=False).hits
    scores = {(a.segment_ord, a.doc): float(s) for s, a in hits}
    snap = ix._snapshot()
    if not hits or not ix._chunk_docs(snap):
        return scores
    # a long memory is scored by its best document: itself or one of its chunks
    addrs = [a for _s, a in hits]
    parts = searcher.fast_field_values("part", addrs)
    chunked = [(float(s), a, int(p)) for (s, a), p in zip(hits, parts, strict=True) if p]
    if not chunked:
        return scores
    for _score, addr, _part in chunked:
        del scores[(addr.segment_ord, addr.doc)]
    codes = searcher.fast_field_values("sha64", [a for _s, a, _p in chunked])
    whole = dict(scores)  # the memories' own documents
    for (score, _addr, part), code in zip(chunked, codes, strict=True):
        for key in snap.addresses(int(code or 0)):
            found = matched.setdefault(key, {})
            found[part] = max(score, found.get(part, 0.0))
            if key in whole:  # the memory as a whole: a chunk is its best part only above it
                found[0] = max(whole[key], found.get(0, 0.0))
            scores[key] = max(score, scores.get(key, 0.0))
    return scores


def superseded(ix: Index, searcher: Any, terms: QueryTerms, past: Filters, n: int, tuning: Tuning,
               matched: dict[Key, dict[int, float]], replaced_by: dict[Key, tuple[str, str]] | None = None
               ) -> dict[Key, float]:
    """The ``n`` best memories by BM25 among those replaced by another (``past``: the filters keeping those
    only, :func:`gitmem.search.scoring.deprecated_clause`; a forgotten memory is not one): the past states.
    ``replaced_by``, if given, gets each one's id and the id of the memory that replaced it when that was a
    later state, not a compaction's summary (a chain's link: read from its stored document)."""
    scores = bm25(ix, searcher, terms, past, n, tuning, matched)
    if replaced_by is not None and scores:
        keys = list(scores)
        flags = searcher.fast_field_values("superseded", [tantivy.DocAddress(*key) for key in keys])
        for key, flag in zip(keys, flags, strict=True):
            if flag == ranking.REPLACED:
                memory = stored(searcher, key)
                replaced_by[key] = (memory.id, memory.superseded_by)
    return scores


def naming(ix: Index, searcher: Any, terms: QueryTerms, filters: Filters, tuning: Tuning,
           matched: dict[Key, dict[int, float]]) -> dict[Key, float]:
    """The standing rules whose subject (:func:`~gitmem.search.standing.condition`), or one of the subjects it
    lists, the question holds word for word (:func:`~gitmem.search.scoring.names_subject`), at most
    :data:`~gitmem.search.standing.GOVERNING`, with their BM25 as any memory's; none, at the cost of one
    lookup in an almost empty field, in most repositories."""
    query = ranking.subject_query(ix._schema, terms)
    if query is None:
        return {}
    # every rule whose subject shares a word with the question, best first (a full match may rank low among
    # partial ones: a rare word of the question in many subjects)
    hits = searcher.search(tantivy.Query.boolean_query([(tantivy.Occur.Must, query), *filters]),
                           limit=SUBJECTS, count=False).hits
    found: dict[Key, float] = {}
    for _score, addr in hits:
        doc = searcher.doc(addr)
        if any(ranking.names_subject(terms, analysis.analyze_query(subject, ix._analyzer))
               for subject in alternatives(idoc.subject(doc))):
            # scored by its text like any candidate: the subject field's scores live on another scale
            memory_id = idoc.memory_from_json(doc["doc"][0]).id
            scored = bm25(ix, searcher, terms, [*filters, ranking.key_clause(ix._schema, memory_id)], 1, tuning,
                          matched)
            found[(addr.segment_ord, addr.doc)] = scored.get((addr.segment_ord, addr.doc), 0.0)
            if len(found) >= GOVERNING:
                break
    return found


def anchor(ix: Index, searcher: Any, order: Order, terms: QueryTerms, filters: Filters, past: Filters | None,
           tuning: Tuning, pool: tuple[dict[Key, float], dict[Key, float]],
           matched: dict[Key, dict[int, float]], replaced_by: dict[Key, tuple[str, str]]
           ) -> tuple[float | None, set[Key]]:
    """For "before/after X" (``order.anchor`` is X): when the memory about X was created, and the candidates a
    supersede chain puts right before or after it among the ``pool`` (the BM25 and the vector candidates; the
    BM25 ones gain the chain's successor when it was replaced since). ``(None, set())`` when nothing is about X."""
    found_bm25, vector = pool
    said = analysis.analyze_query(order.anchor, ix._analyzer)
    found = bm25(ix, searcher, said, filters, ANCHORS, tuning, {})
    # X may be a state replaced since ("what did we use after MySQL?")
    states = superseded(ix, searcher, said, past, ANCHORS, tuning, {}) if past is not None else {}
    found.update(states)
    if not found:
        return None, set()
    # where X is a state of a supersede chain, X's memory is where X first appears among the good matches: later
    # ones that name X say what replaced it ("migrated from Vue 2 to Vue 3" names Vue 2 more often than "written
    # in Vue 2"); an event ("after I downloaded it") is its best match
    best = max(found.values())
    near = [key for key, score in found.items() if score >= FLOOR * best] if states else \
        [max(found, key=found.__getitem__)]
    made = searcher.fast_field_values("created", [tantivy.DocAddress(*key) for key in near])
    created, key = min(zip(made, near, strict=True),
                       key=lambda pair: (pair[0] if pair[0] is not None else float("inf"), -found[pair[1]]))
    linked, later = _chain_links(ix, searcher, stored(searcher, key), order, replaced_by)
    if later and past is not None and linked - set(found_bm25) - set(vector):
        # the successor was replaced since ("after Vuex" when Vue 3 gave way to Nuxt): a candidate all the same,
        # scored as the past states are, if the question's words meet it
        found_bm25.update(bm25(ix, searcher, terms, [*past, ranking.key_clause(ix._schema, later)], 1, tuning,
                               matched))
    return float(created or 0), linked & (set(found_bm25) | set(vector))


def _chain_links(ix: Index, searcher: Any, memory: Memory, order: Order,
                 replaced_by: dict[Key, tuple[str, str]]) -> tuple[set[Key], str]:
    """The memories a supersede chain puts right before ``memory`` (the candidates it replaced) or right after
    it (the one that replaced it, candidate or not, and its id), as ``order`` asks."""
    if order.kind == "before":
        return {key for key, (_id, by) in replaced_by.items() if by == memory.id}, ""
    if idoc.superseded(memory) != ranking.REPLACED:
        return set(), ""  # current, forgotten, or compacted: a compaction's summary is no next state of the fact
    Q, must = tantivy.Query, tantivy.Occur.Must
    found = searcher.search(Q.boolean_query([ranking.key_clause(ix._schema, memory.superseded_by),
                                             (must, Q.term_query(ix._schema, "part", 0))]), limit=2).hits
    return {(a.segment_ord, a.doc) for _s, a in found}, memory.superseded_by


def stored(searcher: Any, key: Key) -> Memory:
    """The memory stored in the index document at ``key`` (a JSON parse: read only the ones needed)."""
    return idoc.memory_from_json(searcher.doc(tantivy.DocAddress(*key))["doc"][0])
