"""Ranking for the search index: the knobs (:class:`Tuning`), the tantivy queries and filters, fusion of BM25 and
vector scores, the final weighted score, and snippets (how text becomes terms: :mod:`gitmem.search.analysis`; time
expressions: :mod:`gitmem.search.timeexpr`).

Pure Python apart from the tantivy analyzer: no numpy, no git. :mod:`gitmem.search.index` owns the storage and calls
these functions; ``docs/search.md`` explains every choice and the measurements behind it.
"""

from __future__ import annotations

import itertools
import math

import tantivy

from gitmem.errors import SearchError
from gitmem.search.analysis import QueryTerms
from gitmem.text import scripts
from gitmem.text.records import Record

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: a search does not import typing (~3 ms a process)
if TYPE_CHECKING:
    from collections.abc import Collection, Mapping, Sequence
    from datetime import datetime
    from typing import Any, TypeVar

    from gitmem.config import RankingConfig
    from gitmem.search.timeexpr import TimeRange

    K = TypeVar("K")

#: the ``project`` term of memories with no project (global scope)
GLOBAL_PROJECT = "@global"
# -- scoring ---------------------------------------------------------------------------------------------

class Tuning(Record):
    """Knobs of the ranking, chosen by measurement on LoCoMo (``bench/locomo.py``, ``docs/search.md``).

    Field boosts multiply the BM25 score of each field; ``ctx`` holds the text of the ``context_window``
    memories before and after this one from the same source (session). ``pair_weight`` scores adjacent query
    words found within ``pair_slop`` positions of each other in the ``pair_fields`` (space-separated; the
    ``ctx`` field too costs ~0.35 ms a query at 10k memories for BM25 R@10 +0.006 on LoCoMo, hybrid unchanged,
    so it is left out). ``context_weight`` adds that share of the best
    neighbour's similarity. ``fusion`` ``convex`` mixes max-normalised BM25 with min-max-normalised cosine
    (``vector_weight``); ``rrf`` is reciprocal-rank fusion; ``ltr`` (hybrid searches with a model) ranks the
    convex mix's candidates again with :mod:`gitmem.search.rerank`'s model. ``time_boost`` is added to the similarity
    of memories created in a period the question names; ``order_weight`` is the largest bonus a question about
    order ("first", "the latest", "before X") gives by creation date (:mod:`gitmem.search.order`);
    ``standing_weight`` is added to the similarity of a memory stating a standing instruction or preference whose
    words a question asking for help matched (:mod:`gitmem.search.standing`).
    :func:`gitmem.text.records.replace` changes a knob; :attr:`FIELDS` names them."""

    boost_name: float = 2.0
    boost_description: float = 1.5
    boost_body: float = 1.0
    boost_tags: float = 2.0
    boost_ctx: float = 0.3
    bigram_weight: float = 1.0
    char_weight: float = 0.7
    pair_weight: float = 0.5
    pair_slop: int = 2
    pair_fields: str = "body"
    context_window: int = 2
    context_weight: float = 0.5
    fusion: str = "ltr"
    rrf_k: float = 60.0
    vector_weight: float = 0.4
    time_boost: float = 0.5
    order_weight: float = 0.3
    standing_weight: float = 0.8
    candidates: int = 100


DEFAULT_TUNING = Tuning()


# -- queries -------------------------------------------------------------------------------------------

