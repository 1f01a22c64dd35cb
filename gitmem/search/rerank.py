"""The second stage of a hybrid search: one linear model over eight signals of each candidate.

The first stage (:mod:`gitmem.search.index`) gathers candidates: the BM25 top 100 (plus the ones from the period a
question names) and the vector top 100. This module scores them with signals a single fused similarity misses:

``bm25``               BM25 divided by the best candidate's
``cosine``             cosine of the memory's vector with the question's
``context_cosine``     cosine with the normalised mean of the memory's vector and its ±2 neighbours' (memories
                       captured one after another from the same source)
``neighbour``          the best ±2 neighbour's first-stage similarity (0.6·bm25 + 0.4·min-max cosine)
``time``               1 when the memory was created in the period the question names
``coverage``           the share of the question's words in the memory's text, each word weighted by its idf
``context_coverage``   the same over the memory's text and its ±2 neighbours'
``sentence``           the best cosine among the memory's sentences (its own cosine when it has one sentence); for
                       a long memory its best chunk's, less what chance gives the best of n (:func:`best_part`)

A source whose consecutive memories read no nearer each other than any two memories of the repository (one
person's facts in a row, not a conversation: :data:`gitmem.search.neighbourhood.COHERENT`) lends its memories no
``neighbour`` and no ``context_coverage`` beyond their own.

The packaged model's weights were fitted once (pairwise logistic regression, ``bench/fit_rerank.py``) on the pooled
development questions of three sets — LoCoMo conversations 0–2, the BEAM development chats and XQuAD en — and
read on questions they never saw: LoCoMo conversations 3–4 and each BEAM chat left out of its own fit. ``cosine`` is
nearly collinear with ``context_cosine`` (which includes the memory's own vector) and with ``sentence`` (equal to it
for a one-sentence memory); its negative weight takes back part of what those give the memory's own vector, so the
whole memory counts less than its best sentence and its neighbourhood. For a memory of one sentence or without
neighbours its net weight stays positive, so such a memory nearer the question is not ranked lower. They are
fitted per embedding model (:data:`MODEL_WEIGHTS`); a model without its own fit keeps the first stage.
``docs/search.md`` has the measurements. numpy is imported only here and only by a hybrid search.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from gitmem.text import scripts
from gitmem.text.lazyre import LazyPattern

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from gitmem.search.neighbourhood import Neighbourhood

#: signal → weight of the linear model for the packaged MiniLM (see the module docstring)
WEIGHTS: dict[str, float] = {
    "bm25": 1.0, "cosine": -1.3, "context_cosine": 5.2, "neighbour": 0.39, "time": 2.0,
    "coverage": 1.4, "context_coverage": 3.4, "sentence": 8.5,
}
#: model id prefix → weights fitted for that model. Cosines of different models live on different scales
#: (multilingual-e5's spread over a few hundredths), so the weights do not carry over: a model without its own
#: fit keeps the first stage alone.
MODEL_WEIGHTS: dict[str, dict[str, float]] = {
    "minilm-l6": WEIGHTS,
    "multilingual-e5-small": {
        "bm25": 0.75, "cosine": 9.8, "context_cosine": 54.0, "neighbour": 0.83, "time": 2.9,
        "coverage": 2.0, "context_coverage": 4.5, "sentence": 22.0,
    },
}


#: model id prefix → the share of its BM25 weight a question holding Chinese, Japanese or Korean characters gets,
#: for a model that reads them. BM25 over single characters and bigrams matches more by chance than over words;
#: with multilingual-e5-small, half took DuLeMon dev from 0.776 to 0.800 and XQuAD zh test from 0.982 to 0.984,
#: XQuAD zh dev unchanged at 0.989 (a quarter: the same; none: DuLeMon 0.788; measured on Chinese only):
#: docs/search.md. A share, not a weight, so that a refit of the model's weights keeps it.
CJK_BM25_SHARE: dict[str, float] = {"multilingual-e5-small": 0.5}


def weights_for(model_id: str, question: str = "") -> dict[str, float] | None:
    """The second stage's weights for an embedding model (and, when it matters, the question's script), or None when
    none were fitted for the model."""
    weights = _by_prefix(MODEL_WEIGHTS, model_id)
    return None if weights is None else for_question(weights, model_id, question)


def for_question(weights: Mapping[str, float], model_id: str, question: str) -> dict[str, float]:
    """``weights`` as a search by ``model_id`` uses them for ``question`` (:data:`CJK_BM25_SHARE`)."""
    share = _by_prefix(CJK_BM25_SHARE, model_id)
    if share is not None and scripts.is_cjk(question):
        return {**weights, "bm25": weights["bm25"] * share}
    return dict(weights)


#: model id prefix → the cosine between a question and the subject a standing rule names ("when I ask about
#: *deadlines*", :func:`gitmem.search.standing.condition`) from which the rule governs the question. With the
#: packaged MiniLM on BEAM's chats, a rule's own subject reads 0.48–0.84 against 12 of the 16 questions it governs
#: (0.16–0.30 where the meanings are far apart: "my meetings" and "scheduling details"), and the nearest other
#: subject reads above 0.44 for a quarter of the other questions; chosen on the dev part (docs/search.md). A model
#: without an entry has no such link: its cosines live on another scale.
CONDITION_MATCH: dict[str, float] = {"minilm-l6": 0.45}

T = TypeVar("T")


def condition_match(model_id: str) -> float | None:
    """The cosine from which a rule's subject governs a question, with this model (:data:`CONDITION_MATCH`)."""
    return _by_prefix(CONDITION_MATCH, model_id)


