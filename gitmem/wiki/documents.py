"""What a folder index (:class:`gitmem.wiki.search.PageIndex`) stores of a Markdown file: the tantivy schema, the
CJK-aware analyzer its text fields use, and a file's documents, the file as a whole and, for a long one, one per
chunk of the memories' chunker.

The layout of these documents is what the index's ``FORMAT`` versions, so it is written in one place; the index's
freshness, vectors and queries (:mod:`gitmem.wiki.search`) and the choice of one hit per page
(:mod:`gitmem.wiki.hits`) read it.
"""

from __future__ import annotations

import hashlib
import json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from gitmem.wiki.search import Doc

_ANALYZER: list[Any] = []


def page_analyzer() -> Any:
    """The search index's analyzer (:func:`gitmem.search.analysis.build_analyzer`), built once per process."""
    from gitmem.search import analysis

    if not _ANALYZER:
        _ANALYZER.append(analysis.build_analyzer())
    return _ANALYZER[0]


def build_schema() -> Any:
    """The index's schema: the filter fields (matched whole), the analysed text fields, the page and chunk numbers
    of each document, and the stored document a hit is shown from."""
    import tantivy

    from gitmem.search import analysis

    b = tantivy.SchemaBuilder()
    for name in ("key", "category", "tag"):
        b.add_text_field(name, stored=name == "key", tokenizer_name="raw", index_option="basic")
    for name in ("name", "tags", "body"):
        b.add_text_field(name, tokenizer_name=analysis.TOKENIZER, index_option="position")
    # which page a document belongs to and which of its chunks it is (0: the page itself), read for every
    # matching document to keep one hit per page without loading the stored documents
    for name in ("page", "part"):
        b.add_unsigned_field(name, fast=True)
    b.add_bytes_field("doc", stored=True, indexed=False)
    return b.build()


def page_id(key: str) -> int:
    """The ``page`` field of a file's documents: 64 bits of a hash of its key."""
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big")


def page_parts(doc: Doc) -> list[tuple[str, str]]:
    """(section heading, text) of the file as a whole (``part`` 0), then of each chunk of a long one."""
    from gitmem.search.chunks import labelled_chunks

    return [("", doc.body), *labelled_chunks(doc.body)]


def page_documents(key: str, doc: Doc, texts: list[tuple[str, str]]) -> list[Any]:
    """The tantivy documents of one file from its :func:`page_parts`: the file itself (``part`` 0, the whole
    body), then for a long one a document per chunk (``part`` 1, 2, …, with the title and the filter fields). Each
    stores what a hit shows: the name, title, category, tags and extra fields, and its text (the body, or the
    chunk after its heading)."""
    import tantivy

    from gitmem.search import analysis

    page = page_id(key)
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
                d.add_text(name, analysis.normalise(value))
        d.add_bytes("doc", json.dumps([doc.name, doc.title, text, doc.category, list(doc.tags), doc.extra, section],
                                      ensure_ascii=False).encode())
        out.append(d)
    return out
