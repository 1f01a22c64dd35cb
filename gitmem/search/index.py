"""The search index: tantivy BM25 with a CJK-aware analyzer plus cached embedding vectors, kept in step with the
memory repository's HEAD.

Everything lives under ``<repo>/.cache/`` (ignored by git, rebuildable at any time)::

    .cache/search/tantivy/          the tantivy index (one document per memory file)
    .cache/search/state.bin         path → its state entry (:mod:`gitmem.search.build`)
    .cache/search/HEAD              "<format> <commit sha>" of the last refresh: the ~1 ms "anything to do?" check
    .cache/search.lock              one writer at a time across processes
    .cache/vectors/<model-id>.r<recipe>/
                                    embedding shards: <name>.npy (float32, one row per memory) + <name>.json (the
                                    git blob SHAs of those rows); COMPLETE holds the commit they cover;
                                    ``sentences/`` holds the sentence vectors the same way, ``conditions/``
                                    the vectors of the subjects standing rules name

A refresh compares the HEAD commit with ``search/HEAD``; when they differ it walks the tree under
``memories/`` (blob SHAs only) and re-indexes the files whose SHA changed, plus their neighbours in the same
source (session), whose context field mentions them. Vectors are keyed by (model id, blob SHA): an edit embeds
one memory, a rename or a branch switch back embeds nothing.

This module is the read side: opening the index, checking that it is current, BM25 and ranking (a result is a
:class:`~gitmem.search.hit.Hit`). It is what a prompt hook loads, so it imports neither :mod:`re` nor :mod:`pathlib`
(a repository's ``path`` may be a ``str``), :mod:`contextlib`, :mod:`functools`, :mod:`typing` nor the file locks.
Updating the index is :mod:`gitmem.search.build`'s, the model's side of a search :mod:`gitmem.search.semantic`'s:
each is imported when it is needed (an index behind HEAD, a rebuild, a search with a model), never by a BM25 search
of a current index.
"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime

import tantivy

from gitmem.errors import SearchError, ValidationError
from gitmem.files.atomic import settled
from gitmem.search import analysis
from gitmem.search import schema as idoc
from gitmem.search import scoring as ranking
from gitmem.search.analysis import QueryTerms
from gitmem.search.hit import Hit
from gitmem.search.order import AMONG, FLOOR, Order, chain_firsts, order_bonus, parse_order
from gitmem.search.scoring import DEFAULT_TUNING, Tuning
from gitmem.search.snapshot import Key, Snapshot
from gitmem.search.standing import GOVERNING, alternatives, asks_help
from gitmem.search.timeexpr import TimeRange, in_period, parse_time_expression
from gitmem.store import memory as docs
from gitmem.text.records import replace

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: a search does not import typing (~3 ms a process)
#: the best matches of the X in "before/after X" the memory about X is chosen among
_ANCHORS = 5
#: the rules sharing a word with the question whose subjects a search reads to find the ones it names whole
_SUBJECTS = 32
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path
    from typing import Any, Literal, Protocol

    from gitmem.config import Config
    from gitmem.embeddings.runtime import Embedder
    from gitmem.git.head import GitHead
    from gitmem.git.store import GitStore
    from gitmem.search import rerank
    from gitmem.search.neighbourhood import Neighbourhood
    from gitmem.store.memory import Memory

    Mode = Literal["hybrid", "bm25", "vector"]
    #: called with the number of memories just embedded (``tqdm.update`` fits)
    Progress = Callable[[int], object]
    #: a file path as ``os`` takes it
    StrPath = str | os.PathLike[str]
else:
    Protocol = object

__all__ = ["Index", "IndexedRepo", "RefreshStats", "open_index"]


def _chunks_by_score(found: dict[int, float]) -> list[tuple[int, float]]:
    """``(n, score)`` of a memory's matched chunks, best first; on a tie the memory as a whole (0), then the
    earlier chunk."""
    return sorted(found.items(), key=lambda chunk: (-chunk[1], chunk[0]))


class RefreshStats:
    """What a refresh did: memories ``indexed``, ``removed`` and ``embedded`` (in ``embed_seconds``), the
    ``unreadable`` files, the ``seconds`` it took and whether the index was ``rebuilt``. ``vars()`` gives them in
    that order."""

    def __init__(self, indexed: int = 0, removed: int = 0, embedded: int = 0, embed_seconds: float = 0.0,
                 unreadable: list[str] | None = None, seconds: float = 0.0, rebuilt: bool = False) -> None:
        self.indexed = indexed
        self.removed = removed
        self.embedded = embedded
        self.embed_seconds = embed_seconds
        self.unreadable: list[str] = unreadable if unreadable is not None else []
        self.seconds = seconds
        self.rebuilt = rebuilt

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RefreshStats) and vars(self) == vars(other)

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return "RefreshStats(" + ", ".join(f"{k}={v!r}" for k, v in vars(self).items()) + ")"


def _signature(files: Sequence[StrPath]) -> tuple[tuple[int, int, int], ...] | None:
    """(inode, mtime, size) of each file, None when one is missing: a cheap 'did anything replace these?'"""
    try:
        return tuple((st.st_ino, st.st_mtime_ns, st.st_size) for st in map(os.stat, files))
    except OSError:
        return None


# -- the index -------------------------------------------------------------------------------------------

class IndexedRepo(Protocol):  # a typing.Protocol for type checkers, a plain class at run time
    """What the index reads of a memory repository: its folder (a ``str`` or a :class:`~pathlib.Path`), its
    settings and its git files (a :class:`~gitmem.store.memories.MemoryRepo` is one;
    :class:`~gitmem.store.base.StoredRepo` is the cheap one the hooks open)."""

    @property
    def path(self) -> StrPath: ...

    config: Config

    @property
    def head(self) -> GitHead: ...

    @property
    def git(self) -> GitStore: ...


class Index:
    """Search over one memory repository. Cheap to create; the tantivy index opens on first use.

    ``embedder``: ``"auto"`` (the model ``repo.config.embedding`` names, loaded on the first hybrid or vector
    search), ``None`` (BM25 only) or an :class:`~gitmem.embeddings.runtime.Embedder`. ``lock_wait``: how long a search
    waits for another process that is updating the index before it searches the existing index as it is.
    ``progress(n)`` is called with each batch of ``n`` memories embedded (``tqdm.update`` fits).
    ``embed_missing``: whether a search first embeds the memories that have no vector yet (``gitmem search``, the
    warm-up); ``False`` on the hooks' paths: a search then embeds only its question, ranks the memories without a
    vector by BM25 alone and counts them in :attr:`vectors_missing`, for the caller to start the warm-up."""

    def __init__(self, repo: IndexedRepo, *, embedder: Embedder | str | None = "auto", lock_wait: float = 2.0,
                 progress: Progress | None = None, tuning: Tuning = DEFAULT_TUNING, embed_missing: bool = True) -> None:
        self.repo = repo
        self.embed_missing = embed_missing
        #: memories without a vector at the last hybrid search (only counted when ``embed_missing`` is False)
        self.vectors_missing = 0
        # str paths: pathlib (and the re it loads) costs a prompt hook more than its search
        self._root = os.path.join(os.fspath(repo.path), ".cache")
        self._dir = os.path.join(self._root, "search")
        self._tantivy_dir = os.path.join(self._dir, "tantivy")
        self._head_file = os.path.join(self._dir, "HEAD")
        self._state_file = os.path.join(self._dir, "state.bin")
        self.lock_wait = lock_wait
        self.progress = progress
        self.tuning = tuning
        #: one-line messages for the user (BM25 fallback, stale index); each is added once
        self.notices: list[str] = []
        #: files under memories/ that could not be read, as found by the last refresh
        self.warnings: list[str] = []
        #: True when the last search ran on an index another process was still updating
        self.stale = False
        self._embedder: Embedder | None = None if isinstance(embedder, str) or embedder is None else embedder
        self._embedder_resolved = not isinstance(embedder, str) or embedder.strip().lower() == "none"
        self._analyzer = analysis.build_analyzer()
        self._schema = idoc.schema()
        self._index: Any = None
        self._snap: Snapshot | None = None  # the searcher every search uses until the next reload
        self._seen = ""  # the HEAD this object's reader last reloaded at
        # marker, shas, matrix, sha64 → row, row → sha64
        self._vectors: tuple[str, list[str], Any, dict[int, int], list[int]] | None = None
        #: sha64 of the memories stored with a zero vector (a script the model does not cover)
        self._blind: frozenset[int] = frozenset()
        self._sentences: tuple[str, Any, Any, dict[int, int], Any, Any] | None = None
        self._conditions: tuple[str, list[int], Any] | None = None  # marker, sha64 of each row, matrix
        self._hood: tuple[str, Neighbourhood] | None = None
        # the HEAD, ref and index-marker files as they were when the index was last found current
        self._fresh: tuple[list[StrPath], tuple[tuple[int, int, int], ...]] | None = None

    # -- paths and small files ----------------------------------------------------------------------
    @property
    def root(self) -> Path:
        """The repository's cache folder (``.cache``: the index, its lock, the vectors)."""
        from pathlib import Path

        return Path(self._root)

    def _current_head(self) -> str:
        head: bytes | None = self.repo.head.head()  # reads the ref files directly: ~0.1 ms, no dulwich
        return head.decode() if head else ""

    def _marker(self) -> str:
        try:
            with open(self._head_file, encoding="utf-8") as f:
                return f.read()
        except OSError:
            return ""

    @property
    def _format(self) -> str:
        """The layout this object reads and writes: the ``ctx`` field holds ``context_window`` neighbours, so an
        index built for another window is rebuilt rather than read with the wrong neighbourhood."""
        return f"{idoc.FORMAT}.w{self.tuning.context_window}"

    def _reload(self) -> None:
        self._open().reload()
        self._snap = None

    def _snapshot(self) -> Snapshot:
        if self._snap is None:
            self._snap = Snapshot(self._open().searcher())
        return self._snap

    def _is_current(self, head: str) -> bool:
        return self._marker() == f"{self._format} {head}" and os.path.isfile(os.path.join(self._tantivy_dir,
                                                                                          "meta.json"))

    def _open(self) -> Any:
        """The tantivy index as it is on disk (:mod:`gitmem.search.build` creates it)."""
        if self._index is None:
            index = tantivy.Index(self._schema, path=self._tantivy_dir, reuse=True)
            index.register_tokenizer(analysis.TOKENIZER, self._analyzer)
            self._index = index
        return self._index

    # -- refresh -------------------------------------------------------------------------------------
    def refresh(self, *, wait: float | None = None) -> RefreshStats:
        """Bring the index up to the repository's HEAD (nothing to do costs three ``stat`` calls once the files
        that name HEAD are older than a timestamp tick, else one ref read and one small file).

        When another process holds the index lock longer than ``wait`` (default ``lock_wait``) and an index
        exists, returns without writing and sets :attr:`stale`."""
        started = time.perf_counter()
        self.stale = False
        if self._index is not None and self._fresh is not None and self._fresh[1] == _signature(self._fresh[0]):
            return RefreshStats(seconds=time.perf_counter() - started)  # nothing was replaced since the last check
        files: list[StrPath] = [*self.repo.head.head_files(), self._head_file]
        before = _signature(files)
        head = self._current_head()
        if self._is_current(head):
            if self._index is None or self._seen != head:  # another process may have updated it: see its commit
                self._reload()
                self._seen = head
            now = time.time_ns()
            self._fresh = (files, before) if before is not None and all(settled(m, now) for _i, m, _s in before) \
                else None
            return RefreshStats(seconds=time.perf_counter() - started)
        from gitmem.search import build

        return build.refresh(self, head, wait, started)

    def rebuild(self, *, vectors: bool = True, progress: Progress | None = None,
                total: Progress | None = None) -> RefreshStats:
        """Throw the index away and build it again from HEAD (``gitmem reindex``); also embed what is missing
        when a model is available. Vectors already cached for a blob SHA are kept. ``total(n)`` is called once
        with the number of memories to embed, before ``progress`` counts them (a progress bar's length)."""
        from gitmem.search import build

        return build.rebuild(self, vectors=vectors, progress=progress, total=total)

    def embed(self, *, progress: Progress | None = None, total: Progress | None = None) -> int:
        """Bring the index up to HEAD, then embed every memory that has no vector yet (the step ``rebuild`` and
        the warm-up's searches take); returns how many were embedded. ``progress`` and ``total`` as in
        :meth:`rebuild`."""
        from gitmem.search import build

        return build.embed(self, progress=progress, total=total)

    @property
    def embedder(self) -> Embedder | None:
        """The embedding model, loaded on first use; None (with a notice) when there is none or it is broken."""
        if not self._embedder_resolved:
            from gitmem.search.semantic import load_embedder

            self._embedder_resolved = True
            self._embedder = load_embedder(self)
        return self._embedder

    # -- search --------------------------------------------------------------------------------------
    def _notice(self, message: str) -> None:
        if message not in self.notices:
            self.notices.append(message)

    @property
    def size(self) -> int:
        """How many memories the index holds (as of the last refresh)."""
        snap = self._snapshot()
        return int(snap.searcher.num_docs) - self._chunk_docs(snap)

    def _chunk_docs(self, snap: Snapshot) -> int:
        """How many documents of this state are chunks of long memories (not memories of their own)."""
        if snap.chunk_docs is None:
            query = tantivy.Query.range_query(self._schema, "part", tantivy.FieldType.Unsigned, 1, 1 << 62)
            snap.chunk_docs = int(snap.searcher.search(query, limit=1, count=True).count or 0)
        return int(snap.chunk_docs)

    @property
    def notice(self) -> str:
        """The notices as one line (empty when there is nothing to say): print it once."""
        return "; ".join(self.notices)

    def search(
        self,
        query: str,
        k: int = 10,
        *,
        type: str | None = None,
        category: str | None = None,
        tags: Sequence[str] | str | None = None,
        project: str | None = None,
        include_deprecated: bool = False,
        mode: Mode | str = "hybrid",
        now: datetime | None = None,
        tuning: Tuning | None = None,
        related_only: bool = False,
    ) -> list[Hit]:
        """The ``k`` best memories for ``query`` (a question or keywords, any language).

        Filters: ``type``, ``category``, ``tags`` (all must be present), ``project`` (that project's memories
        plus the global ones). Deprecated memories only with ``include_deprecated``, or the replaced ones for a
        question about a subject's past ("first", "before X": :mod:`gitmem.search.order`). ``mode``: ``hybrid``
        (BM25 + vectors; BM25 alone when no model), ``bm25``, ``vector``. ``now`` anchors recency and time
        expressions such as "last week". ``related_only``: leave out the memories found by their vector alone whose
        cosine is under the model's search floor (:data:`~gitmem.search.relevance.SEARCH_COSINE_MIN`), so a query
        that nothing is about finds nothing rather than the nearest of unrelated memories (what ``gitmem search``
        and the servers show). Raises :class:`SearchError` for an empty query."""
        tuning = tuning or self.tuning
        if not isinstance(query, str) or not query.strip():
            raise SearchError("the search query is empty", 'say what to look for, e.g. gitmem search "database choice"')
        if mode not in ("hybrid", "bm25", "vector"):
            raise ValidationError(f"unknown search mode {mode!r}", "use hybrid, bm25 or vector")
        if type is not None and type not in docs.TYPES:
            raise ValidationError(f"unknown type {type!r}", f"use one of: {', '.join(docs.TYPES)}")
        if category is not None and category not in docs.CATEGORIES:
            raise ValidationError(f"unknown category {category!r}", f"use one of: {', '.join(docs.CATEGORIES)}")
        k = max(1, int(k))
        now = (now or datetime.now(UTC)).astimezone(UTC)
        self.refresh()
        embedder = self.embedder if mode != "bm25" else None
        if embedder is not None and not _covers(embedder, query):
            embedder = None  # a query the model cannot read (Chinese for an English model): its cosines are noise
        if mode == "vector" and embedder is None:
            mode = "bm25"
        if embedder is not None:
            from gitmem.search import semantic

            semantic.vectors_ready(self, embedder)
        when = parse_time_expression(query, now) if tuning.time_boost else None
        terms = analysis.analyze_query(query, self._analyzer)
        if terms.empty and embedder is None:
            raise SearchError(f"nothing to search for in {query.strip()[:60]!r}", "use words, not only punctuation")
        tag_list = [tags] if isinstance(tags, str) else list(tags or [])
        filters = ranking.filter_clauses(self._schema, type=type, category=category, tags=tag_list, project=project,
                                         include_deprecated=include_deprecated)
        snap = self._snapshot()
        searcher = snap.searcher
        n = max(tuning.candidates, k * 3)
        help_asked = mode != "vector" and not terms.empty and tuning.standing_weight > 0 and asks_help(query)
        order = parse_order(query) if tuning.order_weight > 0 else None
        # "what did we use first", "before/after X": a supersede chain's past states answer too (deprecated
        # memories replaced by another, not forgotten), found by a BM25 search restricted to them; when deprecated
        # memories are searched anyway, it finds the same ones, read for their links in the chain
        past = [*ranking.filter_clauses(self._schema, type=type, category=category, tags=tag_list, project=project,
                                        include_deprecated=True), ranking.deprecated_clause(self._schema)] \
            if order is not None and (order.history or order.anchor) else None
        # a superseded candidate → (its id, the id of the memory that replaced it)
        replaced_by: dict[Key, tuple[str, str]] = {}
        bm25: dict[tuple[int, int], float] = {}
        matched: dict[Key, dict[int, float]] = {}
        governed: dict[Key, float] = {}  # the standing rules that name the question's subject
        if mode != "vector" and not terms.empty:
            bm25 = self._bm25(searcher, terms, filters, n, tuning, matched)
            extra = [ranking.time_clause(self._schema, when)] if when is not None else []
            if help_asked:  # the standing instructions on the subject, however many memories discuss it at length
                extra.append(ranking.standing_clause(self._schema))
            for clause in extra:
                for key, score in self._bm25(searcher, terms, [*filters, clause], n, tuning, matched).items():
                    bm25[key] = max(score, bm25.get(key, 0.0))
            if past is not None and order is not None and order.history:
                bm25.update(self._superseded(searcher, terms, past, AMONG, tuning, matched, replaced_by))
            if tuning.standing_weight > 0:  # "when I ask about the budget": the question holds the subject's words
                governed = self._naming(searcher, terms, filters, tuning, matched)
                for key, score in governed.items():
                    bm25.setdefault(key, score)
        vector: dict[tuple[int, int], float] = {}
        vectors: rerank.QueryVectors | None = None
        if embedder is not None and mode != "bm25":
            from gitmem.search import semantic

            admitted = snap.admits((type, category, tuple(tag_list), project, include_deprecated), filters)
            vector, vectors = semantic.nearest(self, snap, embedder, query, admitted, n)
            if vectors is not None and mode == "hybrid" and tuning.standing_weight > 0:
                # the rules that name this question's subject in other words ("deadlines": "when is it due?")
                for key, cosine in semantic.governing(self, snap, embedder, vectors, admitted).items():
                    if len(governed) >= GOVERNING:
                        break
                    vector.setdefault(key, cosine)
                    governed.setdefault(key, cosine)
            if related_only:  # a memory sharing a word with the query is related by that alone
                from gitmem.search.relevance import related  # here: the hooks' searches never ask

                kept = related(vector, bm25, embedder.model_id)
                vector = {key: cosine for key, cosine in vector.items() if key in kept}
                governed = {key: value for key, value in governed.items() if key in bm25 or key in kept}
        model = _model_weights(embedder.model_id, query) if embedder is not None else None
        second = vectors is not None and model is not None and mode == "hybrid" and tuning.fusion == "ltr"
        anchor: float | None = None
        linked: set[Key] = set()
        if order is not None and order.anchor:  # "before X": when was the memory about X created?
            said = analysis.analyze_query(order.anchor, self._analyzer)
            found = self._bm25(searcher, said, filters, _ANCHORS, tuning, {})
            # X may be a state replaced since ("what did we use after MySQL?")
            states = self._superseded(searcher, said, past, _ANCHORS, tuning, {}) if past is not None else {}
            found.update(states)
            if found:
                # where X is a state of a supersede chain, X's memory is where X first appears among the good
                # matches: later ones that name X say what replaced it ("migrated from Vue 2 to Vue 3" names Vue 2
                # more often than "written in Vue 2"); an event ("after I downloaded it") is its best match
                best = max(found.values())
                near = [key for key, score in found.items() if score >= FLOOR * best] if states else \
                    [max(found, key=found.__getitem__)]
                made = searcher.fast_field_values("created", [tantivy.DocAddress(*key) for key in near])
                created, key = min(zip(made, near, strict=True),
                                   key=lambda pair: (pair[0] if pair[0] is not None else float("inf"), -found[pair[1]]))
                anchor = float(created or 0)
                linked, later = self._chain_links(searcher, _stored(searcher, key), order, replaced_by)
                if later and past is not None and linked - set(bm25) - set(vector):
                    # the successor was replaced since ("after Vuex" when Vue 3 gave way to Nuxt): a candidate all
                    # the same, scored as the past states are, if the question's words meet it
                    bm25.update(self._bm25(searcher, terms, [*past, ranking.key_clause(self._schema, later)], 1,
                                           tuning, matched))
                linked &= set(bm25) | set(vector)
        return self._rank(searcher, bm25, vector, k, now, when, terms, tuning, vectors if second else None, model,
                          matched, (order, anchor, linked, replaced_by) if order is not None else None, help_asked,
                          frozenset(governed))

    def _naming(self, searcher: Any, terms: QueryTerms, filters: list[tuple[Any, Any]], tuning: Tuning,
                matched: dict[Key, dict[int, float]]) -> dict[Key, float]:
        """The standing rules whose subject (:func:`~gitmem.search.standing.condition`), or one of the subjects it
        lists, the question holds word for word (:func:`~gitmem.search.scoring.names_subject`), at most
        :data:`~gitmem.search.standing.GOVERNING`, with their BM25 as any memory's; none, at the cost of one
        lookup in an almost empty field, in most repositories."""
        query = ranking.subject_query(self._schema, terms)
        if query is None:
            return {}
        # every rule whose subject shares a word with the question, best first (a full match may rank low among
        # partial ones: a rare word of the question in many subjects)
        hits = searcher.search(tantivy.Query.boolean_query([(tantivy.Occur.Must, query), *filters]),
                               limit=_SUBJECTS, count=False).hits
        found: dict[Key, float] = {}
        for _score, addr in hits:
            doc = searcher.doc(addr)
            if any(ranking.names_subject(terms, analysis.analyze_query(subject, self._analyzer))
                   for subject in alternatives(idoc.subject(doc))):
                # scored by its text like any candidate: the subject field's scores live on another scale
                memory_id = idoc.memory_from_json(doc["doc"][0]).id
                scored = self._bm25(searcher, terms, [*filters, ranking.key_clause(self._schema, memory_id)], 1,
                                    tuning, matched)
                found[(addr.segment_ord, addr.doc)] = scored.get((addr.segment_ord, addr.doc), 0.0)
                if len(found) >= GOVERNING:
                    break
        return found

    def _chain_links(self, searcher: Any, memory: Memory, order: Order,
                     replaced_by: dict[Key, tuple[str, str]]) -> tuple[set[Key], str]:
        """The memories a supersede chain puts right before ``memory`` (the candidates it replaced) or right after
        it (the one that replaced it, candidate or not, and its id), as ``order`` asks."""
        if order.kind == "before":
            return {key for key, (_id, by) in replaced_by.items() if by == memory.id}, ""
        if idoc.superseded(memory) != ranking.REPLACED:
            return set(), ""  # current, forgotten, or compacted: a compaction's summary is no next state of the fact
        Q, must = tantivy.Query, tantivy.Occur.Must
        found = searcher.search(Q.boolean_query([ranking.key_clause(self._schema, memory.superseded_by),
                                                 (must, Q.term_query(self._schema, "part", 0))]), limit=2).hits
        return {(a.segment_ord, a.doc) for _s, a in found}, memory.superseded_by

    def _bm25(self, searcher: Any, terms: QueryTerms, filters: list[tuple[Any, Any]], n: int,
              tuning: Tuning, matched: dict[Key, dict[int, float]]) -> dict[tuple[int, int], float]:
        """The ``n`` best memories by BM25; each chunk of a long memory among the hits goes into ``matched``
        (chunk number → its score, 0 for the memory as a whole), so a hit knows which of its parts matched."""
        query = tantivy.Query.boolean_query([(tantivy.Occur.Must, ranking.text_query(self._schema, terms, tuning)),
                                             *filters])
        hits = searcher.search(query, limit=n, count=False).hits
        scores = {(a.segment_ord, a.doc): float(s) for s, a in hits}
        snap = self._snapshot()
        if not hits or not self._chunk_docs(snap):
            return scores
        # a long memory is scored by its best document: itself or one of its chunks
        addrs = [a for _s, a in hits]
        parts = searcher.fast_field_values("part", addrs)
        chunked = [(float(s), a, int(p)) for (s, a), p in zip(hits, parts, strict=True) if p]
        if not chunked:
            return scores
        for _score, addr, _part in chunked:
            del scores[(addr.segment_ord, addr.doc)]
        codes = searcher.fast_field_values("sha64", [a for _s, a, _p in chunked])
        whole = dict(scores)  # the memories' own documents
        for (score, _addr, part), code in zip(chunked, codes, strict=True):
            for key in snap.addresses(int(code or 0)):
                found = matched.setdefault(key, {})
                found[part] = max(score, found.get(part, 0.0))
                if key in whole:  # the memory as a whole: a chunk is its best part only above it
                    found[0] = max(whole[key], found.get(0, 0.0))
                scores[key] = max(score, scores.get(key, 0.0))
        return scores

    def _superseded(self, searcher: Any, terms: QueryTerms, past: list[tuple[Any, Any]], n: int, tuning: Tuning,
                    matched: dict[Key, dict[int, float]], replaced_by: dict[Key, tuple[str, str]] | None = None
                    ) -> dict[Key, float]:
        """The ``n`` best memories by BM25 among those replaced by another (``past``: the filters keeping those
        only, :func:`gitmem.search.scoring.deprecated_clause`; a forgotten memory is not one): the past states.
        ``replaced_by``, if given, gets each one's id and the id of the memory that replaced it when that was a
        later state, not a compaction's summary (a chain's link: read from its stored document)."""
        scores = self._bm25(searcher, terms, past, n, tuning, matched)
        if replaced_by is not None and scores:
            keys = list(scores)
            flags = searcher.fast_field_values("superseded", [tantivy.DocAddress(*key) for key in keys])
            for key, flag in zip(keys, flags, strict=True):
                if flag == ranking.REPLACED:
                    memory = _stored(searcher, key)
                    replaced_by[key] = (memory.id, memory.superseded_by)
        return scores

    def _rank(self, searcher: Any, bm25: dict[tuple[int, int], float], vector: dict[tuple[int, int], float],
              k: int, now: datetime, when: TimeRange | None, terms: QueryTerms, tuning: Tuning,
              vectors: rerank.QueryVectors | None = None, model: dict[str, float] | None = None,
              matched: dict[Key, dict[int, float]] | None = None,
              order: tuple[Order, float | None, set[Key], dict[Key, tuple[str, str]]] | None = None,
              help_asked: bool = False, governed: frozenset[Key] = frozenset()) -> list[Hit]:
        blind: set[tuple[int, int]] = set()
        if vectors is not None and self._blind:  # matched words only: BM25 alone ranks them (``fuse``)
            rest = [key for key in bm25 if key not in vector]
            codes = searcher.fast_field_values("sha64", [tantivy.DocAddress(s, d) for s, d in rest])
            blind = {key for key, code in zip(rest, codes, strict=True) if int(code or 0) in self._blind}
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

            signals = semantic.signals(self, searcher, keys, columns, fused, bm25, when, terms, vectors)
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
                               weights=self.repo.config.ranking, tuning=tuning, signals=signals)
        highlight = frozenset(terms.highlight_terms())
        hits: list[Hit] = []
        for score, key, parts in scored[:k]:
            doc = searcher.doc(tantivy.DocAddress(*key))
            memory = idoc.memory_from_json(doc["doc"][0])
            chunks = _chunks_by_score((matched or {}).get(key, {}))
            best = chunks[0][0] if chunks else 0
            hits.append(Hit(id=memory.id, score=score, memory=memory, parts=parts, path=doc["path"][0],
                            terms=highlight, analyzer=self._analyzer, chunk=best,
                            chunk_scores=tuple(c for c in chunks if c[0])))
        return hits


def _stored(searcher: Any, key: Key) -> Memory:
    """The memory stored in the index document at ``key`` (a JSON parse: read only the ones needed)."""
    return idoc.memory_from_json(searcher.doc(tantivy.DocAddress(*key))["doc"][0])


def _covers(embedder: Embedder, text: str) -> bool:
    """Whether the model reads ``text``'s script (only asked when a model takes part)."""
    from gitmem.embeddings.runtime import covers

    return covers(getattr(embedder, "scripts", ()), text)


def _model_weights(model_id: str, question: str = "") -> dict[str, float] | None:
    from gitmem.search import rerank

    return rerank.weights_for(model_id, question)


def open_index(repo: IndexedRepo, *, embedder: Embedder | str | None = "auto", lock_wait: float = 2.0,
               progress: Progress | None = None, embed_missing: bool = True) -> Index:
    """The search index of ``repo``. ``embedder="auto"`` resolves ``repo.config.embedding`` on first need
    (a missing or broken model means BM25 only, with a line in :attr:`Index.notices`); ``None`` is BM25 only.
    ``embed_missing=False``: searches embed only their question (see :class:`Index`)."""
    return Index(repo, embedder=embedder, lock_wait=lock_wait, progress=progress, embed_missing=embed_missing)
