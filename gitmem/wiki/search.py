"""Deterministic keyword search over a folder of Markdown documents (wiki pages, writer notes): no model needed.

Each folder gets a small tantivy index in ``.cache/<name>/`` (derived, rebuildable at any time), analysed with the
search index's CJK-aware analyzer (:mod:`gitmem.search.scoring`: one token per Han/kana character, CJK pairs searched as
phrases, English words stemmed), so an English and a Chinese query find pages in either language. A long page is
also cut with the memories' chunker (:mod:`gitmem.search.chunks`: sections, then sentences with overlap), one
document per chunk beside the page's own: a page is scored by its best document, one hit per page, and the snippet
comes from its best chunk, named by the chunk's section heading (``docs/search.md``, "Wiki pages and writer
notes"). A query first compares the folder's file names, sizes and mtimes with what the index holds (one ``stat``
a file) and re-indexes only what changed, under a lock so parallel processes do not write it twice. The opened
index stays in the process, so a repeated query costs a few milliseconds (``bench/wiki.py``).
"""

from __future__ import annotations

import contextlib
import hashlib
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

FORMAT = 2  # 2: one document per chunk of a long page beside the page's own
_OPEN: dict[str, tuple[Any, Any]] = {}  # cache dir -> (tantivy index, schema), kept for the process's life
_STAMPS: dict[str, str] = {}  # cache dir -> the stamp it was last found fresh at, in this process
_ANALYZER: list[Any] = []


def _analyzer() -> Any:
    from gitmem.search import scoring as ranking

    if not _ANALYZER:
        _ANALYZER.append(ranking.build_analyzer())
    return _ANALYZER[0]


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


def _schema() -> Any:
    import tantivy

    from gitmem.search import scoring as ranking

    b = tantivy.SchemaBuilder()
    for name in ("key", "category", "tag"):
        b.add_text_field(name, stored=name == "key", tokenizer_name="raw", index_option="basic")
    for name in ("name", "tags", "body"):
        b.add_text_field(name, tokenizer_name=ranking.TOKENIZER, index_option="position")
    # which page a document belongs to and which of its chunks it is (0: the page itself), read for every
    # matching document to keep one hit per page without loading the stored documents
    for name in ("page", "part"):
        b.add_unsigned_field(name, fast=True)
    b.add_bytes_field("doc", stored=True, indexed=False)
    return b.build()


def _page_id(key: str) -> int:
    """The ``page`` field of a file's documents: 64 bits of a hash of its key."""
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big")


def _documents(key: str, doc: Doc) -> list[Any]:
    """The tantivy documents of one file: the file itself (``part`` 0, the whole body), then for a long one a
    document per chunk (``part`` 1, 2, …, with the title and the filter fields). Each stores what a hit shows:
    the name, title, category, tags and extra fields, and its text (the body, or the chunk after its heading)."""
    import tantivy

    from gitmem.search import scoring as ranking
    from gitmem.search.chunks import labelled_chunks

    page = _page_id(key)
    texts = [("", doc.body), *labelled_chunks(doc.body)]
    out = []
    for part, (section, text) in enumerate(texts):
        d = tantivy.Document()
        d.add_text("key", key)
        d.add_unsigned("page", page)
        d.add_unsigned("part", part)
        if doc.category:
            d.add_text("category", doc.category)
        for tag in doc.tags:
            d.add_text("tag", tag)
        body = f"{section}\n{text}" if section else text
        for name, value in (("name", doc.title), ("tags", " ".join(doc.tags)), ("body", body)):
            if value:
                d.add_text(name, ranking.normalise(value))
        d.add_bytes("doc", json.dumps([doc.name, doc.title, text, doc.category, list(doc.tags), doc.extra, section],
                                      ensure_ascii=False).encode())
        out.append(d)
    return out


