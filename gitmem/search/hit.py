"""One search result (:class:`Hit`): the memory, its score and its parts, and what a context shows of it: the
snippet around the matched words, and for a long memory the part (chunk) a search matched, labelled where its why
or how starts (:func:`gitmem.search.schema.shown_chunks`), or another part a later prompt has not seen yet."""

from __future__ import annotations

from gitmem.search import analysis
from gitmem.search import schema as idoc
from gitmem.search import scoring as ranking
from gitmem.search.scoring import ScoreParts
from gitmem.text.records import Record, replace

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: a search does not import typing (~3 ms a process)
if TYPE_CHECKING:
    from typing import Any

    from gitmem.store.memory import Memory

__all__ = ["Hit"]


class Hit(Record):
    """One search result: the memory, its score and a snippet of its text (``highlights`` are character ranges
    of matched terms inside ``snippet``). The snippet is cut on first use: recall never needs one.

    ``id``, ``score``, ``memory``, ``parts`` (:class:`ScoreParts`), ``path`` (of the memory file), ``terms`` (the
    query's analyzed terms), ``analyzer`` (the one cutting the snippet; not part of the value), ``chunk``: the
    chunk of a long memory that matched best (1, 2, …; :func:`gitmem.search.schema.memory_chunks`), 0: the memory
    as a whole; ``chunk_scores``: ``(n, raw BM25 score)`` of every chunk the search matched, best first. Read-only
    once made."""

    UNCOMPARED = frozenset({"analyzer"})
    id: str
    score: float
    memory: Memory
    parts: ScoreParts
    path: str = ""
    terms: frozenset[str] = frozenset()
    analyzer: Any = None
    chunk: int = 0
    chunk_scores: tuple[tuple[int, float], ...] = ()

    def _cut(self) -> tuple[str, tuple[tuple[int, int], ...]]:
        # kept in the instance's __dict__ on first use (what functools.cached_property does, without importing
        # functools: a record's own __setattr__ refuses every write)
        cut: tuple[str, tuple[tuple[int, int], ...]] | None = self.__dict__.get("_snippet")
        if cut is None:
            text = self.memory.text
            if self.chunk:
                parts = idoc.memory_chunks(self.memory)
                text = parts[self.chunk - 1] if self.chunk <= len(parts) else text
            if self.analyzer is None:
                cut = text[:160], ()
            else:
                text, marks = ranking.snippet(text, set(self.terms), self.analyzer)
                cut = text, tuple(marks)
            self.__dict__["_snippet"] = cut
        return cut

    @property
    def snippet(self) -> str:
        """About 160 characters around the densest cluster of matched words (in the best chunk of a long
        memory)."""
        return self._cut()[0]

    @property
    def highlights(self) -> tuple[tuple[int, int], ...]:
        """Character ranges of the matched words inside :attr:`snippet`."""
        return self._cut()[1]

    @property
    def passage(self) -> tuple[str, int, int] | None:
        """What an agent's context shows of a long memory (one cut into chunks): ``(text, n, count)``, its chunk
        ``n`` of ``count``. That is the chunk that matched best (:attr:`chunk`), or, when the memory matched as
        a whole, the chunk holding most of the query's words (the first when none holds any). None for a
        memory short enough to be shown whole."""
        if "_passage" not in self.__dict__:
            parts = idoc.memory_chunks(self.memory)
            found: tuple[str, int, int] | None = None
            if parts:
                n = self.chunk if 0 < self.chunk <= len(parts) else _most_terms(parts, self.terms, self.analyzer)
                found = idoc.shown_chunks(self.memory, parts)[n - 1], n, len(parts)
            self.__dict__["_passage"] = found
        passage: tuple[str, int, int] | None = self.__dict__["_passage"]
        return passage

    def other_part(self, seen: set[int]) -> Hit | None:
        """This hit for another part of a long memory, when a context was shown its parts ``seen`` already: the
        best-scoring part the search matched (:attr:`chunk_scores`) that is not among them and holds a query word
        none of them holds (chunks overlap: a part that repeats a seen one's matching sentence says nothing
        new). Scored by that part's own BM25 and no cosine (the memory's vector says nothing of one part), so a
        relevance gate judges the part's words alone. None when no part qualifies."""
        parts = idoc.memory_chunks(self.memory)
        if not parts or self.analyzer is None:
            return None
        known = frozenset().union(*(_held(parts[n - 1], self.terms, self.analyzer) for n in seen
                                    if 0 < n <= len(parts)))
        for n, score in self.chunk_scores:
            if n not in seen and 0 < n <= len(parts) and _held(parts[n - 1], self.terms, self.analyzer) - known:
                return replace(self, chunk=n, chunk_scores=(), parts=replace(self.parts, bm25=score, vector=None))
        return None


def _held(part: str, terms: frozenset[str], analyzer: Any) -> frozenset[str]:
    """Which of ``terms`` (the analyzer's tokens) ``part`` holds."""
    return terms.intersection(analyzer.analyze(analysis.normalise(part)))


def _most_terms(parts: list[str], terms: frozenset[str], analyzer: Any) -> int:
    """The number (from 1) of the part holding most of ``terms`` (the analyzer's tokens), the first on a tie."""
    if not terms or analyzer is None:
        return 1
    held = [len(_held(part, terms, analyzer)) for part in parts]
    return held.index(max(held)) + 1
