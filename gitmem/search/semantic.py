"""The embedding model's side of a search: loading the model a repository names, its vector cache, the memories
nearest a question by cosine, and the second stage's signals.

:class:`gitmem.search.index.Index` imports this module only when a model takes part in a search (numpy, the model
runtime and the cache files come with it; numpy is imported inside the functions that use it, as everywhere in
:mod:`gitmem.search`); a BM25 search never loads it.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from gitmem.errors import GitmemError
from gitmem.search import analysis, rerank
from gitmem.search import schema as idoc
from gitmem.search.build import GROUP, OK, SEQ, SHA, TOKS, ensure_vectors, load_state, missing_vectors
from gitmem.search.neighbourhood import Neighbourhood
from gitmem.search.standing import GOVERNING
from gitmem.search.timeexpr import in_period
from gitmem.search.vectors import VectorStore, model_folder

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from gitmem.embeddings.runtime import Embedder
    from gitmem.search.analysis import QueryTerms
    from gitmem.search.index import Index
    from gitmem.search.snapshot import Key, Snapshot
    from gitmem.search.timeexpr import TimeRange

__all__ = ["beyond_empty", "governing", "load_embedder", "nearest", "signals", "store", "vector_dir", "vectors_ready"]


def load_embedder(ix: Index) -> Embedder | None:
    """The model ``ix.repo.config.embedding`` names; None (with a notice) when there is none or it is broken."""
    from gitmem.embeddings import runtime as embed

    cfg = ix.repo.config.embedding
    spec = embed.EmbedSpec(model=cfg.model or "auto", path=Path(cfg.path).expanduser() if cfg.path else None,
                           dim=cfg.dim or None,
                           models_dir=Path(cfg.models_dir).expanduser() if cfg.models_dir else None)
    try:
        loaded = embed.load_embedder(spec)
    except (embed.EmbeddingError, GitmemError, ImportError, OSError) as exc:
        ix._notice(f"embedding model unusable ({exc}); searching with BM25 only")
        return None
    if loaded is None and spec.model.lower() != "none":
        ix._notice("no embedding model available; searching with BM25 only "
                   "(install one with: gitmem model install)")
    return loaded


def vector_dir(ix: Index, model_id: str) -> Path:
    """The folder of a model's vector cache."""
    return ix.root / "vectors" / f"{model_folder(model_id)}.r{idoc.VECTOR_RECIPE}"


def store(ix: Index, model_id: str, part: str = "") -> VectorStore:
    """The vector cache of a model (``part="sentences"``: of its sentence and chunk vectors; ``"conditions"``: of
    the subjects its standing rules name)."""
    folder = vector_dir(ix, model_id)
    return VectorStore(folder / part if part else folder)


def vectors_ready(ix: Index, embedder: Embedder) -> None:
    """Embed what the index holds and the cache lacks, then remember in the snapshot when the vectors cover
    its commit: nothing changes them until the next reload, so later searches skip every file check."""
    if ix._snapshot().vectors == embedder.model_id:
        return
    head = ix._seen or ix._current_head()
    vectors = store(ix, embedder.model_id)
    if ix.embed_missing:
        ensure_vectors(ix, head, ix.progress)  # may reload: the snapshot to mark is the one after it
    with contextlib.suppress(OSError):
        if head and vectors.complete.read_text("utf-8") == head:
            load_vectors(ix, embedder)
            _load_sentences(ix, embedder)
            _load_conditions(ix, embedder)
            ix._snapshot().vectors = embedder.model_id
            ix.vectors_missing = 0
            return
    if not ix.embed_missing:
        ix.vectors_missing = len(missing_vectors(ix, vectors)[1])


def load_vectors(ix: Index, embedder: Embedder) -> tuple[list[str], Any, dict[int, int], list[int]]:
    """(row shas, matrix, sha64 → row, row → sha64) of the memory vectors, kept while the shards do not
    change."""
    if ix._vectors is not None and ix._snapshot().vectors == embedder.model_id:
        return ix._vectors[1:]  # loaded once the vectors covered this state: nothing changed since
    vectors = store(ix, embedder.model_id)
    marker = vectors.marker()
    if ix._vectors is None or ix._vectors[0] != marker:
        import numpy as np

        shas, matrix = vectors.load()
        row_sha64 = [idoc.sha64(sha) for sha in shas]
        ix._vectors = (marker, shas, matrix, {s: row for row, s in enumerate(row_sha64)}, row_sha64)
        ix._blind = frozenset() if matrix is None else frozenset(
            row_sha64[row] for row in np.flatnonzero(~matrix.any(axis=1)).tolist())
    return ix._vectors[1:]


