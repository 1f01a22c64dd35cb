"""Who is next to whom among the memories of an index state, for the second stage of a hybrid search
(:mod:`gitmem.search.rerank`): each memory's neighbours in its source, the words each memory uses, and whether a
source reads as one conversation at all.

Memories captured one after another from one source (a session) are each other's context: a conversation's turn
answers the one before it. One person's facts imported in a row are not, and a source of them lends its memories
nothing (:data:`COHERENT`, :meth:`Neighbourhood.apart`). numpy is imported only inside the methods: building a
neighbourhood is a hybrid search's work, never a BM25 search's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["COHERENT", "Neighbourhood"]

#: how far a source's consecutive memories must read nearer each other than two memories of the repository do on
#: average (the share of the way from that average cosine to 1) for their words and first stage to count for each
#: other in the second stage. A conversation's turns and a paragraph's sentences do (with MiniLM, LoCoMo's
#: sessions 0.03-0.40, 5% below 0.07; XQuAD's paragraphs 5% below 0.24; BEAM's chats 0.22-0.44); one person's
#: facts one after the other do not (DuLeMon's persona lists -0.12 to 0.10, half below 0.01). Relative to the
#: model's own average, so one floor serves both models (multilingual-e5-small: LoCoMo 5% below 0.06, DuLeMon half
#: below 0.03). Chosen on the development parts: e5's DuLeMon 0.800 → 0.882 for LoCoMo 0.806 → 0.802, MiniLM's
#: LoCoMo 0.809 → 0.808 (docs/search.md, "Sources that are not a conversation").
COHERENT = 0.03

_MAX_POSTINGS = 4096


class _Lookup:
    """Where each wanted value sits in an array of keys, by binary search (numpy's answer to a dict lookup for
    thousands of values at once)."""

    def __init__(self, keys: NDArray[Any]) -> None:
        import numpy as np

        self._order = np.argsort(keys, kind="stable")
        self._sorted = keys[self._order]

    def find(self, wanted: NDArray[Any], missing: int) -> NDArray[np.int64]:
        """The index in ``keys`` of each wanted value; ``missing`` where it is not there."""
        import numpy as np

        if not len(self._sorted):
            return np.full(len(wanted), missing, dtype=np.int64)
        at = np.minimum(np.searchsorted(self._sorted, wanted), len(self._sorted) - 1)
        return np.where(self._sorted[at] == wanted, self._order[at], missing).astype(np.int64)


class Neighbourhood:
    """Who is next to whom, and which words each memory uses, for every memory in the index (from its state),
    in arrays, so the second stage costs about a millisecond for 200 candidates and building it costs ~0.1 s
    per 10k memories (it is built once per index state)."""

    def __init__(self, entries: Sequence[tuple[int, int, int, str]], window: int) -> None:
        """From ``(sha64, group hash, position, words)`` of every indexed memory (group 0: no neighbours;
        ``words``: its distinct analyzed words, separated by spaces)."""
        import numpy as np

        n = len(entries)
        self.window = window
        self.shas = [sha for sha, _g, _s, _t in entries]
        groups = np.fromiter((g for _sha, g, _s, _t in entries), dtype=np.uint64, count=n)
        seqs = np.fromiter((s for _sha, _g, s, _t in entries), dtype=np.int64, count=n)
        self.near = np.full((n, 2 * window), -1, dtype=np.int64)
        """position → the positions of its neighbours within the window (same source, by position; -1: none)"""
        self._group = np.full(n, -1, dtype=np.int64)  # position → its source (numbered densely), -1: none
        # (source, position) as one sortable number per memory: a neighbour d positions away is the key + d
        offsets = [d for d in range(-window, window + 1) if d]
        if n:
            dense = np.unique(groups, return_inverse=True)[1].astype(np.int64)
            self._group = np.where(groups != 0, dense, -1)
            shifted = seqs - seqs.min()
            span = int(shifted.max()) + 2 * window + 1  # key + d never reaches into another source's range
            keys = dense * span + shifted + window
            slots = _Lookup(keys)
            linked = groups != 0
            for k, d in enumerate(offsets):
                found = slots.find(keys + d, -1)
                self.near[:, k] = np.where(linked, found, -1)
        self._by_sha = _Lookup(np.array(self.shas, dtype=np.uint64))
        # every memory's words in one string, " w1 w2 \n" per memory: finding " word " in it is one C scan
        self._words = "".join(f" {t} \n" for _sha, _g, _s, t in entries)
        lengths = np.fromiter((len(t) + 3 for _sha, _g, _s, t in entries), dtype=np.int64, count=n)
        self._starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]) if n else np.zeros(0, np.int64)
        # the vector rows of every position for one ``row_of`` (the object itself: a freed dict's id is reused)
        self._rows: tuple[Mapping[int, int], NDArray[np.int64]] | None = None
        # for one matrix and its ``row_of``: each vector's length, the average cosine of two memories, and whether
        # each source (dense number) is apart (:meth:`apart`), found when a search first meets one of its memories
        self._measured: tuple[NDArray[np.float32], Mapping[int, int], NDArray[np.float32], float | None] | None = None
        self._apart: dict[int, bool] = {}
        self._members: tuple[NDArray[np.int64], NDArray[np.int64]] | None = None  # positions by source, boundaries
        self._postings: dict[str, NDArray[np.int64]] = {}

    def positions(self, sha64: Sequence[int]) -> NDArray[np.int64]:
        """The position of each memory (by the first 64 bits of its blob SHA); ``len(shas)`` for one that is
        not in the index state."""
        import numpy as np

        return self._by_sha.find(np.array(sha64, dtype=np.uint64), len(self.shas))

    def having(self, word: str) -> NDArray[np.int64]:
        """The positions of the memories whose text has ``word`` (one scan of every memory's words the first
        time a word is asked; questions reuse their words, so the answer is kept for the last few thousand)."""
        import numpy as np

        found = self._postings.get(word)
        if found is None:
            needle, text, hits = f" {word} ", self._words, []
            at = text.find(needle) if word and " " not in word else -1
            while at >= 0:
                hits.append(at)
                at = text.find(needle, at + len(needle) - 1)
            found = np.searchsorted(self._starts, np.array(hits, dtype=np.int64), side="right") - 1
            if len(self._postings) >= _MAX_POSTINGS:
                self._postings.pop(next(iter(self._postings)))
            self._postings[word] = found
        return found

    def vector_rows(self, row_of: Mapping[int, int]) -> NDArray[np.int64]:
        """position → [its own vector row, its neighbours' rows] (-1 where there is none), kept for ``row_of``."""
        import numpy as np

        if self._rows is None or self._rows[0] is not row_of:
            keys = np.fromiter(row_of.keys(), dtype=np.uint64, count=len(row_of))
            values = np.fromiter(row_of.values(), dtype=np.int64, count=len(row_of))
            own = np.full(len(self.shas) + 1, -1, dtype=np.int64)
            found = _Lookup(keys).find(np.array(self.shas, dtype=np.uint64), -1)
            own[:-1] = np.where(found >= 0, values[np.maximum(found, 0)], -1)
            rows = np.concatenate([own[:-1, None], np.where(self.near >= 0, own[self.near], -1)], axis=1)
            self._rows = (row_of, rows)
        return self._rows[1]

    def apart(self, at: NDArray[np.int64], matrix: NDArray[np.float32], row_of: Mapping[int, int]) -> NDArray[np.bool_]:
        """Whether the source of each memory at the positions ``at`` does not read as one conversation: its
        consecutive memories are no nearer each other than two memories of the repository are on average, by
        :data:`COHERENT` of the way to 1 (cosines of ``matrix``, rows by ``row_of``). A source is measured when a
        search first meets one of its memories, once per index state and vectors: at 10k memories ~4.5 ms for the
        first search's 200 candidates (the repository's average included), ~1.8 ms for the next searches' new ones.
        A memory without a finite, non-zero vector (a script the model does not read) does not count; a source
        with nothing to measure is a conversation."""
        import numpy as np

        if not self.window:
            return np.zeros(len(at), dtype=bool)
        own = self.vector_rows(row_of)[:, 0]
        norms, average = self._measure(matrix, own, row_of)
        groups = self._group[at]
        new = [g for g in set(groups.tolist()) if g >= 0 and g not in self._apart]
        if new and average is not None:
            if self._members is None:
                order = np.argsort(self._group, kind="stable")
                self._members = order, np.searchsorted(self._group[order], np.arange(int(self._group.max()) + 2))
            order, bounds = self._members
            members = np.concatenate([order[bounds[g]:bounds[g + 1]] for g in new])
            after = self.near[members, self.window]  # the next memory of the same source (offset +1)
            first, second = own[members], np.where(after >= 0, own[after], -1)
            ok = (first >= 0) & (second >= 0)
            ok[ok] = (norms[first[ok]] > 0) & (norms[second[ok]] > 0)  # 0 for a zero or non-finite vector
            first, second, group = first[ok], second[ok], self._group[members[ok]]
            cosines = np.einsum("ij,ij->i", matrix[first], matrix[second]) / (norms[first] * norms[second])
            counts = np.bincount(group, minlength=max(new) + 1)
            sums = np.bincount(group, weights=cosines, minlength=max(new) + 1)
            for g in new:  # a source without a pair to measure is taken for a conversation
                self._apart[g] = bool(counts[g]) and (sums[g] / counts[g] - average) / (1.0 - average) < COHERENT
        return np.array([self._apart.get(g, False) for g in groups.tolist()], dtype=bool)

    def _measure(self, matrix: NDArray[np.float32], own: NDArray[np.int64], row_of: Mapping[int, int]
                 ) -> tuple[NDArray[np.float32], float | None]:
        """The length of each vector of ``matrix`` (0 for one that is not finite) and the average cosine of two
        different memories of the index state (None: fewer than three vectors), kept for ``matrix`` and ``row_of``
        (a new pair starts the sources' verdicts over)."""
        import numpy as np

        if self._measured is None or self._measured[0] is not matrix or self._measured[1] is not row_of:
            with np.errstate(all="ignore"):
                norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))
            broken = ~np.isfinite(norms)
            norms[broken] = 0.0
            used = np.zeros(len(matrix), dtype=bool)
            used[own[own >= 0]] = True
            used &= norms > 0
            weights = np.divide(1.0, norms, out=np.zeros_like(norms), where=used)
            # the sum of the unit vectors: over the whole matrix (no copy) unless a broken row would spoil it
            total = (weights @ matrix if not broken.any() else weights[used] @ matrix[used]).astype(np.float64)
            m = int(used.sum())
            average = (float(total @ total) - m) / (m * (m - 1)) if m >= 3 else 1.0
            self._measured = (matrix, row_of, norms, average if average < 1.0 else None)
            self._apart = {}
        return self._measured[2], self._measured[3]