class PageIndex:
    """The keyword index of the ``*.md`` files under ``repo/folder`` (``recursive`` for nested folders).

    ``reader(path, key)`` turns a file into a :class:`Doc` (None skips it: generated or unreadable files)."""

    def __init__(self, repo_path: Path, folder: str, cache_name: str, reader: Callable[[Path, str], Doc | None],
                 *, recursive: bool = False) -> None:
        self.repo_path = repo_path
        self.folder = repo_path / folder
        self.dir = repo_path / ".cache" / cache_name
        self.reader = reader
        self.recursive = recursive

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
        the index's ``FORMAT``, so an index of another layout is never taken for fresh."""
        parts: list[str] = [f"format:{FORMAT}"]
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
        return data if isinstance(data, dict) and data.get("format") == FORMAT else {}

    def _stale(self, files: dict[str, tuple[int, int]], known: dict[str, Any]) -> tuple[list[str], list[str]]:
        changed = [k for k, (mtime, size) in files.items()
                   if not (isinstance(known.get(k), list) and known[k][:2] == [mtime, size]
                           and settled(mtime, known[k][2]))]
        removed = [k for k in known if k not in files]
        return changed, removed

    def _open(self, fresh: bool) -> tuple[Any, Any]:
        import tantivy

        from gitmem.search import scoring as ranking

        cached = _OPEN.get(str(self.dir))
        if cached is not None and not fresh:
            return cached
        schema = _schema()
        path = self.dir / "tantivy"
        if fresh:
            shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True, exist_ok=True)
        try:
            index = tantivy.Index(schema, path=str(path), reuse=not fresh)
        except ValueError:  # an index of another layout: rebuilt
            shutil.rmtree(path, ignore_errors=True)
            path.mkdir(parents=True, exist_ok=True)
            index = tantivy.Index(schema, path=str(path), reuse=False)
        index.register_tokenizer(ranking.TOKENIZER, _analyzer())
        _OPEN[str(self.dir)] = (index, schema)
        return index, schema

    def refresh(self) -> int:
        """Bring the index up to the files on disk; returns how many files were (re)indexed."""
        stamp = self._stamp()
        ready = (self.dir / "tantivy" / "meta.json").is_file()
        if stamp and ready and _STAMPS.get(str(self.dir)) == stamp:
            return 0
        if stamp and ready and _read(self.dir / "stamp") == stamp:
            _STAMPS[str(self.dir)] = stamp
            return 0
        files = self._files()
        known = self._state().get("files", {}) if ready else {}
        changed, removed = self._stale(files, known)
        if changed or removed or not ready:
            self.dir.mkdir(parents=True, exist_ok=True)
            try:
                with file_lock(self.dir / "lock", 10.0):
                    state = self._state()
                    fresh = not state or not (self.dir / "tantivy" / "meta.json").is_file()
                    known = {} if fresh else state.get("files", {})
                    changed, removed = self._stale(files, known)
                    index = self._open(fresh)[0]
                    if changed or removed or fresh:
                        self._write(index, changed, removed, known, fresh)
                        atomic_write(self.dir / "state.json",
                                     json.dumps({"format": FORMAT, "files": known}).encode())
            except LockTimeout:
                raise SearchError(f"another process is updating {self.dir}", "try the query again") from None
            index.reload()
        if stamp:
            atomic_write(self.dir / "stamp", stamp.encode())
            _STAMPS[str(self.dir)] = stamp
        return len(changed)

    def _write(self, index: Any, changed: list[str], removed: list[str], known: dict[str, Any], fresh: bool) -> None:
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
                known[key] = [info.st_mtime_ns, info.st_size, seen]
                if doc is None:
                    continue
                for d in _documents(key, doc):
                    writer.add_document(d)
            writer.commit()
            writer.wait_merging_threads()
        except BaseException:
            with contextlib.suppress(Exception):
                writer.rollback()
            raise

    # -- querying --------------------------------------------------------------------------------------
    def search(self, query: str, *, k: int = 10, category: str | None = None, tags: tuple[str, ...] = ()
               ) -> list[SearchHit]:
        """The ``k`` best documents for ``query`` (words in any order, English or Chinese), filtered by
        ``category`` and ``tags``; an empty list for a query with no searchable word."""
        import tantivy

        from gitmem.search import scoring as ranking

        self.refresh()
        index, schema = self._open(False)
        analyzer = _analyzer()
        terms = ranking.analyze_query(query, analyzer)
        if terms.empty:
            return []
        tuning = ranking.Tuning(boost_name=3.0, boost_description=0.0, boost_ctx=0.0, boost_tags=2.0)
        clauses = [(tantivy.Occur.Must, ranking.text_query(schema, terms, tuning))]
        Q = tantivy.Query
        if category:
            clauses.append((tantivy.Occur.Must, Q.const_score_query(Q.term_query(schema, "category", category), 0.0)))
        for tag in tags:
            clauses.append((tantivy.Occur.Must, Q.const_score_query(
                Q.term_query(schema, "tag", " ".join(tag.split()).lower()), 0.0)))
        searcher = index.searcher()
        best, chunk = _best_per_page(searcher, Q.boolean_query(clauses), max(1, k))
        highlight = terms.highlight_terms()
        hits: list[SearchHit] = []
        for page, (score, addr, part) in best.items():
            stored = searcher.doc(addr)
            name, title, body, cat, doc_tags, extra, section = json.loads(bytes(stored["doc"][0]))
            shown = [(part, section, body)]
            if not part and page in chunk:  # the page as a whole scored higher: show its best chunk if it can
                winner = json.loads(bytes(searcher.doc(chunk[page][1])["doc"][0]))
                shown.insert(0, (chunk[page][0], winner[6], winner[2]))
            part, section, snippet = _shown(shown, title, highlight, analyzer)
            hits.append(SearchHit(str(stored["key"][0]), name, title, float(score),
                                  f"{section} — {snippet}" if section else snippet, cat, tuple(doc_tags), extra,
                                  section, part))
        return hits


