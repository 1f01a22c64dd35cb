"""The absolute relevance gate: whether a search hit is related to what the session is doing, whatever else
the query found.

Search scores are relative (the fusion scales each query's best match to 1), so the best of a set of unrelated
memories still looks like a perfect match. The gate looks at absolute evidence instead: the raw BM25 score
(query words the memory shares, weighted by their rarity) or the raw cosine of the embedding model, against
thresholds measured on ``bench/sessions.py`` (``docs/search.md`` has the figures). A model's cosine counts only
when the model covers the scripts of both texts: an English-only model gives Chinese text vectors whose
cosines are high and meaningless (on the benchmark, MiniLM cosines of 0.5 and more between Chinese prompts and
English memories were never a needed memory).
"""

from __future__ import annotations

import time

from gitmem.errors import SearchError
from gitmem.text import scripts

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the prompt hook avoids importing typing
if TYPE_CHECKING:
    from collections.abc import Iterable
    from datetime import datetime

    from gitmem.search.hit import Hit
    from gitmem.search.index import Index

#: raw BM25 score a hit needs (about two shared words of medium rarity, or one rare one) ...
BM25_MIN = 5.0
#: share of it a memory of the session's own project needs when the query is the user's own words (a prompt, not
#: the session start's guess from the branch and commit subjects): among the few dozen memories of the project the
#: user works in, a shared rare word is stronger evidence than among everything the user keeps globally
OWN_PROJECT = 0.7
#: ... in a repository of at least this many memories; below it the threshold shrinks in proportion, as the
#: rarity weights of a small collection are small whatever the words (in a repository of one memory, every
#: word is in every memory)
FULL_AT = 200
#: the BM25 threshold times this for a query of Chinese, Japanese or Korean characters (in proportion for a query
#: mixing them with other words: :func:`cjk_share`): its BM25 counts every character as a weak term besides the
#: character pairs (``Tuning.char_weight``), so chance matches score higher. Measured on bench/sessions.py with the
#: characters at 0.7: ×2 admits what ×1 admitted at 0.3 (63 prompts of 90 inject against 62, precision 0.220
#: against 0.223, needed@prompt unchanged); ×1.5: 64 and 0.214; ×1: 70 and 0.193
CJK_FLOOR = 2.0
#: models that only cover Latin-script text (their tokenizers split CJK into unknown or byte pieces)
LATIN_ONLY = ("minilm-l6", "nomic-embed-text")


def covers(model_id: str, *texts: str) -> bool:
    """Whether the model's vectors mean something for every one of ``texts``."""
    if not model_id.startswith(LATIN_ONLY):
        return True
    return not any(scripts.is_cjk(text) for text in texts)


def cosine_min(model_id: str) -> float | None:
    """The cosine a hit needs to be injected (:data:`~gitmem.search.relevance.INJECT_COSINE_MIN`), or None for a
    model that was never measured (its cosine then never admits a hit on its own)."""
    from gitmem.search import relevance  # here: a prompt searched by BM25 alone never asks

    return relevance.floor(relevance.INJECT_COSINE_MIN, model_id)


def bm25_min(size: int) -> float:
    """The BM25 threshold for a repository of ``size`` memories."""
    return BM25_MIN * min(1.0, max(size, 1) / FULL_AT)


def cjk_share(terms: Iterable[str]) -> float:
    """The share of a query's search terms (:attr:`Hit.terms`) that are single CJK characters: the terms whose
    chance matches :data:`CJK_FLOOR` answers for (none in "unit tests です", whose particle is a stopword; 4 of 7
    in "run unit tests 单元测试")."""
    units = list(terms)
    return sum(1 for t in units if len(t) == 1 and scripts.is_cjk(t)) / len(units) if units else 0.0


def _shares_a_word(hit: Hit) -> bool:
    """Whether the memory holds one of the query's Latin-script search words of three letters or more (stems:
    "partit" is in "partitions")."""
    words = [t for t in hit.terms if len(t) >= 3 and t.isascii() and t.isalpha()]
    if not words:
        return False
    text = hit.memory.text.lower()
    return any(word in text for word in words)


