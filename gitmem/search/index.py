"""The search index: tantivy BM25 with a CJK-aware analyzer plus cached embedding vectors, kept in step with the
memory repository's HEAD.

Everything lives under ``<repo>/.cache/`` (ignored by git, rebuildable at any time)::

    .cache/search/tantivy/          the tantivy index (one document per memory file)
    .cache/search/state.bin         path → [blob sha, source group, created, neighbour signature, readable, id]
    .cache/search/HEAD              "<format> <commit sha>" of the last refresh: the ~1 ms "anything to do?" check
    .cache/search.lock              one writer at a time across processes
    .cache/vectors/<model-id>/      embedding shards: <name>.npy (float32, one row per memory) + <name>.json
                                    (the git blob SHAs of those rows); COMPLETE holds the commit they cover

A refresh compares the HEAD commit with ``search/HEAD``; when they differ it walks the tree under
``memories/`` (blob SHAs only) and re-indexes the files whose SHA changed, plus their neighbours in the same
source (session), whose context field mentions them. Vectors are keyed by (model id, blob SHA): an edit embeds
one memory, a rename or a branch switch back embeds nothing. BM25-only searches never import numpy.
"""

from __future__ import annotations

import contextlib
import functools
import marshal
import os
import re
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

import tantivy

from gitmem.errors import DocumentError, GitmemError, SearchError, ValidationError
from gitmem.files.atomic import atomic_write, settled
from gitmem.files.locks import LockTimeout, file_lock
from gitmem.search import schema as idoc
from gitmem.search import scoring as ranking
from gitmem.search.order import Order, order_bonus, parse_order
from gitmem.search.scoring import DEFAULT_TUNING, QueryTerms, ScoreParts, Tuning
from gitmem.search.snapshot import Key, Snapshot
from gitmem.search.timeexpr import TimeRange, parse_time_expression
from gitmem.store import document as docs
from gitmem.text.records import Record, replace

# The vector side (the model runtime, the second-stage ranker, the vector cache, numpy) is imported inside the
# methods that use a model: a BM25 search, the prompt hook's, never loads it.
TYPE_CHECKING = False  # not typing.TYPE_CHECKING: a search does not import typing (~3 ms a process)
if TYPE_CHECKING:
    from typing import Any, Literal, Protocol

    from gitmem.config import Config
    from gitmem.embeddings.runtime import Embedder
    from gitmem.git.store import GitStore
    from gitmem.search import rerank
    from gitmem.search.vectors import VectorStore
    from gitmem.store.document import Memory

    Mode = Literal["hybrid", "bm25", "vector"]
    # a state entry (see SHA, GROUP, … below)
    _Entry = list[Any]
else:
    Protocol = object

__all__ = ["Hit", "Index", "IndexedRepo", "RefreshStats", "ScoreParts", "open_index"]

MEMORY_PREFIX = f"{docs.MEMORIES_DIR}/"
#: called with the number of memories just embedded (``tqdm.update`` fits)
Progress = Callable[[int], object]
_MAX_SEGMENTS = 12
#: memories embedded in one model call with their sentences (batched by length inside it); paces the progress bar
_EMBED_CHUNK = 64
#: memories per vector shard written (fewer shards, fewer merges)
_SHARD = 512


class Hit(Record):
    """One search result: the memory, its score and a snippet of its text (``highlights`` are character ranges
    of matched terms inside ``snippet``). The snippet is cut on first use: recall never needs one.

    ``id``, ``score``, ``memory``, ``parts`` (:class:`ScoreParts`), ``path`` (of the memory file), ``terms`` (the
    query's analyzed terms), ``analyzer`` (the one cutting the snippet; not part of the value), ``chunk``: the
    chunk of a long memory that matched best (1, 2, …; :func:`gitmem.search.schema.memory_chunks`), 0: the memory
    as a whole. Read-only once made."""

    UNCOMPARED = frozenset({"analyzer"})
    id: str
    score: float
    memory: Memory
    parts: ScoreParts
    path: str = ""
    terms: frozenset[str] = frozenset()
    analyzer: Any = None
    chunk: int = 0

    @functools.cached_property
    def _cut(self) -> tuple[str, tuple[tuple[int, int], ...]]:
        text = self.memory.text
        if self.chunk:
            parts = idoc.memory_chunks(self.memory)
            text = parts[self.chunk - 1] if self.chunk <= len(parts) else text
        if self.analyzer is None:
            return text[:160], ()
        text, marks = ranking.snippet(text, set(self.terms), self.analyzer)
        return text, tuple(marks)

    @property
    def snippet(self) -> str:
        """About 160 characters around the densest cluster of matched words (in the best chunk of a long
        memory)."""
        return self._cut[0]

    @property
    def highlights(self) -> tuple[tuple[int, int], ...]:
        """Character ranges of the matched words inside :attr:`snippet`."""
        return self._cut[1]


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