def _load_sentences(ix: Index, embedder: Embedder) -> tuple[Any, Any, dict[int, int], Any, Any]:
    """(matrix with rows grouped by memory, start row of each memory's group, sha64 → group) of the
    sentence vectors, the sha64 of the memories whose group holds chunks (long memories) rather than
    sentences, and which groups those are (a mask over the groups); ``matrix`` is None when no memory has several
    sentences or chunks."""
    import numpy as np

    def grouped(keys: list[str], matrix: Any) -> tuple[Any, ...]:
        if matrix is None or not keys:
            return None, None, {}, np.zeros(0, np.uint64), np.zeros(0, bool)
        owners = np.array([idoc.sha64(k) for k in keys], dtype=np.uint64)
        order = np.argsort(owners, kind="stable")
        unique, starts = np.unique(owners[order], return_index=True)
        chunked = np.array(["#c" in k for k in keys])[order][starts]
        return matrix[order], starts, {int(u): i for i, u in enumerate(unique)}, unique[chunked], chunked

    ix._sentences = _cached(ix, embedder, "sentences", ix._sentences, grouped)
    return ix._sentences[1:]


def _load_conditions(ix: Index, embedder: Embedder) -> tuple[list[int], Any]:
    """(sha64 of each row, matrix) of the vectors of the subjects standing rules name, kept while the shards do not
    change; the matrix is None when no rule names one."""
    ix._conditions = _cached(ix, embedder, "conditions", ix._conditions,
                             lambda keys, matrix: ([idoc.sha64(k) for k in keys], matrix))
    return ix._conditions[1:]


def _cached(ix: Index, embedder: Embedder, part: str, held: tuple[Any, ...] | None,
            build: Callable[[list[str], Any], tuple[Any, ...]]) -> Any:
    """``held`` (a marker, then what ``build`` made of a cache part's keys and matrix) while it is current: as is
    once the vectors cover the snapshot's state (nothing changes them until the next reload), else as long as the
    part's shards have not changed; otherwise built again from the shards."""
    if held is not None and ix._snapshot().vectors == embedder.model_id:
        return held
    vectors = store(ix, embedder.model_id, part)
    marker = vectors.marker()
    if held is None or held[0] != marker:
        held = (marker, *build(*vectors.load()))
    return held


def _neighbourhood(ix: Index) -> Neighbourhood:
    """Neighbours and word sets of every indexed memory, from the state of the last refresh."""
    snap = ix._snapshot()
    if snap.hood is None:  # the state file changes only with a reload, which drops the snapshot
        marker = ix._marker()
        if ix._hood is None or ix._hood[0] != marker:
            loaded = load_state(ix)
            entries = loaded[0] if loaded else {}
            hashes = {g: idoc.grp_hash(g) for g in {e[GROUP] for e in entries.values()}}  # once per source
            rows = [(idoc.sha64(e[SHA]), hashes[e[GROUP]], e[SEQ], e[TOKS]) for e in entries.values() if e[OK]]
            ix._hood = (marker, Neighbourhood(rows, ix.tuning.context_window))
        snap.hood = ix._hood[1]
    hood: Neighbourhood = snap.hood
    return hood


def nearest(ix: Index, snap: Snapshot, embedder: Embedder, query: str, admitted: tuple[bool, frozenset[Key]],
            n: int) -> tuple[dict[Key, float], rerank.QueryVectors | None]:
    """The ``n`` memories nearest ``query`` among those the filters ``admitted`` (as from
    :meth:`Snapshot.admits`), with their cosines, and the query's vectors for the second stage."""
    import numpy as np

    shas, matrix, row_of, row_sha64 = load_vectors(ix, embedder)
    if matrix is None or not shas:
        return {}, None
    qv = embedder.embed_query(analysis.nfkc(query))
    sims = np.einsum("ij,j->i", matrix, qv)  # not matrix @ qv: OpenBLAS sgemv takes 8 ms at 10k x 384 here
    sentence_matrix, starts, sentence_of, chunked, chunk_groups = _load_sentences(ix, embedder)
    best = np.zeros(0, np.float32)
    if sentence_matrix is not None:
        best = rerank.best_part(np.einsum("ij,j->i", sentence_matrix, qv), starts, chunk_groups)
    if len(chunked):  # a long memory is as near as its nearest chunk, discounted (its own vector saw its start only)
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
    blind = ix._blind
    for row, sim in zip(rows.tolist(), sims[rows].tolist(), strict=True):
        if blind and row_sha64[row] in blind:
            continue
        for key in snap.addresses(row_sha64[row]):
            if (key in keys) != exclude:
                scored[key] = sim
                vectors.found[key] = row
        if len(scored) >= n:
            break
    return scored, vectors


