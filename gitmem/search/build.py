"""The write side of the search index: bringing it up to HEAD (the state file, the tree diff, the re-index plan,
the tantivy writer), rebuilding it, and embedding the memories that have no vector yet.

:class:`gitmem.search.index.Index` calls these functions only when the index is not current or when it is asked
to rebuild or embed, so a BM25 search of a current index (the prompt hook's) never loads this module nor what it needs
(locks, hashing, JSON, regular expressions, dulwich through the git store's tree reads).

``.cache/search/state.bin`` records, per memory file: [blob sha, source group, created, neighbour signature,
readable, id, position in its group, distinct analyzed words of its text joined by spaces] (:data:`SHA` …
:data:`TOKS`); the refresh compares it with HEAD's tree.

The index takes the files the store reads as memories and no others (:func:`~gitmem.store.document.memory_file`,
:func:`~gitmem.store.document.named_by_id`): a file that ``list`` and ``show`` never see cannot be a search hit
either.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import marshal
import os
import re
import shutil
import time
from pathlib import Path

import tantivy

from gitmem.errors import DocumentError, SearchError
from gitmem.files.atomic import atomic_write
from gitmem.files.locks import LockTimeout, file_lock
from gitmem.search import analysis
from gitmem.search import schema as idoc
from gitmem.store import document as docs

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from gitmem.embeddings.runtime import Span
    from gitmem.search.index import Index, Progress, RefreshStats
    from gitmem.search.vectors import VectorStore
    from gitmem.store.document import Memory

    # a state entry (see SHA, GROUP, … below)
    Entry = list[Any]
    # what ensure_vectors has embedded and not yet written: memory SHAs and their vector blocks, sentence or chunk
    # keys and theirs, SHAs of the rules that name a subject and the blocks of those subjects' vectors
    _Pending = tuple[list[str], list[Any], list[str], list[Any], list[str], list[Any]]

__all__ = ["CREATED", "FILES_RULE", "GROUP", "ID", "OK", "SEQ", "SHA", "SIG", "TOKS", "embed", "ensure_vectors",
           "load_state", "rebuild", "refresh"]

MEMORY_PREFIX = f"{docs.MEMORIES_DIR}/"
_MAX_SEGMENTS = 12
#: memories given to one `embed_with_spans` call with their sentences or chunks; paces the progress bar
_EMBED_CHUNK = 64
#: How much of a memory's own vector is taken out of its sentences' vectors (then normalised again). A sentence's
#: vector pools token outputs that read the whole memory, so it leans towards the memory's vector (cosine ~0.9 on a
#: LoCoMo turn) and the best-sentence signal would mostly repeat the memory's cosine. Taking half of it out, a
#: sentence's vector is nearest its own sentence read alone for 99.6% of the sentences of 300 LoCoMo turns (90%
#: without); LoCoMo dev hybrid R@10 0.796 (none), 0.799 (0.3), 0.803 (0.5), 0.793 (0.8) (docs/embeddings.md,
#: "Sentence and chunk vectors from the memory's own pass").
SENTENCE_CONTRAST = 0.5
#: memories per vector shard written (fewer shards, fewer merges)
_SHARD = 512

# A state entry is a list (cheap to load for 100k files), its fields in the order of the module's docstring
SHA, GROUP, CREATED, SIG, OK, ID, SEQ, TOKS = range(8)
#: the version of the rule of :func:`~gitmem.store.document.memory_file` and :func:`~gitmem.store.document.
#: named_by_id` that a state was recorded under (its ``files_rule``); a state of another version drops, at its next
#: update, the entries the rule now leaves out. Raise it whenever either function changes.
FILES_RULE = 1


def _entry(sha: str, group: str = "", created: int = 0, ok: bool = True, id: str = "") -> Entry:
    return [sha, group, created, "", ok, id, 0, ""]


def _natural(value: str) -> tuple[Any, ...]:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", value))


def _lock(ix: Index, timeout: float) -> contextlib.AbstractContextManager[None]:
    """One writer at a time across processes (``flock``: nothing to import, released if the process dies)."""
    root = ix.root
    root.mkdir(parents=True, exist_ok=True)  # under the user's cache, its parents may not exist yet
    return file_lock(root / "search.lock", timeout=timeout)


def refresh(ix: Index, head: str, wait: float | None, started: float) -> RefreshStats:
    """:meth:`Index.refresh` once the index was found behind ``head`` or unreadable: update it under the lock
    (rebuild it when it cannot be opened), or read it as it is (``stale``) when another process holds the lock
    longer than ``wait``."""
    from gitmem.search.index import RefreshStats

    exists = os.path.isfile(os.path.join(ix._tantivy_dir, "meta.json"))
    try:
        with _lock(ix, ix.lock_wait if wait is None else wait) if exists else _lock(ix, max(30.0, wait or 0)):
            stats = RefreshStats() if ix._is_current(head) and _readable(ix) else _update(ix, head, rebuild=False)
    except LockTimeout:
        if not exists:
            raise SearchError("the search index is locked by another process and does not exist yet",
                              "wait for the other gitmem process to finish and try again") from None
        ix.stale = True
        ix._notice("the search index is being updated by another gitmem process; "
                   "these results come from the index as it was")
        stats = RefreshStats()
    except OSError as exc:  # a read-only or full file system: search what is there, if anything is
        if not exists:
            raise
        ix.stale = True
        ix._notice(f"the search index cannot be updated ({exc.strerror or exc}); "
                   "these results come from the index as it was")
        stats = RefreshStats()
    ix._open()  # a broken index not rebuilt (stale) says so here, a SearchError, before the reload's guard
    with contextlib.suppress(ValueError):
        ix._reload()
    ix._seen = head if not ix.stale else ""
    stats.seconds = time.perf_counter() - started
    return stats


def _readable(ix: Index) -> bool:
    """Whether the index the marker calls current opens: :meth:`Index.refresh` comes here too when it cannot read
    it, and :func:`_update` then rebuilds it, as it builds a missing one."""
    try:
        ix._open()
    except SearchError:
        return False
    return True


def rebuild(ix: Index, *, vectors: bool, progress: Progress | None, total: Progress | None) -> RefreshStats:
    """:meth:`Index.rebuild`."""
    started = time.perf_counter()
    head = ix._current_head()
    with _lock(ix, 60.0):
        ix._index = ix._snap = None
        shutil.rmtree(ix._tantivy_dir, ignore_errors=True)
        Path(ix._head_file).unlink(missing_ok=True)
        Path(ix._state_file).unlink(missing_ok=True)
        stats = _update(ix, head, rebuild=True)
    stats.rebuilt = True
    if vectors and ix.embedder is not None:
        embed_started = time.perf_counter()
        stats.embedded = ensure_vectors(ix, head, progress=progress or ix.progress, total=total)
        stats.embed_seconds = time.perf_counter() - embed_started
    stats.seconds = time.perf_counter() - started
    return stats


def embed(ix: Index, *, progress: Progress | None, total: Progress | None) -> int:
    """:meth:`Index.embed`."""
    ix.refresh()
    if ix.embedder is None or ix.stale:
        return 0
    return ensure_vectors(ix, ix._current_head(), progress=progress or ix.progress, total=total)


def load_state(ix: Index) -> tuple[dict[str, Entry], str] | None:
    """The recorded state and the commit it describes (marshal: ten times faster to write than JSON at 10k
    files; it is a cache, so a file from another Python version or a damaged one just means a rebuild)."""
    data = _state_data(ix)
    return None if data is None else (data["files"], str(data.get("head") or ""))


def _state_data(ix: Index) -> dict[str, Any] | None:
    """The whole recorded state (:func:`load_state`), or None when there is none of this layout."""
    try:
        with open(ix._state_file, "rb") as f:
            data = marshal.loads(f.read())
        if not isinstance(data, dict) or data.get("format") != idoc.FORMAT or \
                data.get("window") != ix.tuning.context_window or not isinstance(data["files"], dict):
            return None
        return data
    except (OSError, ValueError, TypeError, KeyError, EOFError):
        return None


def _read(ix: Index, path: str, sha: str) -> Memory | DocumentError:
    raw: bytes | None = None
    with contextlib.suppress(OSError):
        raw = (Path(ix.repo.path) / path).read_bytes()
    if raw is None or idoc.git_blob_sha(raw) != sha:  # uncommitted edit in the work tree: index what is committed
        raw = ix.repo.git.read_head_file(path)
    if raw is None:
        return DocumentError(f"{path}: missing from HEAD")
    try:
        return docs.loads(raw.decode("utf-8"), path)
    except UnicodeDecodeError:
        return DocumentError(f"{path}: not UTF-8 text")
    except DocumentError as exc:
        return exc


def _open_for_write(ix: Index) -> Any | None:
    """The tantivy index on disk, or None when there is none or it cannot be opened (a damaged file: a truncated
    segment, a ``meta.json`` that is not JSON). The caller then builds it whole (:func:`_create`): the state
    describes the documents of the index that was there, so an update that trusted it would write back only the
    files that changed and leave every other memory out of search."""
    if not os.path.isfile(os.path.join(ix._tantivy_dir, "meta.json")):
        return None  # tantivy would make an empty one here, which the state does not describe either
    try:
        index = tantivy.Index(ix._schema, path=ix._tantivy_dir, reuse=True)
    except ValueError:
        return None
    return _writable(ix, index)


def _create(ix: Index) -> Any:
    """An empty tantivy index in place of whatever was there."""
    path = Path(ix._tantivy_dir)
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True, exist_ok=True)
    try:
        index = tantivy.Index(ix._schema, path=str(path), reuse=False)
    except ValueError as exc:  # a folder it cannot write, or the damaged files it could not remove
        raise SearchError(f"cannot rebuild the search index in {path}: {' '.join(str(exc).split())[:200]}",
                          "check that this folder can be written, then run gitmem reindex") from None
    return _writable(ix, index)


def _writable(ix: Index, index: Any) -> Any:
    """``index`` with gitmem's analyzer (its schema names it), as ``ix``'s index from now on."""
    index.register_tokenizer(analysis.TOKENIZER, ix._analyzer)
    ix._index = index
    return index


def _update(ix: Index, head: str, *, rebuild: bool) -> RefreshStats:
    """Re-index what changed between the recorded state and ``head`` (caller holds the lock)."""
    from gitmem.search.index import RefreshStats

    stats = RefreshStats()
    data = None if rebuild else _state_data(ix)
    index = None if data is None else _open_for_write(ix)
    if data is None or index is None:  # no state of this layout, or no index it describes: all from the files
        data = {"files": {}, "head": "", "files_rule": FILES_RULE}
        ix._index = ix._snap = None
        # an interrupted rebuild must not leave an empty index that the marker calls current
        Path(ix._head_file).unlink(missing_ok=True)
        Path(ix._state_file).unlink(missing_ok=True)
        index = _create(ix)
        stats.rebuilt = True
    state: dict[str, Entry] = data["files"]
    since = str(data.get("head") or "")
    # an index recorded under an earlier rule of which files are memories may hold others: they go now, whether
    # their files changed or not
    outlawed = [] if data.get("files_rule") == FILES_RULE else \
        [p for p, e in state.items() if not docs.memory_file(p) or (e[OK] and not docs.named_by_id(p, e[ID]))]
    git = ix.repo.git
    # Compare the trees of the indexed commit and HEAD (only folders whose SHA moved); walk every file
    # only on a first build or when that commit is gone.
    diff = git.tree_changes(since, MEMORY_PREFIX) if state and since else None
    if diff is None:
        tree = {p: s for p, s in git.tree_files(MEMORY_PREFIX).items() if docs.memory_file(p)}
        removed = [p for p in state if p not in tree]
    else:
        tree = {p: s for p, s in diff.items() if s is not None and docs.memory_file(p)}
        removed = [p for p, s in diff.items() if s is None and p in state]
    removed += [p for p in outlawed if p not in removed]
    changed = [p for p, s in tree.items() if p not in state or state[p][SHA] != s]
    loaded: dict[str, Memory] = {}
    affected = {state[p][GROUP] for p in removed + changed if p in state}
    entries = state
    for path in removed:
        del entries[path]
    for path in changed:
        item = _read(ix, path, tree[path])
        if not isinstance(item, DocumentError) and not docs.named_by_id(path, item.id):
            item = DocumentError(f"{path}: its id '{item.id}' names the file {item.path}, so gitmem cannot open "
                                 "this one by its id and search leaves it out (rename it to that with git mv)")
        if isinstance(item, DocumentError):
            entries[path] = _entry(tree[path], ok=False)
            stats.unreadable.append(item.message)
            continue
        loaded[path] = item
        entries[path] = _entry(tree[path], idoc.group(item), int(item.created.timestamp()), True, item.id)
        affected.add(entries[path][GROUP])
    affected.discard("")
    plan = _plan(entries, affected, set(changed), ix.tuning.context_window)

    def memory(path: str) -> Memory | None:
        if path not in loaded:
            item = _read(ix, path, entries[path][SHA])
            if isinstance(item, DocumentError):
                return None
            loaded[path] = item
        return loaded[path]

    writer = _writer(ix, index)
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
            entry[TOKS] = " ".join(sorted(set(ix._analyzer.analyze(analysis.normalise(idoc.body(mem))))))
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
    ix.warnings = stats.unreadable
    state_data = {"format": idoc.FORMAT, "window": ix.tuning.context_window, "head": head, "files": entries,
                  "files_rule": FILES_RULE}
    atomic_write(Path(ix._state_file), marshal.dumps(state_data))
    atomic_write(Path(ix._head_file), f"{ix._format} {head}".encode())
    ix._reload()
    return stats


def _plan(entries: dict[str, Entry], groups: set[str], changed: set[str],
          window: int) -> dict[str, tuple[int, list[str]]]:
    """Which files to (re)index, each with its position in its source group and its neighbours' paths (the
    ``window`` before and after it).

    A file is re-indexed when its blob changed or when the neighbours its context field holds changed."""
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


def _writer(ix: Index, index: Any) -> Any:
    deadline = time.monotonic() + max(ix.lock_wait, 5.0)
    while True:
        try:
            return index.writer(heap_size=32_000_000, num_threads=1)
        except ValueError as exc:  # LockBusy: a writer outside gitmem's lock (another tool, a stale process)
            if "lock" not in str(exc).lower() or time.monotonic() > deadline:
                raise SearchError(f"cannot write the search index: {exc}",
                                  "close other gitmem processes, or run gitmem reindex") from None
            time.sleep(0.05)


# -- embeddings ------------------------------------------------------------------------------------------

def ensure_vectors(ix: Index, head: str, progress: Progress | None = None, total: Progress | None = None) -> int:
    """Embed every indexed memory whose blob SHA has no vector yet; returns how many were embedded."""
    from gitmem.search.semantic import store
    from gitmem.search.vectors import drop_replaced

    embedder = ix.embedder
    if embedder is None:
        return 0
    scripts = getattr(embedder, "scripts", ())
    vectors = store(ix, embedder.model_id)
    sentences = store(ix, embedder.model_id, "sentences")
    conditions = store(ix, embedder.model_id, "conditions")
    with contextlib.suppress(OSError):
        if vectors.complete.read_text("utf-8") == head:
            return 0
    lock = contextlib.ExitStack()
    try:
        lock.enter_context(_lock(ix, ix.lock_wait))
    except LockTimeout:
        ix._notice("another gitmem process is computing embeddings; some memories are searched by BM25 only")
        return 0
    try:
        with contextlib.suppress(OSError):
            if vectors.complete.read_text("utf-8") == head:
                return 0
        live, missing = missing_vectors(ix, vectors)
        if total is not None:
            total(len(missing))
        done = 0
        complete = True
        if missing:
            ix._reload()  # another Index object of this process may have just added them
            searcher = ix._snapshot().searcher
            pending: _Pending = ([], [], [], [], [], [])
            import numpy as np

            from gitmem.embeddings.runtime import embed_with_spans, readable
            from gitmem.search.rerank import condition_match

            # a model without a floor for subjects never compares them: nothing to embed
            subjects_used = condition_match(embedder.model_id) is not None
            for start in range(0, len(missing), _EMBED_CHUNK):
                chunk = missing[start:start + _EMBED_CHUNK]
                texts = _texts_for(ix, searcher, chunk)
                shas = [s for s in chunk if s in texts]
                complete = complete and len(shas) == len(chunk)
                if shas:
                    # a memory in a script the model does not cover is embedded by its words in the model's
                    # scripts, if any, else kept as a zero vector: BM25 alone finds it, and the zero row marks
                    # it as such for the ranking (``semantic.load_vectors``)
                    read = {s: readable(scripts, texts[s][0]) for s in shas}
                    seen = [s for s in shas if read[s]]
                    # its sentences' or chunks' vectors come from the memory's own model pass (their spans'
                    # token outputs), so only a memory the model reads whole has them
                    said = [texts[s][1] if read[s] == texts[s][0] else [] for s in seen]
                    vecs, part_vecs = embed_with_spans(embedder, [read[s] for s in seen],
                                                       [[span for _k, span in parts] for parts in said])
                    part_vecs = _contrast(part_vecs, vecs, said)
                    rows = dict(zip(seen, vecs, strict=True))
                    zero = np.zeros(embedder.dim, dtype=np.float32)
                    pending[0].extend(shas)
                    pending[1].append(np.stack([rows.get(s, zero) for s in shas]))
                    pending[2].extend(k for parts in said for k, _span in parts)
                    pending[3].append(part_vecs)
                    # a rule's subject ("when I ask about scheduling") is embedded alone: read inside the rule, its
                    # words lean toward what the rule says to do (docs/search.md, "Rules that name their subject")
                    ruled = [s for s in seen if texts[s][2] and readable(scripts, texts[s][2]) == texts[s][2]] \
                        if subjects_used else []
                    if ruled:
                        pending[4].extend(ruled)
                        pending[5].append(embedder.embed_documents([texts[s][2] for s in ruled]))
                done += len(shas)
                if pending[0] and (len(pending[0]) >= _SHARD or start + _EMBED_CHUNK >= len(missing)):
                    _write_vectors(vectors, sentences, conditions, pending)
                    pending = ([], [], [], [], [], [])
                if progress:
                    progress(len(chunk))
        vectors.compact(live)
        sentences.compact(live)
        conditions.compact(live)
        if complete:
            atomic_write(vectors.complete, head.encode())
            drop_replaced(vectors.root.parent, vectors.root.name, getattr(embedder, "replaces", ()))
        ix._vectors = ix._sentences = ix._conditions = None
        return done
    finally:
        lock.close()


def missing_vectors(ix: Index, store: VectorStore) -> tuple[set[str], list[str]]:
    """(blob SHAs of the indexed memories, those of them ``store`` has no vector for)."""
    loaded = load_state(ix)
    live = {e[SHA] for e in loaded[0].values() if e[OK]} if loaded else set()
    return live, sorted(live - store.shas())


def _contrast(parts: Any, own: Any, said: list[list[tuple[str, Span]]]) -> Any:
    """The sentence vectors of short memories with :data:`SENTENCE_CONTRAST` of their memory's vector taken out,
    normalised again (chunk vectors as they are)."""
    import numpy as np

    owners = np.array([j for j, mine in enumerate(said) for _k, _s in mine], dtype=np.int64)
    sentences = np.array(["#c" not in k for mine in said for k, _s in mine], dtype=bool)
    if not sentences.any() or not SENTENCE_CONTRAST:
        return parts
    out = parts.copy()
    moved = parts[sentences] - SENTENCE_CONTRAST * own[owners[sentences]]
    out[sentences] = moved / np.maximum(np.linalg.norm(moved, axis=1, keepdims=True), 1e-12)
    return out


def _texts_for(ix: Index, searcher: Any, shas: list[str]) -> dict[str, tuple[str, list[tuple[str, Span]], str]]:
    """What to embed for each blob: the memory's :func:`~gitmem.search.schema.embedding_text`, the character
    spans of its parts in that text with their cache keys (the chunks of a long memory, ``<sha>#c<n>``, else its
    sentences if several, ``<sha>#<n>``), and the subject a standing rule names (:func:`~gitmem.search.standing.
    condition`) or ""."""
    from gitmem.search import rerank
    from gitmem.search.chunks import labelled_chunks, locate

    query = tantivy.Query.boolean_query([
        (tantivy.Occur.Must, tantivy.Query.term_set_query(ix._schema, "sha", shas)),
        (tantivy.Occur.Must, tantivy.Query.term_query(ix._schema, "part", 0))])
    texts: dict[str, tuple[str, list[tuple[str, Span]], str]] = {}
    for _score, addr in searcher.search(query, limit=max(1, len(shas))).hits:
        doc = searcher.doc(addr)
        memory = idoc.memory_from_json(doc["doc"][0])
        sha = doc["sha"][0]
        text, layout = idoc.embedding_layout(memory)
        body = idoc.body(memory)
        chunks = [chunk for _heading, chunk in labelled_chunks(body)]
        if chunks:
            keys = [f"{sha}#c{n}" for n in range(len(chunks))]
        else:
            chunks = rerank.sentences(memory.text)
            keys = [f"{sha}#{n}" for n in range(len(chunks))]
        parts = [(key, tuple((_embedded(a, layout), _embedded(b, layout)) for a, b in found))
                 for key, found in zip(keys, locate(body, chunks), strict=True) if found is not None]
        texts[sha] = (text, parts, idoc.subject(doc))
    return texts


def _embedded(pos: int, layout: list[tuple[int, int, int]]) -> int:
    """A character position of a memory's body in its embedding text (``layout``: :func:`~gitmem.search.schema.
    embedding_layout`)."""
    for body_at, text_at, length in layout:
        if pos <= body_at + length:
            return text_at + max(0, pos - body_at)
    body_at, text_at, length = layout[-1]
    return text_at + length


def _write_vectors(store: VectorStore, sentences: VectorStore, conditions: VectorStore, pending: _Pending) -> None:
    import numpy as np

    shas, blocks, keys, parts, ruled, subjects = pending
    # the parts first: a memory with a vector is never embedded again
    if keys:
        sentences.add(keys, np.concatenate(parts))
    if ruled:
        conditions.add(ruled, np.concatenate(subjects))
    store.add(shas, np.concatenate(blocks))
