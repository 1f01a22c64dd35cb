"""How close an embedding model's cosine must be for a memory to count as related to a query at all, per model.

Search scores are relative: the fusion scales each query's best candidate to 1, so the nearest of a set of unrelated
memories looks like a perfect match, and a search for ``zzzqqq`` would list memories whose cosine with it is 0.2.
A memory that shares a word with the query (a BM25 match) is related by that alone; one found by its vector alone
is related only when its cosine reaches the model's floor. Two floors, both measured:

* :data:`SEARCH_COSINE_MIN`: what an explicit search shows (``gitmem search``, MCP, HTTP; ``related_only``). With
  the packaged MiniLM, off-topic and made-up queries ("zzzqqq", "quantum chromodynamics lattice", "kubernetes helm
  chart rollback" over a LoCoMo conversation) reach cosines of 0.07–0.23; dropping the vector-only hits under 0.25
  costs R@10 at most 0.001 on LoCoMo, BEAM, XQuAD and DuLeMon (zh), 0.012 on DuLeMon (en) dev and nothing on its
  test part, where 0.30 would cost 0.019 (``bench/sets/floor.py``, ``docs/search.md``). A missed memory is
  invisible to the user and a stray hit is not, so the floor sits just above the noise, not above the chit-chat.
  The cosine it is held against is taken beyond the empty text (:func:`beyond_empty`), so that a made-up query
  does not find a memory of one word.
* :data:`INJECT_COSINE_MIN`: what a hook puts into the agent's context unasked (:mod:`gitmem.briefing.gate`),
  stricter, measured on ``bench/sessions.py``.

A model without a measured floor has none: its vector-only hits are kept by a search and never injected on their
own. multilingual-e5-small has none on purpose: its cosines crowd between 0.80 and 0.90, and no floor admits a
needed memory for a Chinese prompt without many others (0.86: 2 needed of 77).
"""

from __future__ import annotations

import math

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the prompt hook imports this module (through the gate)
if TYPE_CHECKING:
    from collections.abc import Container, Mapping
    from typing import TypeVar

    K = TypeVar("K")

#: cosine a memory found by its vector alone needs to be shown by a search, per embedding model (id prefix)
SEARCH_COSINE_MIN: dict[str, float] = {
    "minilm-l6": 0.25,
}
#: cosine a memory found by its vector alone needs to be injected unasked, per embedding model (id prefix)
INJECT_COSINE_MIN: dict[str, float] = {
    "minilm-l6": 0.40,
}


def floor(table: dict[str, float], model_id: str) -> float | None:
    """The model's floor in ``table`` (:data:`SEARCH_COSINE_MIN` or :data:`INJECT_COSINE_MIN`), None for a model
    that was never measured."""
    return next((value for prefix, value in table.items() if model_id.startswith(prefix)), None)


def beyond_empty(cosine: float, query_empty: float, memory_empty: float) -> float:
    """The cosine of a query and a memory with the direction of the empty text's vector taken out of both
    (``query_empty``, ``memory_empty``: each one's cosine with it): near-empty texts, a made-up word ("zzzqqq",
    "asdf") and a one-word memory ("x", "ok"), all lie near that vector and so near each other (cosines 0.3-0.5
    with the packaged MiniLM, above the search floor), with nothing in common. A memory of a few words or more
    lies far from it (0.0-0.1), and its cosine hardly changes."""
    rest = math.sqrt(max((1.0 - query_empty * query_empty) * (1.0 - memory_empty * memory_empty), 1e-12))
    return (cosine - query_empty * memory_empty) / rest


def related(cosines: Mapping[K, float], matched: Container[K], model_id: str) -> set[K]:
    """Which of the candidates a search found by its vectors (``cosines``: each one's best cosine with the query)
    a search shows: the ones ``matched`` by a query word, and the others at the model's search floor
    (:data:`SEARCH_COSINE_MIN`); all of them for a model that has no floor."""
    least = floor(SEARCH_COSINE_MIN, model_id)
    return {key for key, cosine in cosines.items() if least is None or cosine >= least or key in matched}