def text_query(schema: Any, terms: QueryTerms, tuning: Tuning) -> Any:
    """An OR of every search unit over every text field, BM25-scored with the field's boost: words as terms,
    CJK pairs as two-token phrases, lone CJK characters as weak terms, adjacent words as sloppy phrases."""
    Q, should = tantivy.Query, tantivy.Occur.Should
    boosts = {"name": tuning.boost_name, "description": tuning.boost_description, "body": tuning.boost_body,
              "tags": tuning.boost_tags, "ctx": tuning.boost_ctx}
    words = list(terms.words)
    pair_fields = tuning.pair_fields.split()
    subs: list[tuple[Any, Any]] = []
    for name, boost in boosts.items():
        if boost <= 0:
            continue
        for word, weight in terms.words.items():
            subs.append((should, Q.boost_query(Q.term_query(schema, name, word), boost * weight)))
        for pair, weight in terms.bigrams.items():
            subs.append((should, Q.boost_query(Q.phrase_query(schema, name, list(pair)),
                                               boost * weight * tuning.bigram_weight)))
        for char, weight in terms.chars.items():
            subs.append((should, Q.boost_query(Q.term_query(schema, name, char), boost * weight * tuning.char_weight)))
        if tuning.pair_weight > 0 and name in pair_fields:
            for a, b in itertools.pairwise(words):
                subs.append((should, Q.boost_query(Q.phrase_query(schema, name, [a, b], slop=tuning.pair_slop),
                                                   boost * tuning.pair_weight)))
    return Q.boolean_query(subs)


def filter_clauses(schema: Any, *, type: str | None = None, category: str | None = None,
                   tags: Sequence[str] = (), project: str | None = None,
                   include_deprecated: bool = False) -> list[tuple[Any, Any]]:
    """Boolean clauses (scoring nothing) for the search filters; ``project`` also admits global memories."""
    Q, Occur = tantivy.Query, tantivy.Occur
    out: list[tuple[Any, Any]] = []
    if type:
        out.append((Occur.Must, Q.term_query(schema, "type", type)))
    if category:
        out.append((Occur.Must, Q.term_query(schema, "category", category)))
    for tag in tags:
        if tag.strip():
            out.append((Occur.Must, Q.term_query(schema, "tag", " ".join(tag.split()).lower())))
    if project is not None:
        out.append((Occur.Must, Q.term_set_query(schema, "project", [project or GLOBAL_PROJECT, GLOBAL_PROJECT])))
    if not include_deprecated:
        out.append((Occur.MustNot, Q.term_query(schema, "deprecated", 1)))
    return [(occur, Q.const_score_query(q, 0.0) if occur == Occur.Must else q) for occur, q in out]


def time_clause(schema: Any, when: TimeRange) -> tuple[Any, Any]:
    """A clause keeping only memories created in ``when``."""
    q = tantivy.Query.range_query(schema, "created", tantivy.FieldType.Integer, int(when.start.timestamp()),
                                  int(when.end.timestamp()), include_upper=False)
    return tantivy.Occur.Must, tantivy.Query.const_score_query(q, 0.0)


#: the ``superseded`` field of a deprecated memory replaced by another (0: current, or forgotten): compacted into a
#: summary (a past fact, in no chain of changes), or replaced by a later state (a supersede chain's past state)
COMPACTED, REPLACED = 1, 2


def deprecated_clause(schema: Any) -> tuple[Any, Any]:
    """A clause keeping only the memories replaced by another (with the filters of ``include_deprecated=True``:
    the past states :mod:`gitmem.search.order` looks among; not the forgotten ones); it adds nothing to their BM25."""
    Q, should = tantivy.Query, tantivy.Occur.Should
    either = Q.boolean_query([(should, Q.term_query(schema, "superseded", value)) for value in (COMPACTED, REPLACED)])
    return tantivy.Occur.Must, Q.const_score_query(either, 0.0)


def key_clause(schema: Any, memory_id: str) -> tuple[Any, Any]:
    """A clause keeping only the memory ``memory_id`` (and its chunks); it adds nothing to its BM25."""
    return tantivy.Occur.Must, tantivy.Query.const_score_query(tantivy.Query.term_query(schema, "key", memory_id), 0.0)


#: the text field holding the subject a standing rule names (:func:`gitmem.search.standing.condition`), searched
#: apart from the text fields
SUBJECT_FIELD = "cond"


