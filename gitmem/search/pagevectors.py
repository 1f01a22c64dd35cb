"""The vectors of a folder of Markdown pages (the wiki's, the writer memory's): one row per page and one per chunk
of a long page, in a :class:`~gitmem.search.vectors.VectorStore` per model beside the folder's keyword index.

Rows are keyed by a hash of what the model reads of the page (:func:`digest` of :func:`page_texts`): the page's
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

from gitmem.search.vectors import VectorStore, model_folder

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from gitmem.embeddings.runtime import Embedder

__all__ = ["PageVectors", "digest", "page_texts"]

#: pages embedded in one model call (batched by length inside it); paces the progress bar
_EMBED_PAGES = 8
#: pages per shard written: an embedding pass cut short (the warm-up's deadline) keeps what it has done
_SHARD_PAGES = 64
#: changes whenever :func:`page_texts` reads a page differently: part of every key
_RECIPE = "1"
# folder of a model's cache -> (marker of its shards, page hash -> {row number: matrix row}, matrix), per process
_LOADED: dict[str, tuple[str, dict[str, dict[int, int]], Any]] = {}


def page_texts(title: str, parts: Sequence[tuple[str, str]]) -> list[str]:
    """What the model reads of a page, from its keyword index's parts ((section heading, text) of the page as a
    whole, then of each chunk): the page (title, then body; the model reads its start), then each chunk after
    the page's title and the chunk's section heading."""
    return ["\n".join(p for p in (title, section, text) if p) for section, text in parts]


def digest(texts: Sequence[str]) -> str:
    """The key of a page's rows: a hash of its :func:`page_texts`."""
    h = hashlib.blake2b(_RECIPE.encode(), digest_size=16)
    for text in texts:
        h.update(b"\0" + text.encode())
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
        return root.is_dir() and any(root.glob("*/*.json"))

    def missing(self, pages: Iterable[str]) -> set[str]:
        """The page hashes among ``pages`` that have no vector yet."""
        return set(pages) - self.store.shas()

    def embed(self, embedder: Embedder, pages: Mapping[str, Sequence[str]], live: set[str],
              progress: Callable[[int], object] | None = None) -> int:
        """Embed ``pages`` (page hash → :func:`page_texts`), then drop the rows of pages not in ``live``; returns
        how many texts (pages and chunks) the model read. The caller holds the folder's vector lock."""
        import numpy as np

        from gitmem.embeddings.runtime import covers

        scripts = getattr(embedder, "scripts", ())
        keys: list[str] = []
        blocks: list[Any] = []
        read = 0
        order = list(pages)
        for start in range(0, len(order), _EMBED_PAGES):
            batch = order[start:start + _EMBED_PAGES]
            rows = [(_row_key(page, part), text) for page in batch for part, text in enumerate(pages[page])]
            seen = [i for i, (_key, text) in enumerate(rows) if covers(scripts, text)]
            block = np.zeros((len(rows), embedder.dim), dtype=np.float32)  # unread texts: zero rows
            if seen:
                block[seen] = embedder.embed_documents([rows[i][1] for i in seen])
            read += len(seen)
            keys.extend(key for key, _text in rows)
            blocks.append(block)
            if (start + _EMBED_PAGES) % _SHARD_PAGES == 0 or start + _EMBED_PAGES >= len(order):
                self.store.add(keys, np.concatenate(blocks))
                keys, blocks = [], []
            if progress:
                progress(len(batch))
        self.store.compact(live, prune=True)
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
        from gitmem.search import scoring as ranking

        if not covers(getattr(embedder, "scripts", ()), query):
            return {}  # a query the model cannot read (Chinese for an English model): its cosines are noise
        groups, matrix = self._loaded()
        wanted = {page: groups[page] for page in pages if page in groups}
        if matrix is None or not wanted:
            return {}
        qv = embedder.embed_query(ranking.normalise(query))
        sims = np.einsum("ij,j->i", matrix, qv).tolist()  # not matrix @ qv: see semantic.nearest
        return {page: {part: sims[row] for part, row in rows.items()} for page, rows in wanted.items()}
