"""The vectors of a folder of Markdown pages (the wiki's, the writer memory's): one row per page and one per chunk
of a long page, in a :class:`~gitmem.search.vectors.VectorStore` per model beside the folder's keyword index.

The model reads a page once (:func:`page_input`: its title, then its body), a long page in windows of the model's
length sharing :data:`~gitmem.embeddings.runtime.WINDOW_OVERLAP` tokens: the page's row is its first window's
vector, as a memory's is, and each chunk's row is pooled from the outputs of the chunk's own tokens, which read
the text around them (:func:`~gitmem.embeddings.runtime.embed_with_spans`, as a long memory's chunks).

Rows are keyed by a hash of what the model reads of the page (:func:`digest` of :func:`page_input`): the page's
own row by the hash, its chunks' rows by ``<hash>#c<n>`` (``n`` = 1, 2, … as the keyword index numbers them). A
page whose text did not change keeps its key, so it is never embedded again, whichever file or folder it moves
to; a changed page gets a new key, and the rows no page holds any more are compacted away after each embedding
pass. A text the model cannot read (Chinese for the packaged English model, :func:`gitmem.embeddings.runtime.covers`)
is kept as a zero row: the page is then ranked by BM25 alone.

The vectors are computed by :meth:`PageVectors.embed` (``gitmem reindex`` and the background warm-up), never by a
search: a search only embeds its query (:meth:`PageVectors.nearest`). numpy is imported inside the functions that
need it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from gitmem.search.vectors import VectorStore, drop_replaced, model_folder

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from gitmem.embeddings.runtime import Embedder, Span

    #: what the model reads of a page, and the span of each of its chunks in it (chunk number, span)
    Page = tuple[str, list[tuple[int, Span]]]

__all__ = ["CHUNK_CONTRAST", "RECIPE", "PageVectors", "digest", "page_input"]

#: pages embedded in one model call (batched by length inside it); paces the progress bar
_EMBED_PAGES = 8
#: pages per shard written: an embedding pass cut short (the warm-up's deadline) keeps what it has done
_SHARD_PAGES = 64
#: changes whenever :func:`page_input` or the way its vectors are computed changes: part of every key, and of the
#: folder index's format (whose state records the keys), so rows of another recipe are never read
RECIPE = "2"
#: How much of the mean of a page's chunk vectors is taken out of each (then normalised again). A chunk's vector
#: pools token outputs that read the text around the chunk, so the chunks of a page lean towards one another and
#: towards what the whole page is about; taking half of their mean out leaves more of what sets each chunk apart.
#: Measured on longdoc/en dev (``bench/wiki_longdoc.py``, hybrid R@1 / snippet): 0 → 0.991 / 0.676, 0.3 → 0.992 /
#: 0.676, 0.5 → 0.994 / 0.677, 0.7 → 0.991 / 0.674; taking out half of the page's own vector instead: 0.989 /
#: 0.669 (docs/search.md, "One model pass a page").
CHUNK_CONTRAST = 0.5
# folder of a model's cache -> (marker of its shards, page hash -> {row number: matrix row}, matrix), per process
_LOADED: dict[str, tuple[str, dict[str, dict[int, int]], Any]] = {}


def page_input(title: str, parts: Sequence[tuple[str, str]]) -> Page:
    """What the model reads of a page, from its keyword index's parts ((section heading, text) of the page as a
    whole, then of each chunk): the page's title, then its body; and the span of each chunk in it, numbered as the
    keyword index numbers them (1, 2, …): the title's characters, the chunk's section heading's and the chunk's
    own (the title and heading say which page and section the chunk is in, as they did when a chunk was embedded
    as a text of its own)."""
    from gitmem.search.chunks import locate

    body = parts[0][1] if parts else ""
    text = f"{title}\n{body}" if title else body
    at = len(text) - len(body)
    labelled = [f"{section}\n{chunk}" if section else chunk for section, chunk in parts[1:]]
    found = locate(body, labelled)
    # a heading longer than a label (chunks.LABEL_WORDS) is not looked for: the chunk's own characters then
    alone = iter(locate(body, [parts[n][1] for n, span in enumerate(found, 1) if span is None]))
    lead = ((0, len(title)),) if title else ()
    spans: list[tuple[int, Span]] = []
    for n, span in enumerate(found, 1):
        span = span or next(alone)
        if span is not None:
            spans.append((n, lead + tuple((a + at, b + at) for a, b in span)))
    return text, spans


def digest(page: Page) -> str:
    """The key of a page's rows: a hash of its :func:`page_input` and the :data:`RECIPE`."""
    text, spans = page
    h = hashlib.blake2b(RECIPE.encode(), digest_size=16)
    h.update(b"\0" + text.encode())
    h.update(b"\0" + repr(spans).encode())
    return h.hexdigest()


def _row_key(page: str, part: int) -> str:
    return f"{page}#c{part}" if part else page