# A state entry is a list (cheap to load for 100k files): [blob sha, source group, created, neighbour
# signature, readable, id, position in its group, distinct analyzed words of its text joined by spaces].
SHA, GROUP, CREATED, SIG, OK, ID, SEQ, TOKS = range(8)


def _entry(sha: str, group: str = "", created: int = 0, ok: bool = True, id: str = "") -> _Entry:
    return [sha, group, created, "", ok, id, 0, ""]


def _signature(files: list[Path]) -> tuple[tuple[int, int, int], ...] | None:
    """(inode, mtime, size) of each file, None when one is missing: a cheap 'did anything replace these?'"""
    try:
        return tuple((st.st_ino, st.st_mtime_ns, st.st_size) for st in map(os.stat, files))
    except OSError:
        return None


def _natural(value: str) -> tuple[Any, ...]:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", value))


def _rmtree(path: Path, *, ignore_errors: bool) -> None:
    # shutil loads bz2 and lzma at import, which every prompt hook would pay for an index it only reads
    import shutil

    shutil.rmtree(path, ignore_errors=ignore_errors)


# -- the index -------------------------------------------------------------------------------------------

class IndexedRepo(Protocol):  # a typing.Protocol for type checkers, a plain class at run time
    """What the index reads of a memory repository: its folder, its settings and its git files (a
    :class:`~gitmem.store.memories.MemoryRepo` is one; :class:`~gitmem.store.base.StoredRepo` is the cheap one the
    hooks open)."""

    path: Path
    config: Config
    git: GitStore