def _by_prefix(table: Mapping[str, T], model_id: str) -> T | None:
    """The entry of ``table`` whose key ``model_id`` starts with (a model id carries variant suffixes)."""
    return next((value for prefix, value in table.items() if model_id.startswith(prefix)), None)


_SENTENCE_END = LazyPattern(r"(?<=[.!?])\s+|(?<=[。！？])")
_LABEL = LazyPattern(r"^([^\s:：][^:：\n]{0,29}[:：])\s+")


def sentences(text: str) -> list[str]:
    """The sentences of a memory worth a vector of their own: none when it has fewer than two of at least three
    words (or six CJK characters); its own vector covers it then. A leading label ("Alice: ", "Note: ") is kept
    on every sentence, so each one still says who or what it is about."""
    match = _LABEL.match(text)
    label = match.group(1) + " " if match else ""
    body = text[match.end():] if match else text
    parts = [p.strip() for p in _SENTENCE_END.split(body)]
    kept = [p for p in parts if len(p.split()) >= 3 or scripts.count_cjk(p) >= 6]
    return [label + p for p in kept] if len(kept) >= 2 else []


@dataclass
class QueryVectors:
    """The question's vector and its cosine with every stored memory and sentence vector."""

    query: NDArray[np.float32]
    matrix: NDArray[np.float32]
    cosines: NDArray[np.float32]
    row_of: Mapping[int, int]
    """sha64 → row of ``matrix``"""
    sentence_of: Mapping[int, int]
    """sha64 → position in ``sentence_best`` (memories with sentence or chunk vectors only)"""
    sentence_best: NDArray[np.float32]
    """the best part cosine of each memory with sentence or chunk vectors (:func:`best_part`: a long memory's chunks
    discounted)"""
    found: dict[Any, int] = field(default_factory=dict)
    """the row of ``matrix`` of each memory :func:`gitmem.search.semantic.nearest` found (by its document key)"""


def best_part(cosines: NDArray[np.float32], starts: NDArray[np.int64],
              discounted: NDArray[np.bool_]) -> NDArray[np.float32]:
    """The best cosine in each group of part vectors (rows grouped by memory, each group from its ``starts``
    entry): a memory's sentences, or a long memory's chunks.

    The groups in ``discounted`` (a long memory's chunks) lose what chance alone lifts the best of n above the
    others: the spread of the other n-1 cosines times sqrt(2 ln n), the expected excess of the largest of n
    normal draws. A long reply that touches the question's topic in each of its ten chunks would otherwise
    outrank the short message that answers it, only because its best was drawn from ten (BEAM: the evidence is
    mostly short, half the messages are long). The spread leaves the best out, so one passage that stands out
    from the rest of its page keeps nearly its full cosine."""
    import numpy as np

    best = np.maximum.reduceat(cosines, starts)
    if not discounted.any():
        return best
    values, top = cosines.astype(np.float64), best.astype(np.float64)
    counts = np.diff(np.append(starts, len(values)))
    others = np.maximum(counts - 1, 1)
    mean = (np.add.reduceat(values, starts) - top) / others
    spread = np.sqrt(np.maximum((np.add.reduceat(values * values, starts) - top * top) / others - mean * mean, 0.0))
    excess = spread * np.sqrt(2.0 * np.log(counts))
    return np.where(discounted, top - excess, top).astype(np.float32)


def idf(doc_freq: Mapping[str, int], total: int) -> dict[str, float]:
    """The weight of each question word: rarer words say more about what is asked."""
    return {w: math.log(1 + total / (1 + df)) for w, df in doc_freq.items()}