class PageVectors:
    """The vectors one model gave a folder's pages, under ``root`` (``<root>/<model>/``, shards of
    :class:`~gitmem.search.vectors.VectorStore`)."""

    def __init__(self, root: Path, model_id: str) -> None:
        self.store = VectorStore(root / model_folder(model_id))

    @staticmethod
    def exist(root: Path) -> bool:
        """Whether any model has vectors under ``root`` (a search loads no model when none has)."""
        # a hidden folder is a cache being deleted (``vectors.drop_replaced``), not vectors
        return root.is_dir() and any(not p.parent.name.startswith(".") for p in root.glob("*/*.json"))

    def missing(self, pages: Iterable[str]) -> set[str]:
        """The page hashes among ``pages`` that have no vector yet."""
        return set(pages) - self.store.shas()

    def embed(self, embedder: Embedder, pages: Mapping[str, Page], live: set[str],
              progress: Callable[[int], object] | None = None) -> int:
        """Embed ``pages`` (page hash → :func:`page_input`), then drop the rows of pages not in ``live``; returns
        how many rows (pages and chunks) the model gave a vector. The caller holds the folder's vector lock."""
        import numpy as np

        from gitmem.embeddings.runtime import covers, embed_with_spans

        scripts = getattr(embedder, "scripts", ())
        keys: list[str] = []
        blocks: list[Any] = []
        read = 0
        order = list(pages)
        for start in range(0, len(order), _EMBED_PAGES):
            batch = order[start:start + _EMBED_PAGES]
            rows: list[tuple[str, bool]] = []  # (key, whether the model reads its text) of each page, then chunk
            runs: list[tuple[str, int]] = []  # (page, its first row) of the pages the model reads any part of
            for page in batch:
                text, spans = pages[page]
                mine = [(page, covers(scripts, text))]
                mine += [(_row_key(page, n), covers(scripts, " ".join(text[a:b] for a, b in span)))
                         for n, span in spans]
                if any(seen for _key, seen in mine):
                    runs.append((page, len(rows)))
                rows += mine
            block = np.zeros((len(rows), embedder.dim), dtype=np.float32)  # unread texts: zero rows
            if runs:
                own, parts = embed_with_spans(embedder, [pages[page][0] for page, _at in runs],
                                              [[span for _n, span in pages[page][1]] for page, _at in runs])
                done = 0
                for i, (page, at) in enumerate(runs):
                    count = len(pages[page][1])
                    block[at] = own[i]
                    if count:
                        chunks = parts[done:done + count]
                        # the mean of the chunks the model reads: another script's chunk is a zero row below
                        seen = np.array([s for _key, s in rows[at + 1:at + 1 + count]])
                        mean = chunks[seen].mean(axis=0) if seen.any() else np.zeros(embedder.dim, np.float32)
                        moved = chunks - CHUNK_CONTRAST * mean
                        block[at + 1:at + 1 + count] = moved / np.maximum(
                            np.linalg.norm(moved, axis=1, keepdims=True), 1e-12)
                    done += count
                block[[i for i, (_key, seen) in enumerate(rows) if not seen]] = 0.0  # a chunk in another script
            read += sum(seen for _key, seen in rows)
            keys.extend(key for key, _seen in rows)
            blocks.append(block)
            if (start + _EMBED_PAGES) % _SHARD_PAGES == 0 or start + _EMBED_PAGES >= len(order):
                self.store.add(keys, np.concatenate(blocks))
                keys, blocks = [], []
            if progress:
                progress(len(batch))
        self.store.compact(live, prune=True)
        drop_replaced(self.store.root.parent, self.store.root.name, getattr(embedder, "replaces", ()))
        return read

    def _loaded(self) -> tuple[dict[str, dict[int, int]], Any]:
        marker = self.store.marker()
        cached = _LOADED.get(str(self.store.root))
        if cached is None or cached[0] != marker:
            import numpy as np

            keys, matrix = self.store.load()
            groups: dict[str, dict[int, int]] = {}
            unread = set(np.flatnonzero(~matrix.any(axis=1)).tolist()) if matrix is not None else set()
            for row, key in enumerate(keys):
                if row not in unread:
                    page, _sep, part = key.partition("#c")
                    groups.setdefault(page, {})[int(part or 0)] = row
            cached = _LOADED[str(self.store.root)] = (marker, groups, matrix)
        return cached[1], cached[2]

    def nearest(self, embedder: Embedder, query: str, pages: Iterable[str]) -> dict[str, dict[int, float]]:
        """For each of ``pages`` (page hashes) that has a vector, the query's cosine with each of its rows the
        model could read (0: the page's own, n: its chunk n); empty when the model cannot read the query."""
        import numpy as np

        from gitmem.embeddings.runtime import covers
        from gitmem.search import analysis

        if not covers(getattr(embedder, "scripts", ()), query):
            return {}  # a query the model cannot read (Chinese for an English model): its cosines are noise
        groups, matrix = self._loaded()
        wanted = {page: groups[page] for page in pages if page in groups}
        if matrix is None or not wanted:
            return {}
        qv = embedder.embed_query(analysis.nfkc(query))
        sims = np.einsum("ij,j->i", matrix, qv).tolist()  # not matrix @ qv: see semantic.nearest
        return {page: {part: sims[row] for part, row in rows.items()} for page, rows in wanted.items()}
