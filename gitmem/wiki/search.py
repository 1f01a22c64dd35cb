"""Search over a folder of Markdown documents (wiki pages, writer notes): keywords with no model needed, and meaning
too once the pages have vectors.

Each folder gets a small tantivy index in ``.cache/<name>/`` (derived, rebuildable at any time), analysed with the
search index's CJK-aware analyzer (:mod:`gitmem.search.scoring`: one token per Han/kana character, CJK pairs searched as
phrases, English words stemmed), so an English and a Chinese query find pages in either language. A long page is
also cut with the memories' chunker (:mod:`gitmem.search.chunks`: sections, then sentences with overlap), one
document per chunk beside the page's own: a page is scored by its best document, one hit per page, and the snippet
comes from its best chunk, named by the chunk's section heading (``docs/search.md``, "Wiki pages and writer
notes"). A query first compares the folder's file names, sizes and mtimes with what the index holds (one ``stat``
a file) and re-indexes only what changed, under a lock so parallel processes do not write it twice. The opened
index stays in the process, so a repeated query costs a few milliseconds (``bench/wiki.py``).

With an embedding model, the pages and their chunks also get vectors (:mod:`gitmem.search.pagevectors`, cached in
``.cache/<name>/vectors/``), computed by :meth:`PageIndex.embed` (``gitmem reindex``, the background warm-up) and
never by a search, which embeds only its query: a page is then ranked by its BM25 score fused with the cosine of
its nearest row (its own or a chunk's), and the snippet comes from its chunk with the best fused score. A page
without a vector (not embedded yet, or in a script the model cannot read) is ranked by BM25 alone.

This module keeps the index fresh, embeds its pages and runs a query; what a file's documents hold is
:mod:`gitmem.wiki.documents`, and how the matching documents become one hit per page is :mod:`gitmem.wiki.hits`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitmem.errors import SearchError
from gitmem.files.atomic import atomic_write, settled
from gitmem.files.locks import LockTimeout, file_lock
from gitmem.files.places import CACHE
from gitmem.wiki.documents import build_schema, page_analyzer, page_documents, page_id, page_parts
from gitmem.wiki.hits import CANDIDATES, Best, Chunks, best_per_page, fused, shown

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gitmem.embeddings.runtime import Embedder
    from gitmem.search.pagevectors import Page

FORMAT = 4  # 2: one document per chunk of a long page beside the page's own; 3: each file's vector key in the state;
# 4: traditional Chinese characters indexed in their simplified forms
#: the share of a page's fused score that comes from its cosine (``scoring.fuse``, convex), chosen on the development
#: parts of ``bench/wiki_longdoc.py`` (docs/search.md, "Wiki pages and writer notes")
VECTOR_WEIGHT = 0.4
_OPEN: dict[str, tuple[Any, Any]] = {}  # cache dir -> (tantivy index, schema), kept for the process's life
_STAMPS: dict[str, str] = {}  # cache dir -> the stamp it was last found fresh at, in this process


def layout() -> str:
    """The index's format as its state and freshness stamp record it: :data:`FORMAT`, then the recipe of the vector
    keys its state holds (:data:`gitmem.search.pagevectors.RECIPE`): when either changes, the index is rebuilt once
    and every page gets a key of the new recipe, so rows of the old one are never read."""
    from gitmem.search import pagevectors

    return f"{FORMAT}.{pagevectors.RECIPE}"


def _read(path: Path) -> str:
    try:
        return path.read_text("utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


@dataclass(frozen=True)
class Doc:
    """What the index keeps of one file: its key (repository-relative path), the name shown, and the text."""

    key: str
    name: str
    title: str
    body: str
    category: str = ""
    tags: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SearchHit:
    """A matching document with its BM25 score and a snippet around the matched words: for a long page, cut from
    its best chunk, whose section heading is ``section`` ("" before the first heading or for a short page) and
    whose number is ``chunk`` (1, 2, … in the page's order; 0: the page as a whole, for a short page or a match
    on the title or tags alone)."""

    key: str
    name: str
    title: str
    score: float
    snippet: str
    category: str = ""
    tags: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    section: str = ""
    chunk: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"page": self.name, "title": self.title, "score": round(self.score, 4), "snippet": self.snippet,
                "section": self.section, "chunk": self.chunk, "category": self.category, "tags": list(self.tags),
                "path": self.key, **self.extra}


class PageIndex:
    """The keyword index of the ``*.md`` files under ``repo/folder`` (``recursive`` for nested folders).

    ``reader(path, key)`` turns a file into a :class:`Doc` (None skips it: generated or unreadable files). The
    index lives in ``<cache_name>`` of ``derived``, the repository's derived folder
    (:attr:`gitmem.config.Config.derived_dir`; its ``.cache`` when not given)."""

    def __init__(self, repo_path: Path, folder: str, cache_name: str, reader: Callable[[Path, str], Doc | None],
                 *, recursive: bool = False, derived: str = "") -> None:
        self.repo_path = repo_path
        self.folder = repo_path / folder
        self.dir = Path(derived or repo_path / CACHE) / cache_name
        self.reader = reader
        self.recursive = recursive
        #: how long a refresh waits for another process that is updating the index
        self.lock_wait = 10.0

    # -- freshness -------------------------------------------------------------------------------------
    def _files(self) -> dict[str, tuple[int, int]]:
        found: dict[str, tuple[int, int]] = {}
        stack = [(str(self.folder), self.folder.relative_to(self.repo_path).as_posix())]
        while stack:
            where, rel = stack.pop()
            try:
                entries = list(os.scandir(where))
            except OSError:
                continue
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if self.recursive and not entry.name.startswith("."):
                        stack.append((entry.path, f"{rel}/{entry.name}"))
                elif entry.name.endswith(".md") and entry.is_file(follow_symlinks=False):
                    info = entry.stat()
                    found[f"{rel}/{entry.name}"] = (info.st_mtime_ns, info.st_size)
        return found

    def _stamp(self) -> str:
        """What moves when a page is added, removed or renamed (the folders' mtimes) or anything is committed or
        checked out (the git index's mtime): while it stays, the per-file check is skipped. An edit made in
        place and not committed is picked up at the next commit or the next file added or removed. It starts with
        the index's :func:`layout`, so an index of another layout is never taken for fresh."""
        parts: list[str] = [f"format:{layout()}"]
        folders = [self.folder]
        while folders:
            folder = folders.pop()
            try:
                info = folder.stat()
            except OSError:
                parts.append(f"{folder.name}:-")
                continue
            if not settled(info.st_mtime_ns, time.time_ns()):
                return ""  # changed a moment ago: a change within the same tick could hide, so look at every file
            parts.append(f"{folder.name}:{info.st_mtime_ns}")
            if self.recursive:
                folders += [Path(e.path) for e in os.scandir(folder) if e.is_dir() and not e.name.startswith(".")]
        try:
            parts.append(str((self.repo_path / ".git" / "index").stat().st_mtime_ns))
        except OSError:
            parts.append("-")
        return " ".join(parts)

    def _state(self) -> dict[str, Any]:
        try:
            data = json.loads((self.dir / "state.json").read_text("utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) and data.get("format") == layout() else {}

    def _stale(self, files: dict[str, tuple[int, int]], known: dict[str, Any]) -> tuple[list[str], list[str]]:
        changed = [k for k, (mtime, size) in files.items()
                   if not (isinstance(known.get(k), list) and known[k][:2] == [mtime, size]
                           and settled(mtime, known[k][2]))]
        removed = [k for k in known if k not in files]
        return changed, removed

    def _where(self) -> str:
        return f"the search index of {self.folder.relative_to(self.repo_path).as_posix()}/ in {self.dir / 'tantivy'}"

    def _open(self) -> tuple[Any, Any]:
        """The tantivy index as it is on disk (:meth:`refresh` builds it), opened once a process; raises
        :class:`SearchError` when it cannot be opened (a damaged file: a truncated segment, a ``meta.json`` that is
        not JSON), which :meth:`refresh` answers by rebuilding it from the page files."""
        import tantivy

        from gitmem.search import analysis

        cached = _OPEN.get(str(self.dir))
        if cached is not None:
            return cached
        schema = build_schema()
        try:
            index = tantivy.Index(schema, path=str(self.dir / "tantivy"), reuse=True)
        except ValueError as exc:
            raise SearchError(f"{self._where()} cannot be read: {' '.join(str(exc).split())[:200]}",
                              "try again: a query rebuilds it from the page files once no other process holds "
                              "its lock") from None
        index.register_tokenizer(analysis.TOKENIZER, page_analyzer())
        _OPEN[str(self.dir)] = (index, schema)
        return index, schema

    def _damage(self) -> SearchError | None:
        """Why the index on disk cannot be opened, None when it opens (or there is none yet)."""
        if not (self.dir / "tantivy" / "meta.json").is_file():
            return None  # tantivy would make an empty one there, which no state describes: :meth:`refresh` builds it
        try:
            self._open()
        except SearchError as exc:
            return exc
        return None

    def _create(self) -> Any:
        """An empty tantivy index in place of whatever was there (nothing, a damaged index, a file)."""
        import tantivy

        from gitmem.search import analysis

        _OPEN.pop(str(self.dir), None)
        path = self.dir / "tantivy"
        schema = build_schema()
        try:
            if path.is_symlink() or (path.exists() and not path.is_dir()):
                path.unlink()
            shutil.rmtree(path, ignore_errors=True)
            path.mkdir(parents=True, exist_ok=True)
            index = tantivy.Index(schema, path=str(path), reuse=False)
        except (OSError, ValueError) as exc:  # a folder it cannot write, or damaged files it could not remove
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else ' '.join(str(exc).split())[:200]
            raise SearchError(f"cannot rebuild {self._where()}: {reason}",
                              "check that this folder can be written, then try again") from None
        index.register_tokenizer(analysis.TOKENIZER, page_analyzer())
        _OPEN[str(self.dir)] = (index, schema)
        return index

    def refresh(self) -> int:
        """Bring the index up to the files on disk; returns how many files were (re)indexed. An index that cannot
        be opened is rebuilt whole from the files, as a missing one is: its state describes the documents of the
        index that was there, so an update that trusted it would write back only the files that changed and leave
        every other page out of search. When it cannot be rebuilt now, a :class:`SearchError` says so in one line."""
        key = str(self.dir)
        stamp = self._stamp()
        damage = self._damage()
        ready = damage is None and (self.dir / "tantivy" / "meta.json").is_file()
        if stamp and ready and _STAMPS.get(key) == stamp:
            return 0
        if stamp and ready and _read(self.dir / "stamp") == stamp:
            _STAMPS[key] = stamp
            return 0
        files = self._files()
        known = self._state().get("files", {}) if ready else {}
        changed, removed = self._stale(files, known)
        if changed or removed or not ready:
            self.dir.mkdir(parents=True, exist_ok=True)
            try:
                with file_lock(self.dir / "lock", self.lock_wait):
                    state = self._state()
                    # another process may have rebuilt it while this one waited: look again
                    usable = (self.dir / "tantivy" / "meta.json").is_file() and self._damage() is None
                    fresh = not state or not usable
                    if not fresh:
                        index = self._open()[0]
                    else:  # no state of this layout, or no index it describes: all from the files
                        # an interrupted rebuild must leave no state or stamp that calls its index current
                        (self.dir / "state.json").unlink(missing_ok=True)
                        (self.dir / "stamp").unlink(missing_ok=True)
                        _STAMPS.pop(key, None)
                        index = self._create()
                    known = {} if fresh else state.get("files", {})
                    changed, removed = self._stale(files, known)
                    if changed or removed or fresh:
                        self._write(index, changed, removed, known, fresh)
                        atomic_write(self.dir / "state.json",
                                     json.dumps({"format": layout(), "files": known}).encode())
            except LockTimeout:
                if damage is not None:  # it cannot be read, and another process holds what would rebuild it
                    raise damage from None
                raise SearchError(f"another process is updating {self.dir}", "try the query again") from None
            index.reload()
        if stamp:
            atomic_write(self.dir / "stamp", stamp.encode())
            _STAMPS[key] = stamp
        return len(changed)

    def _write(self, index: Any, changed: list[str], removed: list[str], known: dict[str, Any], fresh: bool) -> None:
        from gitmem.search.pagevectors import digest, page_input

        writer = index.writer(heap_size=16_000_000, num_threads=1)
        try:
            for key in [*changed, *removed]:
                if not fresh:
                    writer.delete_documents_by_term("key", key)
                known.pop(key, None)
            for key in changed:
                path = self.repo_path / key
                try:
                    info = path.stat()
                except OSError:
                    continue
                seen = time.time_ns()
                doc = self.reader(path, key)
                known[key] = [info.st_mtime_ns, info.st_size, seen, ""]
                if doc is None:
                    continue
                parts = page_parts(doc)
                known[key][3] = digest(page_input(doc.title, parts))  # the key of its vectors
                for d in page_documents(key, doc, parts):
                    writer.add_document(d)
            writer.commit()
            writer.wait_merging_threads()
        except BaseException:
            with contextlib.suppress(Exception):
                writer.rollback()
            raise

    # -- vectors ---------------------------------------------------------------------------------------
    def has_vectors(self) -> bool:
        """Whether any model has vectors for these pages (a search loads no model when none has)."""
        from gitmem.search.pagevectors import PageVectors

        return PageVectors.exist(self.dir / "vectors")

    def model(self, repo: Any) -> Embedder | None:
        """The model to search these pages with: the one ``repo``'s configuration names, loaded as its memory
        search loads it (once per repository object), when any page has vectors; else None, and no model is
        loaded: the pages are searched by BM25 alone (also when the model is missing or unusable)."""
        if not self.has_vectors():
            return None
        if callable(getattr(repo, "index", None)):
            return repo.index().embedder  # type: ignore[no-any-return]
        from gitmem.search.index import open_index

        return open_index(repo).embedder

    def embed(self, embedder: Embedder, progress: Callable[[int], object] | None = None,
              total: Callable[[int], object] | None = None) -> tuple[int, int]:
        """Bring the index up to the files, embed each page that has no vector for ``embedder`` yet (the page and
        its chunks, from one model pass over the page) and drop the vectors of pages no file holds any more;
        returns (pages embedded, vectors computed: pages and chunks). ``total`` hears how many pages are to embed,
        ``progress`` each batch done. (0, 0) when another process is embedding these pages."""
        from gitmem.search.pagevectors import PageVectors, digest, page_input

        self.refresh()
        vectors = PageVectors(self.dir / "vectors", embedder.model_id)
        try:
            with file_lock(self.dir / "vectors.lock", 0.5):
                files: dict[str, list[Any]] = self._state().get("files", {})
                live = {entry[3] for entry in files.values() if entry[3]}
                missing = vectors.missing(live)
                pages: dict[str, Page] = {}
                for key, entry in files.items():
                    if entry[3] in missing and entry[3] not in pages:
                        doc = self.reader(self.repo_path / key, key)
                        page = page_input(doc.title, page_parts(doc)) if doc is not None else None
                        if page is not None and digest(page) == entry[3]:  # else changed since: embed it later
                            pages[entry[3]] = page
                if total:
                    total(len(pages))
                read = vectors.embed(embedder, pages, live, progress)
        except LockTimeout:
            return 0, 0
        return len(pages), read

    def _nearest(self, embedder: Embedder, query: str) -> dict[int, tuple[str, dict[int, float]]]:
        """page → (its key, the query's cosine with each of its rows: 0 the page's own, n its chunk n) for the
        pages that have vectors for ``embedder``."""
        from gitmem.search.pagevectors import PageVectors

        files: dict[str, list[Any]] = self._state().get("files", {})
        keys = {entry[3]: key for key, entry in files.items() if entry[3]}
        near = PageVectors(self.dir / "vectors", embedder.model_id).nearest(embedder, query, keys)
        return {page_id(keys[page]): (keys[page], rows) for page, rows in near.items()}

    # -- querying --------------------------------------------------------------------------------------
    def search(self, query: str, *, k: int = 10, category: str | None = None, tags: tuple[str, ...] = (),
               embedder: Embedder | None = None) -> list[SearchHit]:
        """The ``k`` best documents for ``query`` (words in any order, English or Chinese), filtered by
        ``category`` and ``tags``; an empty list for a query with no searchable word. With ``embedder``, the
        pages that have vectors for it are ranked by BM25 and cosine fused; only the query is embedded. Only pages
        related to the query: a BM25 match, or a cosine at the model's search floor
        (:data:`~gitmem.search.relevance.SEARCH_COSINE_MIN`), so a query nothing is about finds nothing."""
        import tantivy

        from gitmem.search import analysis
        from gitmem.search import scoring as ranking

        self.refresh()
        index, schema = self._open()
        analyzer = page_analyzer()
        terms = analysis.analyze_query(query, analyzer)
        near = self._nearest(embedder, query) if embedder is not None and query.strip() else {}
        if terms.empty and not near:
            return []
        tuning = ranking.Tuning(boost_name=3.0, boost_description=0.0, boost_ctx=0.0, boost_tags=2.0,
                                fusion="convex", vector_weight=VECTOR_WEIGHT)
        Q = tantivy.Query
        filters = []
        if category:
            filters.append((tantivy.Occur.Must, Q.const_score_query(Q.term_query(schema, "category", category), 0.0)))
        for tag in tags:
            filters.append((tantivy.Occur.Must, Q.const_score_query(
                Q.term_query(schema, "tag", " ".join(tag.split()).lower()), 0.0)))
        searcher = index.searcher()
        best: Best = {}
        chunk: Chunks = {}
        if not terms.empty:
            matched = Q.boolean_query([(tantivy.Occur.Must, ranking.text_query(schema, terms, tuning)), *filters])
            best, chunk = best_per_page(searcher, matched, max(k, CANDIDATES) if near else max(1, k))
        if near and embedder is not None:
            # a page that shares no word with the query is shown only when the model finds it near enough: the
            # fusion scales the best candidate to 1, so the nearest of unrelated pages would look like a match
            from gitmem.search.relevance import related

            kept = related({page: max(rows.values(), default=0.0) for page, (_key, rows) in near.items()}, best,
                           embedder.model_id)
            near = {page: found for page, found in near.items() if page in kept}
        highlight = terms.highlight_terms()
        ranked = fused(searcher, schema, filters, best, chunk, near, tuning, k) if near else \
            {page: (*found, False) for page, found in best.items()}
        hits: list[SearchHit] = []
        for page, (score, addr, part, by_vector) in ranked.items():
            stored = searcher.doc(addr)
            name, title, body, cat, doc_tags, extra, section = json.loads(bytes(stored["doc"][0]))
            if by_vector:  # the chunk with the best fused score, which may share no word with the query
                snippet = ranking.snippet(body, highlight, analyzer)[0]
            else:
                texts = [(part, section, body)]
                if not part and page in chunk:  # the page as a whole scored higher: show its best chunk if it can
                    number, (_score, at) = next(iter(chunk[page].items()))
                    winner = json.loads(bytes(searcher.doc(at)["doc"][0]))
                    texts.insert(0, (number, winner[6], winner[2]))
                part, section, snippet = shown(texts, title, highlight, analyzer)
            hits.append(SearchHit(str(stored["key"][0]), name, title, float(score),
                                  f"{section} — {snippet}" if section else snippet, cat, tuple(doc_tags), extra,
                                  section, part))
        return hits