def beyond_empty(embedder: Embedder, vectors: rerank.QueryVectors | None,
                 cosines: dict[Key, float]) -> dict[Key, float]:
    """``cosines`` (the memories :func:`nearest` found) as :func:`gitmem.search.relevance.beyond_empty` reads
    them, for the search floor: what a question and a memory share beyond what every near-empty text shares
    ("zzzqqq" and a memory that reads "x" are both near the empty text's vector). A memory :func:`nearest` did
    not find (a rule :func:`governing` added) keeps its cosine."""
    from gitmem.search.relevance import SEARCH_COSINE_MIN, floor
    from gitmem.search.relevance import beyond_empty as beyond

    if vectors is None or not vectors.found or floor(SEARCH_COSINE_MIN, embedder.model_id) is None:
        return cosines  # a model without a floor keeps every hit: no empty text to embed
    import numpy as np

    empty = _empty_vector(embedder)
    asked = float(np.dot(vectors.query, empty))
    rows = [vectors.found.get(key, -1) for key in cosines]
    near = np.einsum("ij,j->i", vectors.matrix[[max(r, 0) for r in rows]], empty).tolist() if rows else []
    return {key: beyond(cosine, asked, own) if row >= 0 else cosine
            for (key, cosine), row, own in zip(cosines.items(), rows, near, strict=True)}


_EMPTY: dict[str, Any] = {}


def _empty_vector(embedder: Embedder) -> Any:
    """The model's vector of the empty text (one model call, once per model in a process)."""
    found = _EMPTY.get(embedder.model_id)
    if found is None:
        found = _EMPTY[embedder.model_id] = embedder.embed_documents([""])[0]
    return found


def governing(ix: Index, snap: Snapshot, embedder: Embedder, vectors: rerank.QueryVectors,
              admitted: tuple[bool, frozenset[Key]]) -> dict[Key, float]:
    """The standing rules whose subject (:func:`gitmem.search.standing.condition`: "when I ask about *deadlines*")
    is near the question in meaning (:data:`gitmem.search.rerank.CONDITION_MATCH`), at most
    :data:`~gitmem.search.standing.GOVERNING`, the nearest first, among those the filters ``admitted``; each with
    its memory's own cosine."""
    import numpy as np

    floor = rerank.condition_match(embedder.model_id)
    if floor is None:
        return {}
    owners, matrix = _load_conditions(ix, embedder)
    if matrix is None:
        return {}
    sims = np.einsum("ij,j->i", matrix, vectors.query)
    rows = [row for row in np.argsort(-sims, kind="stable").tolist() if sims[row] >= floor]
    exclude, admitted_keys = admitted
    found: dict[Key, float] = {}
    for row in rows:
        code = owners[row]
        at = vectors.row_of.get(code)
        for key in snap.addresses(code):
            if (key in admitted_keys) != exclude and key not in found:
                found[key] = float(vectors.cosines[at]) if at is not None else float(sims[row])
        if len(found) >= GOVERNING:
            break
    return found


def signals(ix: Index, searcher: Any, keys: list[Key], columns: dict[str, list[Any]], fused: dict[Key, float],
            bm25: dict[Key, float], when: TimeRange | None, terms: QueryTerms,
            vectors: rerank.QueryVectors) -> dict[str, list[float]]:
    """The second stage's inputs for each candidate (:func:`gitmem.search.rerank.signals`)."""
    words = list(terms.words) + list(terms.chars)
    total = searcher.num_docs
    weights = rerank.idf({w: searcher.doc_freq("body", w) for w in words}, total)
    sha64 = [int(v or 0) for v in columns["sha64"]]
    created = columns.get("created")  # the ranking reads it whenever a period is named
    return rerank.signals(keys, sha64, fused, bm25, in_period(created, when, len(keys)), weights,
                          _neighbourhood(ix), vectors)