def subject_query(schema: Any, terms: QueryTerms) -> Any | None:
    """The rules whose subject holds a word or a CJK character of the question (None: nothing to look for); whether
    the question holds the whole subject is :func:`names_subject`'s to say."""
    Q, should = tantivy.Query, tantivy.Occur.Should
    units = [*terms.words, *terms.chars]
    if not units:
        return None
    return Q.boolean_query([(should, Q.term_query(schema, SUBJECT_FIELD, unit)) for unit in units])


def names_subject(question: QueryTerms, subject: QueryTerms) -> bool:
    """Whether ``question`` holds every word of ``subject`` and, of its CJK text, every pair of characters (every
    character when it has one alone)."""
    if subject.empty:
        return False
    return (set(subject.words) <= set(question.words) and set(subject.bigrams) <= set(question.bigrams)
            and (bool(subject.bigrams) or set(subject.chars) <= set(question.chars)))


def standing_clause(schema: Any) -> tuple[Any, Any]:
    """A clause keeping only the memories that state a standing instruction or preference
    (:mod:`gitmem.search.standing`); like the filters, it adds nothing to their BM25."""
    return tantivy.Occur.Must, tantivy.Query.const_score_query(tantivy.Query.term_query(schema, "standing", 1), 0.0)


# -- scores ----------------------------------------------------------------------------------------------

class ScoreParts(Record):
    """Why a hit ranks where it does (``gitmem search --explain``).

    ``score = w_sim·similarity + w_imp·importance/5 + w_rec·recency``; ``similarity`` is the fusion of ``bm25``
    and ``vector`` (cosine) plus the ``context`` and ``time`` bonuses; ``signals`` are the second stage's inputs
    (:mod:`gitmem.search.rerank`), when it ranked this hit. Read-only once made."""

    bm25: float
    vector: float | None
    similarity: float
    importance: float
    recency: float
    context: float = 0.0
    time: float = 0.0
    signals: tuple[tuple[str, float], ...] = ()

    def items(self) -> list[tuple[str, float]]:
        """(name, value) pairs for printing; ``vector`` is left out when no model took part."""
        plain = [(name, float(v)) for name in self.FIELDS
                 if name != "signals" and (v := getattr(self, name)) is not None]
        return plain + [(f"model.{name}", float(value)) for name, value in self.signals]


def score(keys: Sequence[K], fused: Mapping[K, float], columns: Mapping[str, Sequence[int | None]],
          bm25: Mapping[K, float], vector: Mapping[K, float], *, k: int, when: TimeRange | None, now: datetime,
          weights: RankingConfig, tuning: Tuning,
          signals: Mapping[str, Sequence[float]] | None = None) -> list[tuple[float, K, ScoreParts]]:
    """The ``k`` best candidates with their final scores (``signals``, aligned with ``keys``, go into each
    hit's :class:`ScoreParts` as the second stage's inputs). ``columns`` holds, aligned with ``keys``, each
    candidate's ``importance`` and ``updated`` (epoch seconds), ``created`` when the question names a period,
    and its source group ``grp`` and position ``seq`` in it when neighbours count: a candidate then gains
    ``context_weight`` times the similarity of its best neighbour within ``context_window``."""
    n = len(keys)
    sims = [fused[key] for key in keys]
    grp, seq = columns.get("grp"), columns.get("seq")
    context = _context(sims, grp, seq, tuning.context_window, tuning.context_weight) \
        if tuning.context_weight > 0 and grp is not None and seq is not None else [0.0] * n
    timed = [0.0] * n
    created = columns.get("created")
    if when is not None and created is not None and tuning.time_boost:
        start, end = when.start.timestamp(), when.end.timestamp()
        timed = [tuning.time_boost if c is not None and start <= c < end else 0.0 for c in created]
    importance = [(v or 0) / 5 for v in columns["importance"]]
    # recency() inlined: this runs for every candidate of every search
    today, lam, exp = now.timestamp(), weights.decay_lambda / 86400, math.exp
    rec = [exp(-lam * age) if (age := today - (u or 0)) > 0 else 1.0 for u in columns["updated"]]
    w_sim, w_imp, w_rec = weights.w_sim, weights.w_imp, weights.w_rec
    similarity = [a + b + c for a, b, c in zip(sims, context, timed, strict=True)]
    totals = [w_sim * sim + w_imp * imp + w_rec * r for sim, imp, r in zip(similarity, importance, rec, strict=True)]
    # a candidate with no similarity at all (no word matched, the weakest cosine) is not a result, however
    # important or recent it is
    # what heapq.nlargest(k, ...) returns (the same order among equal totals), without importing heapq
    best_first = sorted([i for i in range(n) if similarity[i] > 0], key=totals.__getitem__, reverse=True)[:k]
    return [(totals[i], keys[i], ScoreParts(bm25=bm25.get(keys[i], 0.0),
                                           vector=vector.get(keys[i]) if vector else None,
                                           similarity=similarity[i], importance=importance[i],
                                           recency=rec[i], context=context[i], time=timed[i],
                                           signals=tuple((name, values[i]) for name, values in signals.items())
                                           if signals else ()))
            for i in best_first]