class Index:
    """Search over one memory repository. Cheap to create; the tantivy index opens on first use.

    ``embedder``: ``"auto"`` (the model ``repo.config.embedding`` names, loaded on the first hybrid or vector
    search), ``None`` (BM25 only) or an :class:`~gitmem.embeddings.runtime.Embedder`. ``lock_wait``: how long a search
    waits
    for another process that is updating the index before it searches the existing index as it is.
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
        self.root = repo.path / ".cache"
        self.dir = self.root / "search"
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
        self._analyzer = ranking.build_analyzer()
        self._schema = idoc.schema()
        self._index: Any = None
        self._snap: Snapshot | None = None  # the searcher every search uses until the next reload
        self._seen = ""  # the HEAD this object's reader last reloaded at
        # marker, shas, matrix, sha64 → row, row → sha64
        self._vectors: tuple[str, list[str], Any, dict[int, int], list[int]] | None = None
        #: sha64 of the memories stored with a zero vector (a script the model does not cover)
        self._blind: frozenset[int] = frozenset()
        self._sentences: tuple[str, Any, Any, dict[int, int], Any] | None = None
        self._hood: tuple[str, rerank.Neighbourhood] | None = None
        # the HEAD, ref and index-marker files as they were when the index was last found current
        self._fresh: tuple[list[Path], tuple[tuple[int, int, int], ...]] | None = None

    # -- paths and small files ----------------------------------------------------------------------
    @property
    def _tantivy_dir(self) -> Path:
        return self.dir / "tantivy"

    @property
    def _head_file(self) -> Path:
        return self.dir / "HEAD"

    def _lock(self, timeout: float) -> contextlib.AbstractContextManager[None]:
        """One writer at a time across processes (``flock``: nothing to import, released if the process dies)."""
        self.root.mkdir(exist_ok=True)
        return file_lock(self.root / "search.lock", timeout=timeout)

    def _current_head(self) -> str:
        git = self.repo.git
        head: bytes | None = git.head()  # reads the ref files directly: ~0.1 ms, no dulwich
        return head.decode() if head else ""

    def _marker(self) -> str:
        try:
            return self._head_file.read_text("utf-8")
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
        return self._marker() == f"{self._format} {head}" and (self._tantivy_dir / "meta.json").is_file()

    def _open(self, create: bool = False) -> Any:
        if self._index is None or create:
            path = self._tantivy_dir
            if create:
                path.mkdir(parents=True, exist_ok=True)
            try:
                index = tantivy.Index(self._schema, path=str(path), reuse=True)
            except ValueError:
                if not create:
                    raise
                _rmtree(path, ignore_errors=True)
                path.mkdir(parents=True, exist_ok=True)
                index = tantivy.Index(self._schema, path=str(path), reuse=False)
            index.register_tokenizer(ranking.TOKENIZER, self._analyzer)
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
        files = [*self.repo.git.head_files(), self._head_file]
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
        exists = (self._tantivy_dir / "meta.json").is_file()
        try:
            with self._lock(self.lock_wait if wait is None else wait) if exists else self._lock(max(30.0, wait or 0)):
                stats = RefreshStats() if self._is_current(head) else self._update(head, rebuild=False)
        except LockTimeout:
            if not exists:
                raise SearchError("the search index is locked by another process and does not exist yet",
                                  "wait for the other gitmem process to finish and try again") from None
            self.stale = True
            self._notice("the search index is being updated by another gitmem process; "
                         "these results come from the index as it was")
            stats = RefreshStats()
        self._open()  # a broken index says so here, before the reload's guard
        with contextlib.suppress(ValueError):
            self._reload()
        self._seen = head if not self.stale else ""
        stats.seconds = time.perf_counter() - started
        return stats

    def rebuild(self, *, vectors: bool = True, progress: Progress | None = None,
                total: Progress | None = None) -> RefreshStats:
        """Throw the index away and build it again from HEAD (``gitmem reindex``); also embed what is missing
        when a model is available. Vectors already cached for a blob SHA are kept. ``total(n)`` is called once
        with the number of memories to embed, before ``progress`` counts them (a progress bar's length)."""
        started = time.perf_counter()
        head = self._current_head()
        with self._lock(60.0):
            self._index = self._snap = None
            _rmtree(self._tantivy_dir, ignore_errors=True)
            self._head_file.unlink(missing_ok=True)
            (self.dir / "state.bin").unlink(missing_ok=True)
            stats = self._update(head, rebuild=True)
        stats.rebuilt = True
        if vectors and self.embedder is not None:
            embed_started = time.perf_counter()
            stats.embedded = self._ensure_vectors(head, progress=progress or self.progress, total=total)
            stats.embed_seconds = time.perf_counter() - embed_started
        stats.seconds = time.perf_counter() - started
        return stats

    def embed(self, *, progress: Progress | None = None, total: Progress | None = None) -> int:
        """Bring the index up to HEAD, then embed every memory that has no vector yet (the step ``rebuild`` and
        the warm-up's searches take); returns how many were embedded. ``progress`` and ``total`` as in
        :meth:`rebuild`."""
        self.refresh()
        if self.embedder is None or self.stale:
            return 0
        return self._ensure_vectors(self._current_head(), progress=progress or self.progress, total=total)

    def _load_state(self) -> tuple[dict[str, _Entry], str] | None:
        """The recorded state and the commit it describes (marshal: ten times faster to write than JSON at 10k
        files; it is a cache, so a file from another Python version or a damaged one just means a rebuild)."""
        try:
            data = marshal.loads((self.dir / "state.bin").read_bytes())
            if not isinstance(data, dict) or data.get("format") != idoc.FORMAT or \
                    data.get("window") != self.tuning.context_window:
                return None
            files: dict[str, _Entry] = data["files"]
            return files, str(data.get("head") or "")
        except (OSError, ValueError, TypeError, KeyError, EOFError):
            return None

    def _read(self, path: str, sha: str) -> Memory | DocumentError:
        raw: bytes | None = None
        with contextlib.suppress(OSError):
            raw = (self.repo.path / path).read_bytes()
        if raw is None or idoc.git_blob_sha(raw) != sha:  # uncommitted edit in the work tree: index what is committed
            raw = self.repo.git.read_head_file(path)
        if raw is None:
            return DocumentError(f"{path}: missing from HEAD")
        try:
            return docs.loads(raw.decode("utf-8"), path)
        except UnicodeDecodeError:
            return DocumentError(f"{path}: not UTF-8 text")
        except DocumentError as exc:
            return exc

    def _update(self, head: str, *, rebuild: bool) -> RefreshStats:
        """Re-index what changed between the recorded state and ``head`` (caller holds the lock)."""
        stats = RefreshStats()
        loaded_state = None if rebuild else self._load_state()
        if loaded_state is None or not (self._tantivy_dir / "meta.json").is_file():
            loaded_state = ({}, "")
            self._index = self._snap = None
            _rmtree(self._tantivy_dir, ignore_errors=True)
            stats.rebuilt = True
        state, since = loaded_state
        index = self._open(create=True)
        # Compare the trees of the indexed commit and HEAD (only folders whose SHA moved); walk every file
        # only on a first build or when that commit is gone.
        diff = self.repo.git.tree_changes(since, MEMORY_PREFIX) if state and since else None
        if diff is None:
            tree = {p: s for p, s in self.repo.git.tree_files(MEMORY_PREFIX).items() if p.endswith(".md")}
            removed = [p for p in state if p not in tree]
        else:
            tree = {p: s for p, s in diff.items() if s is not None and p.endswith(".md")}
            removed = [p for p, s in diff.items() if s is None and p in state]
        changed = [p for p, s in tree.items() if p not in state or state[p][SHA] != s]
        loaded: dict[str, Memory] = {}
        affected = {state[p][GROUP] for p in removed + changed if p in state}
        entries = state
        for path in removed:
            del entries[path]
        for path in changed:
            item = self._read(path, tree[path])
            if isinstance(item, DocumentError):
                entries[path] = _entry(tree[path], ok=False)
                stats.unreadable.append(item.message)
                continue
            loaded[path] = item
            entries[path] = _entry(tree[path], idoc.group(item), int(item.created.timestamp()), True, item.id)
            affected.add(entries[path][GROUP])
        affected.discard("")
        plan = self._plan(entries, affected, set(changed))

        def memory(path: str) -> Memory | None:
            if path not in loaded:
                item = self._read(path, entries[path][SHA])
                if isinstance(item, DocumentError):
                    return None
                loaded[path] = item
            return loaded[path]

        writer = self._writer(index)
        try:
            for path in removed:
                writer.delete_documents_by_term("path", path)
            for path, (seq, neighbours) in plan.items():
                if not stats.rebuilt:
                    writer.delete_documents_by_term("path", path)
                mem = memory(path)
                if mem is None:
                    continue
                ctx = "\n".join(m.text for m in map(memory, neighbours) if m is not None)
                entry = entries[path]
                # one string, not a tuple: marshal reads and writes 10k strings far faster than 10k tuples
                entry[TOKS] = " ".join(sorted(set(self._analyzer.analyze(idoc.body(mem)))))
                for doc in idoc.documents(mem, path, entry[SHA], idoc.grp_hash(entry[GROUP]), seq, ctx):
                    writer.add_document(doc)
            writer.commit()
            # Waiting for merges costs up to ~0.4 s at 10k documents; a small refresh leaves them to run (or to
            # be abandoned, which tantivy allows) unless segments have piled up.
            if stats.rebuilt or len(plan) > 100 or index.searcher().num_segments > _MAX_SEGMENTS:
                writer.wait_merging_threads()
        except BaseException:
            with contextlib.suppress(Exception):
                writer.rollback()
            raise
        stats.indexed, stats.removed = len(plan), len(removed)
        self.warnings = stats.unreadable
        state_data = {"format": idoc.FORMAT, "window": self.tuning.context_window, "head": head, "files": entries}
        atomic_write(self.dir / "state.bin", marshal.dumps(state_data))
        atomic_write(self._head_file, f"{self._format} {head}".encode())
        self._reload()
        return stats

    def _plan(self, entries: dict[str, _Entry], groups: set[str],
              changed: set[str]) -> dict[str, tuple[int, list[str]]]:
        """Which files to (re)index, each with its position in its source group and its neighbours' paths.

        A file is re-indexed when its blob changed or when the neighbours its context field holds changed."""
        import hashlib  # a refresh that re-indexes pays for these, a search does not
        import json

        window = self.tuning.context_window
        plan: dict[str, tuple[int, list[str]]] = {}
        members: dict[str, list[str]] = {g: [] for g in groups}
        if members:
            for path, entry in entries.items():
                if entry[OK] and entry[GROUP] in members:
                    members[entry[GROUP]].append(path)
        for paths in members.values():
            paths.sort(key=lambda p: (entries[p][CREATED], _natural(entries[p][ID]), p))
            for seq, path in enumerate(paths):
                entries[path][SEQ] = seq
                neighbours = paths[max(0, seq - window):seq] + paths[seq + 1:seq + 1 + window]
                sig = hashlib.blake2b(json.dumps([seq, [(q, entries[q][SHA]) for q in neighbours]]).encode(),
                                      digest_size=8).hexdigest()
                if sig != entries[path][SIG] or path in changed:
                    entries[path][SIG] = sig
                    plan[path] = (seq, neighbours)
        for path in changed:
            if entries[path][OK] and path not in plan:
                plan[path] = (0, [])
        return plan

    def _writer(self, index: Any) -> Any:
        deadline = time.monotonic() + max(self.lock_wait, 5.0)
        while True:
            try:
                return index.writer(heap_size=32_000_000, num_threads=1)
            except ValueError as exc:  # LockBusy: a writer outside gitmem's lock (another tool, a stale process)
                if "lock" not in str(exc).lower() or time.monotonic() > deadline:
                    raise SearchError(f"cannot write the search index: {exc}",
                                      "close other gitmem processes, or run gitmem reindex") from None
                time.sleep(0.05)

    # -- embeddings ----------------------------------------------------------------------------------
    @property
    def embedder(self) -> Embedder | None:
        """The embedding model, loaded on first use; None (with a notice) when there is none or it is broken."""
        if not self._embedder_resolved:
            self._embedder_resolved = True
            self._embedder = self._load_embedder()
        return self._embedder

    def _load_embedder(self) -> Embedder | None:
        from gitmem.embeddings import runtime as embed

        cfg = self.repo.config.embedding
        spec = embed.EmbedSpec(model=cfg.model or "auto", path=Path(cfg.path).expanduser() if cfg.path else None,
                               dim=cfg.dim or None,
                               models_dir=Path(cfg.models_dir).expanduser() if cfg.models_dir else None)
        try:
            loaded = embed.load_embedder(spec)
        except (embed.EmbeddingError, GitmemError, ImportError, OSError) as exc:
            self._notice(f"embedding model unusable ({exc}); searching with BM25 only")
            return None
        if loaded is None and spec.model.lower() != "none":
            self._notice("no embedding model available; searching with BM25 only "
                         "(install one with: gitmem model install)")
        return loaded

    def _vector_dir(self, model_id: str) -> Path:
        safe = re.sub(r"[^A-Za-z0-9._@-]+", "_", model_id)
        return self.root / "vectors" / f"{safe}.r{idoc.VECTOR_RECIPE}"

    def _store(self, model_id: str, part: str = "") -> VectorStore:
        """The vector cache of a model (``part="sentences"``: of its sentence vectors)."""
        from gitmem.search.vectors import VectorStore

        folder = self._vector_dir(model_id)
        return VectorStore(folder / part if part else folder)

    def _ensure_vectors(self, head: str, progress: Progress | None = None, total: Progress | None = None) -> int:
        """Embed every indexed memory whose blob SHA has no vector yet; returns how many were embedded."""
        embedder = self.embedder
        if embedder is None:
            return 0
        scripts = getattr(embedder, "scripts", ())
        store = self._store(embedder.model_id)
        sentences = self._store(embedder.model_id, "sentences")
        with contextlib.suppress(OSError):
            if store.complete.read_text("utf-8") == head:
                return 0
        lock = contextlib.ExitStack()
        try:
            lock.enter_context(self._lock(self.lock_wait))
        except LockTimeout:
            self._notice("another gitmem process is computing embeddings; some memories are searched by BM25 only")
            return 0
        try:
            with contextlib.suppress(OSError):
                if store.complete.read_text("utf-8") == head:
                    return 0
            live, missing = self._missing(store)
            if total is not None:
                total(len(missing))
            done = 0
            complete = True
            if missing:
                self._reload()  # another Index object of this process may have just added them
                searcher = self._snapshot().searcher
                pending: tuple[list[str], list[Any], list[str], list[Any]] = ([], [], [], [])
                for start in range(0, len(missing), _EMBED_CHUNK):
                    chunk = missing[start:start + _EMBED_CHUNK]
                    texts = self._texts_for(searcher, chunk)
                    shas = [s for s in chunk if s in texts]
                    complete = complete and len(shas) == len(chunk)
                    if shas:
                        import numpy as np

                        # a memory in a script the model does not cover is embedded by its words in the model's
                        # scripts, if any, else kept as a zero vector: BM25 alone finds it, and the zero row marks
                        # it as such for the ranking (``_load_vectors``)
                        from gitmem.embeddings.runtime import readable

                        read = {s: readable(scripts, texts[s][0]) for s in shas}
                        seen = [s for s in shas if read[s]]
                        # one call for the memories and their sentences: one tokenizer pass, and batches of
                        # similar length across the whole chunk instead of a few calls per memory
                        said = [part for sha in seen if read[sha] == texts[sha][0] for part in texts[sha][1]]
                        vecs = embedder.embed_documents([read[s] for s in seen] + [t for _k, t in said])
                        rows = dict(zip(seen, vecs[:len(seen)], strict=True))
                        zero = np.zeros(embedder.dim, dtype=np.float32)
                        pending[0].extend(shas)
                        pending[1].append(np.stack([rows.get(s, zero) for s in shas]))
                        pending[2].extend(k for k, _t in said)
                        pending[3].append(vecs[len(seen):])
                    done += len(shas)
                    if pending[0] and (len(pending[0]) >= _SHARD or start + _EMBED_CHUNK >= len(missing)):
                        _write_vectors(store, sentences, *pending)
                        pending = ([], [], [], [])
                    if progress:
                        progress(len(chunk))
            store.compact(live)
            sentences.compact(live)
            if complete:
                atomic_write(store.complete, head.encode())
            self._vectors = self._sentences = None
            return done
        finally:
            lock.close()

    def _missing(self, store: VectorStore) -> tuple[set[str], list[str]]:
        """(blob SHAs of the indexed memories, those of them ``store`` has no vector for)."""
        loaded = self._load_state()
        live = {e[SHA] for e in loaded[0].values() if e[OK]} if loaded else set()
        return live, sorted(live - store.shas())

    def _texts_for(self, searcher: Any, shas: list[str]) -> dict[str, tuple[str, list[tuple[str, str]]]]:
        """What to embed for each blob: the memory's :func:`~gitmem.search.schema.embedding_text`, then its parts
        with their cache keys: the chunks of a long memory (``<sha>#c<n>``, each after the memory's name), else
        its sentences if several (``<sha>#<n>``)."""
        from gitmem.search import rerank

        query = tantivy.Query.boolean_query([
            (tantivy.Occur.Must, tantivy.Query.term_set_query(self._schema, "sha", shas)),
            (tantivy.Occur.Must, tantivy.Query.term_query(self._schema, "part", 0))])
        texts: dict[str, tuple[str, list[tuple[str, str]]]] = {}
        for _score, addr in searcher.search(query, limit=max(1, len(shas))).hits:
            doc = searcher.doc(addr)
            memory = idoc.memory_from_json(doc["doc"][0])
            sha = doc["sha"][0]
            chunks = idoc.memory_chunks(memory)
            parts = [(f"{sha}#c{n}", f"{memory.name}\n{chunk}" if memory.name else chunk)
                     for n, chunk in enumerate(chunks)] if chunks \
                else [(f"{sha}#{n}", text) for n, text in enumerate(rerank.sentences(memory.text))]
            texts[sha] = (idoc.embedding_text(memory), parts)
        return texts

    def _vectors_ready(self, embedder: Embedder) -> None:
        """Embed what the index holds and the cache lacks, then remember in the snapshot when the vectors cover
        its commit: nothing changes them until the next reload, so later searches skip every file check."""
        if self._snapshot().vectors == embedder.model_id:
            return
        head = self._seen or self._current_head()
        store = self._store(embedder.model_id)
        if self.embed_missing:
            self._ensure_vectors(head, self.progress)  # may reload: the snapshot to mark is the one after it
        with contextlib.suppress(OSError):
            if head and store.complete.read_text("utf-8") == head:
                self._load_vectors(embedder)
                self._load_sentences(embedder)
                self._snapshot().vectors = embedder.model_id
                self.vectors_missing = 0
                return
        if not self.embed_missing:
            self.vectors_missing = len(self._missing(store)[1])

    def _load_vectors(self, embedder: Embedder) -> tuple[list[str], Any, dict[int, int], list[int]]:
        """(row shas, matrix, sha64 → row, row → sha64) of the memory vectors, kept while the shards do not
        change."""
        if self._vectors is not None and self._snapshot().vectors == embedder.model_id:
            return self._vectors[1:]  # loaded once the vectors covered this state: nothing changed since
        store = self._store(embedder.model_id)
        marker = store.marker()
        if self._vectors is None or self._vectors[0] != marker:
            import numpy as np

            shas, matrix = store.load()
            row_sha64 = [idoc.sha64(sha) for sha in shas]
            self._vectors = (marker, shas, matrix, {s: row for row, s in enumerate(row_sha64)}, row_sha64)
            self._blind = frozenset() if matrix is None else frozenset(
                row_sha64[row] for row in np.flatnonzero(~matrix.any(axis=1)).tolist())
        return self._vectors[1:]

    def _load_sentences(self, embedder: Embedder) -> tuple[Any, Any, dict[int, int], Any]:
        """(matrix with rows grouped by memory, start row of each memory's group, sha64 → group) of the
        sentence vectors, and the sha64 of the memories whose group holds chunks (long memories) rather than
        sentences; ``matrix`` is None when no memory has several sentences or chunks."""
        import numpy as np

        if self._sentences is not None and self._snapshot().vectors == embedder.model_id:
            return self._sentences[1:]
        store = self._store(embedder.model_id, "sentences")
        marker = store.marker()
        if self._sentences is None or self._sentences[0] != marker:
            keys, matrix = store.load()
            if matrix is None or not keys:
                self._sentences = (marker, None, None, {}, np.zeros(0, np.uint64))
            else:
                owners = np.array([idoc.sha64(k) for k in keys], dtype=np.uint64)
                order = np.argsort(owners, kind="stable")
                unique, starts = np.unique(owners[order], return_index=True)
                chunked = np.array(["#c" in k for k in keys])[order]
                self._sentences = (marker, matrix[order], starts, {int(u): i for i, u in enumerate(unique)},
                                   unique[chunked[starts]])
        return self._sentences[1:]

    def _neighbourhood(self) -> rerank.Neighbourhood:
        """Neighbours and word sets of every indexed memory, from the state of the last refresh."""
        snap = self._snapshot()
        if snap.hood is None:  # the state file changes only with a reload, which drops the snapshot
            snap.hood = self._hood_for(self._marker())
        hood: rerank.Neighbourhood = snap.hood
        return hood

    def _hood_for(self, marker: str) -> rerank.Neighbourhood:
        from gitmem.search import rerank

        if self._hood is None or self._hood[0] != marker:
            loaded = self._load_state()
            entries = loaded[0] if loaded else {}
            hashes = {g: idoc.grp_hash(g) for g in {e[GROUP] for e in entries.values()}}  # once per source
            rows = [(idoc.sha64(e[SHA]), hashes[e[GROUP]], e[SEQ], e[TOKS]) for e in entries.values() if e[OK]]
            self._hood = (marker, rerank.Neighbourhood(rows, self.tuning.context_window))
        return self._hood[1]

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
    ) -> list[Hit]:
        """The ``k`` best memories for ``query`` (a question or keywords, any language).

        Filters: ``type``, ``category``, ``tags`` (all must be present), ``project`` (that project's memories
        plus the global ones). Deprecated memories only with ``include_deprecated``. ``mode``: ``hybrid``
        (BM25 + vectors; BM25 alone when no model), ``bm25``, ``vector``. ``now`` anchors recency and time
        expressions such as "last week". Raises :class:`SearchError` for an empty query."""
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
            self._vectors_ready(embedder)
        when = parse_time_expression(query, now) if tuning.time_boost else None
        terms = ranking.analyze_query(query, self._analyzer)
        if terms.empty and embedder is None:
            raise SearchError(f"nothing to search for in {query.strip()[:60]!r}", "use words, not only punctuation")
        tag_list = [tags] if isinstance(tags, str) else list(tags or [])
        filters = ranking.filter_clauses(self._schema, type=type, category=category, tags=tag_list, project=project,
                                         include_deprecated=include_deprecated)
        snap = self._snapshot()
        searcher = snap.searcher
        n = max(tuning.candidates, k * 3)
        bm25: dict[tuple[int, int], float] = {}
        best_chunk: dict[Key, int] = {}
        if mode != "vector" and not terms.empty:
            bm25 = self._bm25(searcher, terms, filters, n, tuning, best_chunk)
            if when is not None:
                ranged = [*filters, ranking.time_clause(self._schema, when)]
                for key, score in self._bm25(searcher, terms, ranged, n, tuning, best_chunk).items():
                    bm25[key] = max(score, bm25.get(key, 0.0))
        vector: dict[tuple[int, int], float] = {}
        vectors: rerank.QueryVectors | None = None
        if embedder is not None and mode != "bm25":
            admitted = snap.admits((type, category, tuple(tag_list), project, include_deprecated), filters)
            vector, vectors = self._vector(snap, embedder, query, admitted, n)
        model = _model_weights(embedder.model_id) if embedder is not None else None
        second = vectors is not None and model is not None and mode == "hybrid" and tuning.fusion == "ltr"
        order = parse_order(query) if tuning.order_weight > 0 else None
        anchor: float | None = None
        if order is not None and order.anchor:  # "before X": when was the memory about X created?
            found = self._bm25(searcher, ranking.analyze_query(order.anchor, self._analyzer), filters, 1, tuning, {})
            if found:
                key = next(iter(found))
                anchor = float(searcher.fast_field_values("created", [tantivy.DocAddress(*key)])[0] or 0)
        return self._rank(searcher, bm25, vector, k, now, when, terms, tuning, vectors if second else None, model,
                          best_chunk, (order, anchor) if order is not None else None)

    def _bm25(self, searcher: Any, terms: QueryTerms, filters: list[tuple[Any, Any]], n: int,
              tuning: Tuning, best_chunk: dict[Key, int]) -> dict[tuple[int, int], float]:
        """The ``n`` best memories by BM25; a long memory's best chunk goes into ``best_chunk`` when a chunk
        scored above the memory as a whole."""
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
        for (score, _addr, part), code in zip(chunked, codes, strict=True):
            for key in snap.addresses(int(code or 0)):
                if score > scores.get(key, 0.0):
                    scores[key] = score
                    best_chunk[key] = part
        return scores

    def _vector(self, snap: Snapshot, embedder: Embedder, query: str, admitted: tuple[bool, frozenset[Key]],
                n: int) -> tuple[dict[Key, float], rerank.QueryVectors | None]:
        import numpy as np

        from gitmem.search import rerank

        shas, matrix, row_of, row_sha64 = self._load_vectors(embedder)
        if matrix is None or not shas:
            return {}, None
        qv = embedder.embed_query(ranking.normalise(query))
        sims = np.einsum("ij,j->i", matrix, qv)  # not matrix @ qv: OpenBLAS sgemv takes 8 ms at 10k x 384 here
        sentence_matrix, starts, sentence_of, chunked = self._load_sentences(embedder)
        best = np.maximum.reduceat(np.einsum("ij,j->i", sentence_matrix, qv), starts) \
            if sentence_matrix is not None else np.zeros(0, np.float32)
        if len(chunked):  # a long memory is as near as its nearest chunk (its own vector saw its start only)
            pairs = [(row_of[code], sentence_of[code]) for code in chunked.tolist() if code in row_of]
            if pairs:
                at, groups = np.array(pairs).T
                sims[at] = np.maximum(sims[at], best[groups])
        vectors = rerank.QueryVectors(query=qv, matrix=matrix, cosines=sims, row_of=row_of,
                                      sentence_of=sentence_of, sentence_best=best)
        # the nearest rows first, over twice as many as needed: some belong to filtered-out memories
        take = min(len(shas), n * 2)
        rows = np.argpartition(-sims, take - 1)[:take] if take < len(shas) else np.arange(len(shas))
        rows = rows[np.argsort(-sims[rows], kind="stable")]
        exclude, keys = admitted
        scored: dict[Key, float] = {}
        blind = self._blind
        for row, sim in zip(rows.tolist(), sims[rows].tolist(), strict=True):
            if blind and row_sha64[row] in blind:
                continue
            for key in snap.addresses(row_sha64[row]):
                if (key in keys) != exclude:
                    scored[key] = sim
            if len(scored) >= n:
                break
        return scored, vectors

    def _signals(self, searcher: Any, keys: list[tuple[int, int]], columns: dict[str, list[Any]],
                 fused: dict[tuple[int, int], float], bm25: dict[tuple[int, int], float], when: TimeRange | None,
                 terms: QueryTerms, vectors: rerank.QueryVectors) -> dict[str, list[float]]:
        from gitmem.search import rerank

        words = list(terms.words) + list(terms.chars)
        total = searcher.num_docs
        weights = rerank.idf({w: searcher.doc_freq("body", w) for w in words}, total)
        sha64 = [int(v or 0) for v in columns["sha64"]]
        created = columns.get("created")
        if when is not None and created is None:
            created = searcher.fast_field_values("created", [tantivy.DocAddress(s, d) for s, d in keys])
        return rerank.signals(keys, sha64, fused, bm25, _in_period(created, when, len(keys)), weights,
                              self._neighbourhood(), vectors)

    def _rank(self, searcher: Any, bm25: dict[tuple[int, int], float], vector: dict[tuple[int, int], float],
              k: int, now: datetime, when: TimeRange | None, terms: QueryTerms, tuning: Tuning,
              vectors: rerank.QueryVectors | None = None, model: dict[str, float] | None = None,
              best_chunk: dict[Key, int] | None = None,
              order: tuple[Order, float | None] | None = None) -> list[Hit]:
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
        columns = {name: searcher.fast_field_values(name, addrs) for name in wanted}
        signals: dict[str, list[float]] = {}
        if vectors is not None:  # the second stage: the model over every signal replaces the fused similarity
            from gitmem.search import rerank

            signals = self._signals(searcher, keys, columns, fused, bm25, when, terms, vectors)
            fused = dict(zip(keys, rerank.combine(signals, model or rerank.WEIGHTS), strict=True))
            tuning = replace(tuning, context_weight=0.0, time_boost=0.0)  # both are signals of the model
        if order is not None:  # by date among the memories on the subject (of the period named): in the similarity
            asked, anchor = order
            sims, created = [fused[key] for key in keys], columns["created"]
            bonus = order_bonus(asked, sims, [float(c or 0) for c in created], weight=tuning.order_weight,
                                anchor_at=anchor, within=None if when is None else _in_period(created, when, len(keys)))
            fused = {key: sim + extra for key, sim, extra in zip(keys, sims, bonus, strict=True)}
        scored = ranking.score(keys, fused, columns, bm25, vector, k=k, when=when, now=now,
                               weights=self.repo.config.ranking, tuning=tuning, signals=signals)
        highlight = frozenset(terms.highlight_terms())
        hits: list[Hit] = []
        for score, key, parts in scored[:k]:
            doc = searcher.doc(tantivy.DocAddress(*key))
            memory = idoc.memory_from_json(doc["doc"][0])
            hits.append(Hit(id=memory.id, score=score, memory=memory, parts=parts, path=doc["path"][0],
                            terms=highlight, analyzer=self._analyzer, chunk=(best_chunk or {}).get(key, 0)))
        return hits


