"""A search's last step: its candidates, found by BM25 (:mod:`gitmem.search.candidates`) and by the vectors
(:mod:`gitmem.search.semantic`), fused and ranked into the hits a caller reads (:class:`~gitmem.search.hit.Hit`).

Imported by every search, so, like the index, it imports neither :mod:`re`, :mod:`pathlib` nor :mod:`typing`.
"""

from __future__ import annotations

import tantivy

from gitmem.search import schema as idoc
from gitmem.search import scoring as ranking
from gitmem.search.hit import Hit
from gitmem.search.order import chain_firsts, order_bonus
from gitmem.search.timeexpr import in_period
from gitmem.text.records import replace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import datetime
    from typing import Any

    from gitmem.search import rerank
    from gitmem.search.analysis import QueryTerms
    from gitmem.search.index import Index
    from gitmem.search.order import Order
    from gitmem.search.scoring import Tuning
    from gitmem.search.snapshot import Key
    from gitmem.search.timeexpr import TimeRange

__all__ = ["rank"]


def rank(ix: Index, searcher: Any, bm25: dict[tuple[int, int], float], vector: dict[tuple[int, int], float],
         k: int, now: datetime, when: TimeRange | None, terms: QueryTerms, tuning: Tuning,
         vectors: rerank.QueryVectors | None = None, model: dict[str, float] | None = None,
         matched: dict[Key, dict[int, float]] | None = None,
         order: tuple[Order, float | None, set[Key], dict[Key, tuple[str, str]]] | None = None,
         help_asked: bool = False, governed: frozenset[Key] = frozenset()) -> list[Hit]:
    """The ``k`` best of the candidates (``bm25`` and ``vector`` scores by key) as hits: fused, re-scored by the
    second stage when ``vectors`` are given, moved by date for a question about ``order``, raised for a standing
    rule that governs the question, then weighed with importance and recency (:func:`~gitmem.search.scoring.score`)."""
    blind: set[tuple[int, int]] = set()
    if vectors is not None and ix._blind:  # matched words only: BM25 alone ranks them (``fuse``)
        rest = [key for key in bm25 if key not in vector]
        codes = searcher.fast_field_values("sha64", [tantivy.DocAddress(s, d) for s, d in rest])
        blind = {key for key, code in zip(rest, codes, strict=True) if int(code or 0) in ix._blind}
    fused = ranking.fuse(bm25, vector, tuning, blind=blind)
    if not fused:
        return []
    keys = list(fused)
    addrs = [tantivy.DocAddress(s, d) for s, d in keys]
    wanted = ["importance", "updated"]
    if when is not None or order is not None:
        wanted.append("created")
    if tuning.context_weight > 0:
        wanted += ["grp", "seq"]
    if vectors is not None:
        wanted.append("sha64")
    if help_asked:
        wanted.append("standing")
    columns = {name: searcher.fast_field_values(name, addrs) for name in wanted}
    signals: dict[str, list[float]] = {}
    if vectors is not None:  # the second stage: the model over every signal replaces the fused similarity
        from gitmem.search import rerank, semantic

        signals = semantic.signals(ix, searcher, keys, columns, fused, bm25, when, terms, vectors)
        fused = dict(zip(keys, rerank.combine(signals, model or rerank.WEIGHTS), strict=True))
        tuning = replace(tuning, context_weight=0.0, time_boost=0.0)  # both are signals of the model
    if order is not None:  # by date among the memories on the subject (and of the period named, if one is)
        asked, anchor, linked, replaced_by = order
        sims, created = [fused[key] for key in keys], columns["created"]
        if asked.kind == "first" and replaced_by:  # a chain's first state: as near the subject as its nearest
            firsts = chain_firsts(replaced_by, fused)
            sims = [max(sim, firsts.get(key, 0.0)) for key, sim in zip(keys, sims, strict=True)]
        bonus = order_bonus(asked, sims, [float(c or 0) for c in created], weight=tuning.order_weight,
                            linked=[key in linked for key in keys] if linked else None,
                            anchor_at=anchor, within=None if when is None else in_period(created, when, len(keys)))
        fused = {key: sim + extra for key, sim, extra in zip(keys, sims, bonus, strict=True)}
    if help_asked or governed:
        # a standing instruction or preference governs the answer when the request for help matched its words
        # or when it names the question's subject (a rule that does, stands): one bonus either way
        flags = columns["standing"] if help_asked else [0] * len(keys)
        fused = {key: fused[key] + (tuning.standing_weight if key in governed or (flag and key in bm25) else 0.0)
                 for key, flag in zip(keys, flags, strict=True)}
    scored = ranking.score(keys, fused, columns, bm25, vector, k=k, when=when, now=now,
                           weights=ix.repo.config.ranking, tuning=tuning, signals=signals)
    highlight = frozenset(terms.highlight_terms())
    hits: list[Hit] = []
    for score, key, parts in scored[:k]:
        doc = searcher.doc(tantivy.DocAddress(*key))
        memory = idoc.memory_from_json(doc["doc"][0])
        chunks = _chunks_by_score((matched or {}).get(key, {}))
        best = chunks[0][0] if chunks else 0
        hits.append(Hit(id=memory.id, score=score, memory=memory, parts=parts, path=doc["path"][0],
                        terms=highlight, analyzer=ix._analyzer, chunk=best,
                        chunk_scores=tuple(c for c in chunks if c[0])))
    return hits


def _chunks_by_score(found: dict[int, float]) -> list[tuple[int, float]]:
    """``(n, score)`` of a memory's matched chunks, best first; on a tie the memory as a whole (0), then the
    earlier chunk."""
    return sorted(found.items(), key=lambda chunk: (-chunk[1], chunk[0]))