def _context(sims: Sequence[float], grp: Sequence[int | None], seq: Sequence[int | None], window: int,
             weight: float) -> list[float]:
    """``weight`` times the best similarity among each candidate's neighbours (same source group, position
    within ``window``) that are candidates too."""
    context = [0.0] * len(sims)
    # most candidates are alone in their source: find the sources met twice first, then look only at those (a
    # set, not collections.Counter: importing collections costs a hook process more than this loop)
    seen: set[int | None] = set()
    twice: set[int | None] = set()
    for g in grp:
        (twice if g in seen else seen).add(g)
    shared = {g for g in twice if g}
    if not shared:
        return context
    groups: dict[int, list[int]] = {g: [] for g in shared}
    for i, g in enumerate(grp):
        if g in shared and seq[i] is not None:
            groups[g].append(i)
    for members in groups.values():
        members.sort(key=lambda i: seq[i] or 0)
        positions = [seq[i] or 0 for i in members]
        for a, i in enumerate(members):
            here, best = positions[a], 0.0
            b = a - 1
            while b >= 0 and here - positions[b] <= window:
                if positions[b] != here and sims[members[b]] > best:
                    best = sims[members[b]]
                b -= 1
            b = a + 1
            while b < len(members) and positions[b] - here <= window:
                if positions[b] != here and sims[members[b]] > best:
                    best = sims[members[b]]
                b += 1
            context[i] = weight * best
    return context


def normalise_scores(scores: Mapping[K, float]) -> dict[K, float]:
    """Scores divided by the best one: the top result gets 1.0."""
    if not scores:
        return {}
    best = max(scores.values())
    if best <= 0:
        return dict.fromkeys(scores, 0.0)
    return {key: value / best if value > 0 else 0.0 for key, value in scores.items()}


def fuse(bm25: Mapping[K, float], vector: Mapping[K, float], tuning: Tuning,
         blind: Collection[K] = ()) -> dict[K, float]:
    """One similarity in [0, 1] per candidate from BM25 scores and cosine similarities.

    ``rrf``: reciprocal-rank fusion, ``w/(k+rank)`` summed over both lists, scaled so that first in both is 1.
    ``convex``: ``(1-w)·bm25/max(bm25) + w·(cos-min)/(max-min)`` over the candidates. ``blind``: candidates the
    model cannot read (no vector): their similarity is ``bm25/max(bm25)`` alone, neither helped nor held back
    by a cosine."""
    if not vector:
        return normalise_scores(bm25)
    if not bm25:
        return _minmax(vector)
    weight = tuning.vector_weight
    if tuning.fusion == "rrf":
        fused: dict[K, float] = {}
        k = tuning.rrf_k
        for scores, w in ((bm25, 1.0 - weight), (vector, weight)):
            for rank, key in enumerate(sorted(scores, key=lambda item: -scores[item]), start=1):
                fused[key] = fused.get(key, 0.0) + w / (k + rank)
        top = 1.0 / (k + 1)
        return {key: value / top for key, value in fused.items()}
    if tuning.fusion in ("convex", "ltr"):  # ltr: this is its first stage
        # (1-w)·bm25/best + w·(cos-low)/(high-low), with the scalings folded into two factors
        best = max(bm25.values())
        low, high = min(vector.values()), max(vector.values())
        b_scale = (1 - weight) / best if best > 0 else 0.0
        v_scale = weight / (high - low) if high - low >= 1e-9 else 0.0
        v_flat = weight if high - low < 1e-9 else 0.0  # every cosine equal: min-max gives them all 1
        fused = {key: v_scale * (value - low) + v_flat for key, value in vector.items()}
        for key, value in bm25.items():
            fused[key] = fused.get(key, 0.0) + (b_scale * value if value > 0 else 0.0)
        for key in blind:
            fused[key] = bm25.get(key, 0.0) / best if best > 0 else 0.0
        return fused
    raise SearchError(f"unknown fusion {tuning.fusion!r}", "use 'ltr', 'convex' or 'rrf'")


