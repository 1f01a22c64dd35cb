"""The search index: tantivy BM25 with a CJK-aware analyzer plus cached embedding vectors, kept in step with the
memory repository's HEAD.

Everything lives under ``<repo>/.cache/`` (ignored by git, rebuildable at any time), or, for a repository this user
cannot write, under a folder of its own in the user's cache (:func:`~gitmem.files.places.derived_dir`)::

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

This module is the read side: opening the index, checking that it is current, and a search's steps in order (its
BM25 candidates come from :mod:`gitmem.search.candidates`, their ranking into hits from
:mod:`gitmem.search.results`). It is what a prompt hook loads, so it imports neither :mod:`re` nor :mod:`pathlib`
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
from gitmem.search import analysis, candidates, results
from gitmem.search import schema as idoc
from gitmem.search import scoring as ranking
from gitmem.search.hit import Hit
from gitmem.search.order import AMONG, parse_order
from gitmem.search.scoring import DEFAULT_TUNING, Tuning
from gitmem.search.snapshot import Key, Snapshot
from gitmem.search.standing import GOVERNING, asks_help
from gitmem.search.timeexpr import parse_time_expression
from gitmem.store import memory as docs

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: a search does not import typing (~3 ms a process)
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

    Mode = Literal["hybrid", "bm25", "vector"]
    #: called with the number of memories just embedded (``tqdm.update`` fits)
    Progress = Callable[[int], object]
    #: a file path as ``os`` takes it
    StrPath = str | os.PathLike[str]
else:
    Protocol = object

__all__ = ["Index", "IndexedRepo", "RefreshStats", "open_index"]


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
        # the repository's .cache, or the user's cache for a repository this user cannot write
        self._root = repo.config.derived_dir
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
        """The folder of the index, its lock and the vectors: the repository's ``.cache``, or one under the user's
        cache for a repository this user cannot write (:func:`~gitmem.files.places.derived_dir`)."""
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
            try:
                index = tantivy.Index(self._schema, path=self._tantivy_dir, reuse=True)
            except ValueError as exc:  # a damaged file: a truncated segment, a meta.json that is not JSON
                raise SearchError(f"the search index in {self._tantivy_dir} cannot be read: "
                                  f"{' '.join(str(exc).split())[:200]}", "run gitmem reindex") from None
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
            try:
                if self._index is None or self._seen != head:  # another process may have updated it: see its commit
                    self._reload()
                    self._seen = head
            except (SearchError, ValueError):
                # a damaged file: the update below finds it cannot open the index and rebuilds it from the memory
                # files, as it builds a missing one (derived state is always rebuildable from git)
                self._index = self._snap = None
            else:
                now = time.time_ns()
                self._fresh = (files, before) \
                    if before is not None and all(settled(m, now) for _i, m, _s in before) else None
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
        if project and ("/" in project or "\\" in project or ".." in project):
            # "../../etc" named no memory's project and found nothing, where every write refuses it (the full
            # check, gitmem.store.document.check_name, would load unicodedata into the prompt hook)
            raise ValidationError(f"project {project!r} contains a path separator or '..'",
                                  "use a project id as gitmem list --json shows them, e.g. github.com-acme-shop")
        if type is not None and type not in docs.TYPES:
            raise ValidationError(f"unknown type {type!r}", f"use one of: {', '.join(docs.TYPES)}")
        if category is not None and category not in docs.CATEGORIES:
            raise ValidationError(f"unknown category {category!r}", f"use one of: {', '.join(docs.CATEGORIES)}")
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValidationError(f"k={k!r} is not a positive whole number", "ask for at least one memory, e.g. k=5")
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
            bm25 = candidates.bm25(self, searcher, terms, filters, n, tuning, matched)
            extra = [ranking.time_clause(self._schema, when)] if when is not None else []
            if help_asked:  # the standing instructions on the subject, however many memories discuss it at length
                extra.append(ranking.standing_clause(self._schema))
            for clause in extra:
                for key, score in candidates.bm25(self, searcher, terms, [*filters, clause], n, tuning,
                                                  matched).items():
                    bm25[key] = max(score, bm25.get(key, 0.0))
            if past is not None and order is not None and order.history:
                bm25.update(candidates.superseded(self, searcher, terms, past, AMONG, tuning, matched, replaced_by))
            if tuning.standing_weight > 0:  # "when I ask about the budget": the question holds the subject's words
                governed = candidates.naming(self, searcher, terms, filters, tuning, matched)
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

                kept = related(semantic.beyond_empty(embedder, vectors, vector), bm25, embedder.model_id)
                vector = {key: cosine for key, cosine in vector.items() if key in kept}
                governed = {key: value for key, value in governed.items() if key in bm25 or key in kept}
        model = _model_weights(embedder.model_id, query) if embedder is not None else None
        second = vectors is not None and model is not None and mode == "hybrid" and tuning.fusion == "ltr"
        anchor: float | None = None
        linked: set[Key] = set()
        if order is not None and order.anchor:  # "before X": when was the memory about X created?
            anchor, linked = candidates.anchor(self, searcher, order, terms, filters, past, tuning, (bm25, vector),
                                               matched, replaced_by)
        hits = results.rank(self, searcher, bm25, vector, k, now, when, terms, tuning, vectors if second else None,
                            model, matched, (order, anchor, linked, replaced_by) if order is not None else None,
                            help_asked, frozenset(governed))
        if related_only and embedder is not None:
            # a memory mostly in a script the model does not read got the vector of its few words it does ("用
            # alembic 管理迁移…": "alembic"), a near-empty text near every made-up query: its cosine says nothing
            hits = [h for h in hits if h.parts.bm25 > 0 or _covers(embedder, h.memory.text)]
        return hits


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
