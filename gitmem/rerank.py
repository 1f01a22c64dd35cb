"""The second stage of a hybrid search: one linear model over eight signals of each candidate.

The first stage (:mod:`gitmem.index`) gathers candidates: the BM25 top 100 (plus the ones from the period a
question names) and the vector top 100. This module scores them with signals a single fused similarity misses:

``bm25``               BM25 divided by the best candidate's
``cosine``             cosine of the memory's vector with the question's
``context_cosine``     cosine with the normalised mean of the memory's vector and its ±2 neighbours' (memories
                       captured one after another from the same source)
``neighbour``          the best ±2 neighbour's first-stage similarity (0.6·bm25 + 0.4·min-max cosine)
``time``               1 when the memory was created in the period the question names
``coverage``           the share of the question's words in the memory's text, each word weighted by its idf
``context_coverage``   the same over the memory's text and its ±2 neighbours'
``sentence``           the best cosine among the memory's sentences (its own cosine when it has one sentence)

The weights were fitted (pairwise logistic regression) on LoCoMo conversations 0–2 and checked on 3–4, which they
never saw: hybrid Recall@10 on categories 1–4 went from 0.757 to 0.789 there, and multi-hop questions gained most.
``docs/search.md`` has the measurements. numpy is imported only here and only by a hybrid search.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

#: signal → weight of the linear model (see the module docstring)
WEIGHTS: dict[str, float] = {
    "bm25": 1.0, "cosine": 1.0, "context_cosine": 6.5, "neighbour": 0.6, "time": 2.5,
    "coverage": 1.1, "context_coverage": 3.6, "sentence": 6.8,
}

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")
_LABEL = re.compile(r"^([^\s:：][^:：\n]{0,29}[:：])\s+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def sentences(text: str) -> list[str]:
    """The sentences of a memory worth a vector of their own: none when it has fewer than two of at least three
    words (or six CJK characters); its own vector covers it then. A leading label ("Alice: ", "Note: ") is kept
    on every sentence, so each one still says who or what it is about."""
    match = _LABEL.match(text)
    label = match.group(1) + " " if match else ""
    body = text[match.end():] if match else text
    parts = [p.strip() for p in _SENTENCE_END.split(body)]
    kept = [p for p in parts if len(p.split()) >= 3 or len(_CJK.findall(p)) >= 6]
    return [label + p for p in kept] if len(kept) >= 2 else []


@dataclass
class Neighbourhood:
    """Who is next to whom, and which words each memory uses, for every memory in the index (from its state)."""

    tokens: dict[int, frozenset[str]]
    """sha64 → the memory's distinct analyzed words"""
    around: dict[int, tuple[int, ...]]
    """sha64 → the sha64s of its neighbours within the context window (same source, by position)"""

    @classmethod
    def build(cls, entries: Sequence[tuple[int, int, int, Sequence[str]]], window: int) -> Neighbourhood:
        """From ``(sha64, group hash, position, tokens)`` of every indexed memory (group 0: no neighbours)."""
        tokens = {sha: frozenset(toks) for sha, _g, _s, toks in entries}
        by_slot = {(g, s): sha for sha, g, s, _t in entries if g}
        around: dict[int, tuple[int, ...]] = {}
        for sha, g, s, _t in entries:
            if g:
                found = (by_slot.get((g, s + d)) for d in range(-window, window + 1) if d)
                around[sha] = tuple(n for n in found if n is not None)
        return cls(tokens, around)


@dataclass
class QueryVectors:
    """The question's vector and its cosine with every stored memory and sentence vector."""

    query: NDArray[np.float32]
    matrix: NDArray[np.float32]
    cosines: NDArray[np.float32]
    row_of: Mapping[int, int]
    """sha64 → row of ``matrix``"""
    sentence_of: Mapping[int, int]
    """sha64 → position in ``sentence_best`` (memories with sentence vectors only)"""
    sentence_best: NDArray[np.float32]
    """the best sentence cosine of each memory that has sentence vectors"""


def idf(doc_freq: Mapping[str, int], total: int) -> dict[str, float]:
    """The weight of each question word: rarer words say more about what is asked."""
    return {w: math.log(1 + total / (1 + df)) for w, df in doc_freq.items()}


def _coverage(words: Mapping[str, float], token_sets: Sequence[frozenset[str]]) -> float:
    if not words:
        return 0.0
    total = sum(words.values())
    return sum(weight for word, weight in words.items() if any(word in toks for toks in token_sets)) / total


def signals(keys: Sequence[Any], sha64: Sequence[int], first_stage: Mapping[Any, float], bm25: Mapping[Any, float],
            in_period: Sequence[bool], words: Mapping[str, float], hood: Neighbourhood,
            vectors: QueryVectors) -> dict[str, list[float]]:
    """Every signal of the module docstring for each candidate (aligned with ``keys``). ``first_stage`` is the
    fused similarity, ``words`` the question's words with their idf."""
    import numpy as np

    best_bm25 = max(bm25.values(), default=0.0)
    slot = {s: i for i, s in enumerate(sha64)}
    out: dict[str, list[float]] = {name: [] for name in WEIGHTS}
    for i, key in enumerate(keys):
        sha = sha64[i]
        row = vectors.row_of.get(sha)
        cosine = float(vectors.cosines[row]) if row is not None else 0.0
        near = hood.around.get(sha, ())
        rows = [r for r in (row, *(vectors.row_of.get(n) for n in near)) if r is not None]
        if rows:
            mean = vectors.matrix[rows].sum(axis=0)
            norm = float(np.linalg.norm(mean))
            context_cosine = float(mean @ vectors.query) / norm if norm > 0 else 0.0
        else:
            context_cosine = 0.0
        # neighbours count only when they are candidates themselves (as in the first stage)
        neighbour = max((first_stage[keys[slot[n]]] for n in near if n in slot), default=0.0)
        own = hood.tokens.get(sha, frozenset())
        out["bm25"].append(bm25.get(key, 0.0) / best_bm25 if best_bm25 > 0 else 0.0)
        out["cosine"].append(cosine)
        out["context_cosine"].append(context_cosine)
        out["neighbour"].append(neighbour)
        out["time"].append(1.0 if in_period[i] else 0.0)
        out["coverage"].append(_coverage(words, [own]))
        out["context_coverage"].append(_coverage(words, [own, *(hood.tokens.get(n, frozenset()) for n in near)]))
        position = vectors.sentence_of.get(sha)
        out["sentence"].append(float(vectors.sentence_best[position]) if position is not None else cosine)
    return out


def combine(values: Mapping[str, Sequence[float]], weights: Mapping[str, float] = WEIGHTS) -> list[float]:
    """The model's score of each candidate, scaled to [0.01, 1] over the candidates, so it can stand in for the
    similarity in ``w_sim·similarity + w_imp·importance/5 + w_rec·recency`` (every candidate matched a word or
    is among the nearest vectors, so none drops to 0)."""
    n = len(next(iter(values.values()), []))
    raw = [sum(weights[name] * values[name][i] for name in weights) for i in range(n)]
    if not raw:
        return []
    low, high = min(raw), max(raw)
    if high - low < 1e-12:
        return [1.0] * n
    return [0.01 + 0.99 * (r - low) / (high - low) for r in raw]