def _minmax(scores: Mapping[K, float]) -> dict[K, float]:
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    if high - low < 1e-9:
        return dict.fromkeys(scores, 1.0)
    return {key: (value - low) / (high - low) for key, value in scores.items()}


def recency(days: float, decay_lambda: float) -> float:
    return math.exp(-decay_lambda * max(0.0, days))


# -- snippets --------------------------------------------------------------------------------------------

SNIPPET_CHARS = 160


def snippet(text: str, terms: set[str], analyzer: Any, width: int = SNIPPET_CHARS) -> tuple[str, tuple[
        tuple[int, int], ...]]:
    """About ``width`` characters of ``text`` around the densest cluster of query terms, and the character
    ranges of the matched terms inside the returned string (adjacent CJK characters merged into one range).

    Each match weighs 1 / the number of times its term occurs in ``text``: a term the whole text repeats (the
    article's subject, a common character) says little about where the answer is, and the window holding all of
    a rare term's occurrences gets its full weight (measured on ``bench/sets/longdoc``: docs/search.md)."""
    flat = " ".join(text.split())
    if not flat:
        return "", ()
    spans: list[tuple[int, int]] = []
    found: list[str] = []
    if terms:
        for token in analyzer.pre_tokenize(flat).tokens:
            if token.text in terms and 0 <= token.char_offset_from < token.char_offset_to <= len(flat):
                spans.append((token.char_offset_from, token.char_offset_to))
                found.append(token.text)
    start = 0
    if len(flat) > width and spans:
        times: dict[str, int] = {}
        for term in found:
            times[term] = times.get(term, 0) + 1
        weights = [1.0 / times[term] for term in found]
        best = -1.0
        for s, _e in spans:
            weight = sum(w for (a, b), w in zip(spans, weights, strict=True) if a >= s and b <= s + width)
            if weight > best + 1e-9:  # sums of fractions: a tie must keep the earlier window, whatever the rounding
                best, start = weight, s
        start = max(0, min(start - width // 4, len(flat) - width))
        while 0 < start < len(flat) and not flat[start - 1].isspace() and not scripts.is_cjk(flat[start]):
            start -= 1
    end = min(len(flat), start + width)
    if end < len(flat) and not scripts.is_cjk(flat[end - 1]):
        cut = flat.rfind(" ", start + width // 2, end)
        end = cut if cut > 0 else end
    prefix = "…" if start > 0 else ""
    suffix = "…" if end < len(flat) else ""
    shift = len(prefix) - start
    merged: list[tuple[int, int]] = []
    for s, e in sorted(spans):
        if s < start or e > end:
            continue
        if merged and merged[-1][1] == s + shift and scripts.is_cjk(flat[s]):
            merged[-1] = (merged[-1][0], e + shift)
        else:
            merged.append((s + shift, e + shift))
    return prefix + flat[start:end] + suffix, tuple(merged)
