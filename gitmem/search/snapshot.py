"""One reader state of the search index, and what is worth computing once per state rather than per query.

A tantivy searcher is a snapshot: the documents it sees and their addresses (segment, doc id) do not change
while it is held, however the index is written or merged meanwhile. So a search keeps one :class:`Snapshot`
until the index is reloaded, and the snapshot remembers, lazily:

* where each blob SHA lives (vector candidates come from a matrix keyed by blob SHA; asking tantivy with a
  term-set query cost ~1 ms per search at 10k memories, because it walks the whole term dictionary);
* which documents each combination of filters admits (one filtered scan per combination, then set lookups).
"""

from __future__ import annotations

import tantivy

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: a search does not import typing (~3 ms a process)
if TYPE_CHECKING:
    from collections.abc import Hashable, Sequence
    from typing import Any

Key = tuple[int, int]
"""(segment ordinal, doc id): a document's address inside one snapshot"""

_MAX_FILTER_SETS = 8


class Snapshot:
    """A searcher with per-state memos. Create a new one whenever the index is reloaded."""

    def __init__(self, searcher: Any) -> None:
        self.searcher = searcher
        self.hood: Any = None
        """the neighbourhood (:class:`gitmem.search.neighbourhood.Neighbourhood`) of this state, built on first need"""
        self.chunk_docs: int | None = None
        """how many documents are chunks of long memories (counted on first need)"""
        self.vectors = ""
        """the embedding model whose vectors covered this state's commit when the index loaded them"""
        self._where: dict[int, Key] | None = None
        self._more: dict[int, list[Key]] = {}
        self._filters: dict[Hashable, tuple[bool, frozenset[Key]]] = {}

    def addresses(self, sha64: int) -> Sequence[Key]:
        """The documents holding the blob whose SHA starts with ``sha64`` (usually one; the same text stored
        at two paths gives two), not counting the chunks of a long memory."""
        if self._where is None:
            self._map()
        assert self._where is not None
        key = self._where.get(sha64)
        if key is None:
            return ()
        more = self._more.get(sha64)
        return (key, *more) if more else (key,)

    def _map(self) -> None:
        searcher = self.searcher
        hits = searcher.search(tantivy.Query.all_query(), limit=max(1, searcher.num_docs), count=False).hits
        addrs = [a for _score, a in hits]
        if addrs:  # a memory's own document only, not the chunks of a long one
            parts = searcher.fast_field_values("part", addrs)
            addrs = [a for a, part in zip(addrs, parts, strict=True) if not part]
        keys = [(a.segment_ord, a.doc) for a in addrs]
        values = [int(v or 0) for v in searcher.fast_field_values("sha64", addrs)] if addrs else []
        where = dict(zip(values, keys, strict=True))
        if len(where) < len(keys):
            for value, key in zip(values, keys, strict=True):
                if where[value] != key:
                    self._more.setdefault(value, []).append(key)
        self._where = where

    def admits(self, name: Hashable, clauses: list[tuple[Any, Any]]) -> tuple[bool, frozenset[Key]]:
        """The documents that the filter ``clauses`` (as from :func:`gitmem.search.scoring.filter_clauses`) let
        through, as ``(exclude, keys)``: with ``exclude`` True, every document except ``keys``. ``name``
        identifies the combination of filters (the clauses themselves are not comparable)."""
        found = self._filters.get(name)
        if found is None:
            searcher = self.searcher
            must_not = [q for occur, q in clauses if occur == tantivy.Occur.MustNot]
            limit = max(1, searcher.num_docs)
            if len(must_not) == len(clauses):  # the usual case, "not deprecated": list the few it rejects
                if must_not:
                    query = tantivy.Query.boolean_query([(tantivy.Occur.Should, q) for q in must_not])
                    hits = searcher.search(query, limit=limit, count=False).hits
                else:
                    hits = []
                found = (True, frozenset((a.segment_ord, a.doc) for _s, a in hits))
            else:
                query = tantivy.Query.boolean_query([(tantivy.Occur.Must, tantivy.Query.all_query()), *clauses])
                hits = searcher.search(query, limit=limit, count=False).hits
                found = (False, frozenset((a.segment_ord, a.doc) for _s, a in hits))
            if len(self._filters) >= _MAX_FILTER_SETS:
                self._filters.pop(next(iter(self._filters)))
            self._filters[name] = found
        return found
