"""How a captured statement relates to the memories already stored: the same fact (skip), nearly the same words
(merge), or the same subject with another value (supersede).

Texts are compared as counts of words and CJK character pairs (:func:`gitmem.text.overlap.similarity`, a cosine
0..1).
:func:`conflicts_with` is also the check ``gitmem remember --auto`` flags conflicts with (:mod:`gitmem.router.route`).
:func:`supersedes` is the part of a conflict that capture acts on without asking anyone.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection, Iterable
from typing import Any

from gitmem.errors import GitmemError, NotFoundError
from gitmem.redact.engine import redact
from gitmem.store import document as docs
from gitmem.store.document import Memory
from gitmem.store.memories import MemoryRepo
from gitmem.text import scripts
from gitmem.text.overlap import similarity
from gitmem.text.overlap import words as _tokens
from gitmem.text.records import replace

SKIP_ABOVE = 0.9
MERGE_ABOVE = 0.8
CONFLICT_ABOVE = 0.5
#: words that differ on each side of two similar statements of one fact with another value (CJK pairs count)
_FEW = 3

_CJK = scripts.CJK
_NEG = re.compile(r"\b(?:not|never|don'?t|doesn'?t|no\s+longer|stop|avoid|without|mustn'?t|cannot|can'?t)\b|"
                  r"不|别|禁止|放弃|勿", re.IGNORECASE)
_CHOICE = re.compile(r"(.{1,40}?)\s*(?:\binstead\s+of\b|\brather\s+than\b|\bover\b|而不是|而非|替代|代替)\s*(.{1,40})",
                     re.IGNORECASE)
_CHOICE_WORDS = re.compile(r"\b(?:instead of|rather than|over|not|than)\b|不用|不要|而不是|而非|替代|代替|比",
                           re.IGNORECASE)


def _choice(text: str) -> tuple[str, str] | None:
    match = _CHOICE.search(text)
    if not match:
        return None
    keep = _tokens(match.group(1)).most_common()
    drop = _tokens(match.group(2)).most_common()
    return (keep[-1][0] if keep else "", drop[0][0] if drop else "")


def contradicts(new: str, old: str) -> bool:
    """Opposite polarity ("use X" / "don't use X") or a swapped choice ("X instead of Y" / "Y instead of X")."""
    if bool(_NEG.search(new)) != bool(_NEG.search(old)):
        return True
    a, b = _choice(new), _choice(old)
    return bool(a and b and a != b and (a[0] == b[1] or a[1] == b[0]))


def _order(text: str) -> list[str]:
    return re.findall(rf"[a-z0-9_]+|[{_CJK}]", text.lower())


def conflicts_with(new: str, old: str) -> bool:
    """Same subject, another value: similar texts (>= 0.5) where a few words differ on each side ("port 8080" /
    "port 9090", "pytest -q" / "pytest -x", "Sunday" / "Saturday"), or with opposite polarity, or the same words
    with the choice swapped ("X instead of Y" / "Y instead of X", "用 X，不用 Y" / "用 Y，不用 X")."""
    if similarity(new, old) < CONFLICT_ABOVE:
        return False
    a, b = _tokens(new), _tokens(old)
    only_new, only_old = a - b, b - a
    if only_new and only_old and sum(only_new.values()) <= _FEW and sum(only_old.values()) <= _FEW:
        return True
    if not only_new and not only_old:  # the same words: a conflict only when their order swaps a choice
        return _order(new) != _order(old) and bool(_CHOICE_WORDS.search(new))
    return contradicts(new, old)


def _decisive(new: str, old: str) -> bool:
    """Of two texts that conflict: whether the difference says which value holds, so the newer may replace the
    older without asking. A few differing words alone do not: "never commit secrets to the repository" and "never
    commit directly to main" conflict for ``remember --auto``, which shows both and lets the user decide, but they
    are two rules, and capture must keep both."""
    a, b = _tokens(new), _tokens(old)
    only_new, only_old = a - b, b - a
    if (not only_new and not only_old) or contradicts(new, old):  # a swapped choice, or "use X" / "don't use X"
        return True
    # only numbers, versions or code values differ ("port 8080" / "port 9090", "30 秒" / "60 秒"), or one named
    # thing replaces another in otherwise the same words ("migrations with alembic" / "… with flyway")
    return all(any(c.isdigit() for c in token) for token in [*only_new, *only_old]) or \
        similarity(new, old) >= MERGE_ABOVE


def supersedes(new: str, old: str) -> bool:
    """Whether the newer statement ``new`` replaces ``old``: they conflict (:func:`conflicts_with`) on a value
    (opposite polarity, a swapped choice, other numbers, or one word swapped in otherwise the same sentence)."""
    return conflicts_with(new, old) and _decisive(new, old)


def compare(text: str, known: Iterable[Memory], replaceable: Collection[str]
            ) -> tuple[tuple[float, Memory] | None, list[Memory]]:
    """``text`` against the memories ``known``: (the most similar one that does not conflict with it, with the
    similarity, or None; the memories of a ``replaceable`` category it supersedes). A memory that conflicts is
    never the one ``text`` repeats: merging into it or skipping as its duplicate would drop the new value."""
    best: tuple[float, Memory] | None = None
    replaced: list[Memory] = []
    for old in known:
        score = similarity(text, old.text)
        if score >= CONFLICT_ABOVE and conflicts_with(text, old.text):
            if old.category in replaceable and _decisive(text, old.text):
                replaced.append(old)
            continue
        if best is None or score > best[0]:
            best = (score, old)
    return best, replaced


# -- what a candidate is compared with, and the id it gets ---------------------------------------------------
def similar(repo: MemoryRepo, text: str, project: str, pool: list[Memory] | None,
            cache: dict[str, Any]) -> list[Memory]:
    """Active memories that may be near ``text``: search hits when the index works, else every active memory of
    the project and the global ones (``cache`` keeps the opened index or the scanned list between calls)."""
    if pool is not None:
        return pool
    if "scan" not in cache:
        try:
            if "index" not in cache:
                from gitmem.search.index import open_index

                cache["index"] = open_index(repo, embedder=None)
            index = cache["index"]
            # a near-duplicate by its words: no question handling (order words, a request's standing memories)
            plain = replace(index.tuning, order_weight=0.0, standing_weight=0.0)
            hits = index.search(text, k=8, mode="bm25", project=project or None, tuning=plain)
            return [h.memory for h in hits if not h.memory.deprecated and h.memory.project in ("", project)]
        except Exception:  # the index is optional here: fall back to scanning
            cache["scan"] = repo.list()
    return [m for m in cache["scan"] if m.project in ("", project)]


def _stored(repo: MemoryRepo, memory_id: str) -> bool:
    """Whether a memory file with this id exists (deprecated or not, readable or not)."""
    try:
        repo.get(memory_id)
    except NotFoundError:
        return False
    except GitmemError:  # there is a file, even if it cannot be read: its id is taken
        return True
    return True


def fresh_id(repo: MemoryRepo, text: str, session: str, taken: Collection[str]) -> str:
    """The id of a new captured memory: the slug of its text and a suffix derived from the text and the session,
    so a dry run shows the id the commit uses (and the same words in two sessions get two ids). Both come from the
    redacted text, as a stored memory's id does: a hash of a secret could be checked against guesses. The next
    derived suffix replaces one that is ``taken`` (by this capture) or stored (deprecated memories too): the batch
    commit would overwrite that file, where ``remember`` draws again."""
    clean = redact(text, extra_patterns=repo.config.redaction.extra_patterns).text
    seed = f"{session}\0{clean}"
    for attempt in range(100):
        digest = hashlib.sha1(f"{seed}\0{attempt}".encode() if attempt else seed.encode()).hexdigest()
        memory_id = docs.new_id(clean, suffix=digest[:6])
        if memory_id not in taken and not _stored(repo, memory_id):
            return memory_id
    return docs.new_id(clean)  # a hundred taken: a random suffix, as remember draws