def admits(hit: Hit, query: str, model_id: str = "", size: int = FULL_AT, project: str = "",
           own_project: float = 1.0) -> bool:
    """Whether ``hit`` (from a search for ``query`` in a repository of ``size`` memories) passes the gate; a
    memory of ``project`` needs ``own_project`` times the BM25 threshold; a query of CJK characters up to
    :data:`CJK_FLOOR` times the full threshold, by their share of its terms (:func:`cjk_share`), in a repository
    of any size."""
    own = own_project if project and hit.memory.project == project else 1.0
    floor = bm25_min(size) * own
    if not query.isascii() and not _shares_a_word(hit):
        # chance matches of single characters do not shrink with the repository: in one of 20 Chinese memories "用"
        # and "文" carried 今天天气怎么样？用中文回答 to 文件存储用S3 (BM25 1.8). A memory holding one of the query's
        # words in Latin letters ("slurm" in 训练任务提交到哪个 slurm 分区？) matched more than characters
        floor += BM25_MIN * (CJK_FLOOR - 1.0) * cjk_share(hit.terms) * own
    if hit.parts.bm25 > 0 and hit.parts.bm25 >= floor:
        return True
    cosine = hit.parts.vector
    if cosine is None or not model_id or not covers(model_id, query, hit.memory.text):
        return False
    threshold = cosine_min(model_id)
    return threshold is not None and cosine >= threshold


def relevant_hits(index: Index, query: str, *, project: str, k: int, now: datetime | None = None,
                  exclude: set[str] | frozenset[str] = frozenset(), mode: str = "hybrid",
                  own_project: float = 1.0, exclude_parts: Iterable[tuple[str, int]] = ()) -> list[Hit]:
    """The best ``k`` memories for ``query`` that pass the relevance gate, are not in ``exclude`` and have not
    expired (``expires`` at or before ``now``: the time recall stops using a memory, though ``gitmem search`` still
    finds it until ``gc`` deprecates it): an empty list when nothing is related (the gate looks at raw scores, so
    the best of unrelated memories stays out). ``exclude_parts``: ``(id, n)`` of long memories the session was
    shown part ``n`` of (:attr:`Hit.passage`): such a memory comes again only for another part
    (:meth:`Hit.other_part`). ``own_project``: the share of the BM25 threshold a memory of ``project`` needs
    (:data:`OWN_PROJECT` for a prompt)."""
    if not query.strip():
        return []
    parts = set(exclude_parts)
    shown = {memory_id for memory_id, _n in parts}
    # a timestamp, not a datetime: the prompt hook does not load datetime for this
    moment = now.timestamp() if now is not None else time.time()
    # room for hits the session has seen, but not for all of them: past the best few, the rest are weaker
    wanted = base = k + min(len(exclude) + len(parts), 4 * k)
    while True:
        try:
            hits = index.search(query, k=wanted, project=project, now=now, mode=mode)
        except SearchError:  # a query of stopwords or punctuation only: nothing to look for
            return []
        expired = {h.id for h in hits if h.memory.expires is not None and h.memory.expires.timestamp() <= moment}
        # expired memories (gc has not deprecated them yet) took places a live one may need: search again with
        # room for them; each round finds more of them or stops, and they are rare (gc removes them)
        if not expired or len(hits) < wanted or base + len(expired) <= wanted:
            break
        wanted = base + len(expired)
    embedder = index.embedder if mode != "bm25" else None
    model_id = embedder.model_id if embedder is not None else ""
    size = index.size
    kept: list[Hit] = []
    for hit in hits:
        if hit.id in exclude or hit.id in expired:
            continue
        if hit.id in shown and _part(hit) in parts:  # the part it would show was shown: another, or none
            other = hit.other_part({n for memory_id, n in parts if memory_id == hit.id})
            if other is None:
                continue
            hit = other
        if admits(hit, query, model_id, size, project, own_project):
            kept.append(hit)
            if len(kept) == k:
                break
    return kept


def _part(hit: Hit) -> tuple[str, int]:
    """``(id, n)``: the part ``n`` of a long memory :attr:`Hit.passage` shows, 0 for a memory shown whole."""
    passage = hit.passage
    return hit.id, passage[1] if passage is not None else 0