def _shown(texts: list[tuple[int, str, str]], title: str, terms: set[str], analyzer: Any) -> tuple[int, str, str]:
    """(chunk number, section, snippet) of the first of ``texts`` (chunk number, section, text) in which a query
    term occurs; when none does, only the title or tags matched: the title and the start of the last text."""
    from gitmem.search import scoring as ranking

    for part, section, text in texts:
        snippet, spans = ranking.snippet(text, terms, analyzer)
        if spans:
            return part, section, snippet
    return 0, "", ranking.snippet(f"{title}. {texts[-1][2][:400]}", terms, analyzer)[0]


_Best = dict[int, tuple[float, Any, int]]  # page → (score, address, chunk number) of its best document
_Chunks = dict[int, tuple[int, Any]]  # page → (number, address) of its best chunk


def _best_per_page(searcher: Any, query: Any, k: int) -> tuple[_Best, _Chunks]:
    """The ``k`` best pages for ``query``, each with its best document's score, address and chunk number (0: the
    page itself), best first, and the best chunk of each page that has one among the matches (its number and
    address). The chunks of a few pages can fill the first places, so the search asks for more documents until
    ``k`` pages are found or none is left."""
    limit = 4 * k
    while True:
        found = searcher.search(query, limit=limit, count=False).hits
        addrs = [addr for _score, addr in found]
        best: _Best = {}
        chunk: _Chunks = {}
        pages = searcher.fast_field_values("page", addrs)
        parts = searcher.fast_field_values("part", addrs)
        for (score, addr), page, part in zip(found, pages, parts, strict=True):
            if page not in best and len(best) < k:
                best[page] = (float(score), addr, int(part))
            if part and page not in chunk:
                chunk[page] = (int(part), addr)
        if len(best) >= k or len(found) < limit:
            return best, chunk
        limit *= 4