def _write_vectors(store: VectorStore, sentences: VectorStore, shas: list[str], blocks: list[Any],
                   keys: list[str], parts: list[Any]) -> None:
    import numpy as np

    if keys:  # sentences first: a memory with a vector is never embedded again
        sentences.add(keys, np.concatenate(parts))
    store.add(shas, np.concatenate(blocks))


def _covers(embedder: Embedder, text: str) -> bool:
    """Whether the model reads ``text``'s script (only asked when a model takes part)."""
    from gitmem.embeddings.runtime import covers

    return covers(getattr(embedder, "scripts", ()), text)


def _model_weights(model_id: str) -> dict[str, float] | None:
    from gitmem.search import rerank

    return rerank.weights_for(model_id)


def _in_period(created: list[Any] | None, when: TimeRange | None, n: int) -> list[bool]:
    if when is None or created is None:
        return [False] * n
    start, end = when.start.timestamp(), when.end.timestamp()
    return [c is not None and start <= c < end for c in created]


def open_index(repo: IndexedRepo, *, embedder: Embedder | str | None = "auto", lock_wait: float = 2.0,
               progress: Progress | None = None, embed_missing: bool = True) -> Index:
    """The search index of ``repo``. ``embedder="auto"`` resolves ``repo.config.embedding`` on first need
    (a missing or broken model means BM25 only, with a line in :attr:`Index.notices`); ``None`` is BM25 only.
    ``embed_missing=False``: searches embed only their question (see :class:`Index`)."""
    return Index(repo, embedder=embedder, lock_wait=lock_wait, progress=progress, embed_missing=embed_missing)