def signals(keys: Sequence[Any], sha64: Sequence[int], first_stage: Mapping[Any, float], bm25: Mapping[Any, float],
            in_period: Sequence[bool], words: Mapping[str, float], hood: Neighbourhood,
            vectors: QueryVectors) -> dict[str, list[float]]:
    """Every signal of the module docstring for each candidate (aligned with ``keys``). ``first_stage`` is the
    fused similarity, ``words`` the question's words with their idf."""
    import numpy as np

    n, total = len(keys), len(hood.shas)
    at = hood.positions(sha64)  # ``total``: not in the state
    known = at < total
    near = np.where(known[:, None], hood.near[np.where(known, at, 0)], -1) if total \
        else np.full((n, 2 * hood.window), -1, dtype=np.int64)
    if total:  # a source that is no conversation lends its memories neither words nor first stage
        apart = np.zeros(n, dtype=bool)
        apart[known] = hood.apart(at[known], vectors.matrix, vectors.row_of)
        near = np.where(apart[:, None], -1, near)
    present = near >= 0
    slot_of = np.where(present, near, total)  # ``total`` indexes an extra all-zero row below
    # the best neighbour's first stage, among the candidates
    first = np.zeros(total + 1)
    first[at[known]] = [first_stage[key] for key, ok in zip(keys, known, strict=True) if ok]
    neighbour = first[slot_of].max(axis=1) if near.shape[1] else np.zeros(n)
    # question-word coverage of the memory and of its neighbourhood, weighted by idf
    wordlist = list(words)
    weights = np.array([words[w] for w in wordlist]) if wordlist else np.zeros(0)
    contains = np.zeros((total + 1, len(wordlist)), dtype=bool)
    for k, word in enumerate(wordlist):
        contains[hood.having(word), k] = True
    own = contains[at]
    context = own | contains[slot_of].any(axis=1)
    scale = float(weights.sum()) or 1.0
    # cosines: the memory's, and the normalised mean of its and its neighbours' vectors
    rows = np.full((n, 1 + near.shape[1]), -1, dtype=np.int64)
    rows[known] = hood.vector_rows(vectors.row_of)[at[known]]  # every neighbour (see ``COHERENT``)
    for missing in np.flatnonzero(~known).tolist():
        rows[missing, 0] = vectors.row_of.get(sha64[missing], -1)
    valid = rows >= 0
    gathered = vectors.matrix[np.where(valid, rows, 0)]  # (candidates, 1 + neighbours, dim)
    gathered[~valid] = 0.0  # in place: 2.5 times faster than multiplying by the mask
    summed = np.add.reduce(gathered, axis=1)
    norms = np.sqrt(np.einsum("ij,ij->i", summed, summed))
    context_cos = np.divide(summed @ vectors.query, norms, out=np.zeros(n, np.float32), where=norms > 0)
    cosine = np.where(valid[:, 0], vectors.cosines[np.where(valid[:, 0], rows[:, 0], 0)], 0.0)
    sentence = cosine.astype(np.float64)
    for slot, sha in enumerate(sha64):
        position = vectors.sentence_of.get(sha)
        if position is not None:
            sentence[slot] = vectors.sentence_best[position]
    # a memory without a vector (a script the model does not cover: a zero row) gets the candidates' mean for
    # every cosine signal, so the model neither helps nor holds it back; BM25 and the word signals rank it
    blind = ~gathered[:, 0, :].any(axis=1)
    if blind.any():
        for values in (cosine, context_cos, sentence):
            values[blind] = float(values[~blind].mean()) if (~blind).any() else 0.0
    best_bm25 = max(bm25.values(), default=0.0)
    return {
        "bm25": [bm25.get(key, 0.0) / best_bm25 if best_bm25 > 0 else 0.0 for key in keys],
        "cosine": cosine.tolist(),
        "context_cosine": context_cos.tolist(),
        "neighbour": neighbour.tolist(),
        "time": [1.0 if p else 0.0 for p in in_period],
        "coverage": (own @ weights / scale).tolist() if wordlist else [0.0] * n,
        "context_coverage": (context @ weights / scale).tolist() if wordlist else [0.0] * n,
        "sentence": sentence.tolist(),
    }


def combine(values: Mapping[str, Sequence[float]], weights: Mapping[str, float] = WEIGHTS) -> list[float]:
    """The model's score of each candidate, scaled to [0.01, 1] over the candidates, so it can stand in for the
    similarity in ``w_sim·similarity + w_imp·importance/5 + w_rec·recency`` (every candidate matched a word or
    is among the nearest vectors, so none drops to 0)."""
    import numpy as np

    n = len(next(iter(values.values()), []))
    if not n:
        return []
    raw = np.zeros(n)
    for name, weight in weights.items():
        raw += weight * np.asarray(values[name], dtype=np.float64)
    low, high = float(raw.min()), float(raw.max())
    if high - low < 1e-12:
        return [1.0] * n
    scaled: list[float] = (0.01 + 0.99 * (raw - low) / (high - low)).tolist()
    return scaled
