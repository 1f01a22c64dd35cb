"""What a memory becomes in the search index: the tantivy schema, the documents of one memory file (the memory,
plus one per chunk of a long one), the memory stored inside it (read back for every hit), and the texts the
embedding model sees.

:data:`FORMAT` names this layout; an index written with another one is rebuilt.
"""

from __future__ import annotations

from datetime import datetime

import tantivy

from gitmem.search import analysis
from gitmem.search import scoring as ranking
from gitmem.search.standing import condition, stands
from gitmem.store import memory as docs
from gitmem.store.memory import Memory
from gitmem.text import quickjson
from gitmem.text.digest import blake2b

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: a search does not import typing (~3 ms a process)
if TYPE_CHECKING:
    from typing import Any

_MEMORY_NAMES = tuple(f.name for f in docs.MEMORY_FIELDS)
_TIMES = docs.TIME_FIELDS
#: bump when the schema, the analyzer or what goes into a field changes: the index is then rebuilt (it also
#: changes by itself with the fields of Memory, which the stored documents list in order)
FORMAT = "11." + blake2b(",".join(_MEMORY_NAMES).encode(), digest_size=4).hexdigest()
#: bump when the text given to the embedding model changes: vectors are then recomputed (3: a memory in a script
#: the model does not cover is stored as a zero vector, see :func:`gitmem.embeddings.runtime.covers`; 4: a long memory's
#: chunks instead of its sentences; 5: sentence and chunk vectors pooled from the memory's own model pass; 6: the
#: subject a standing rule names, embedded alone; 7: a title or one-line section packed with the text after it)
VECTOR_RECIPE = 7
GLOBAL_PROJECT = ranking.GLOBAL_PROJECT
TEXT_FIELDS = ("name", "description", "body", "tags", "ctx")


def schema() -> Any:
    """Raw keyword fields for filters, analysed text fields for BM25, fast numeric fields for ranking."""
    b = tantivy.SchemaBuilder()
    for name in ("path", "sha", "key", "type", "category", "project", "scope", "tag"):
        b.add_text_field(name, stored=name in ("path", "sha"), tokenizer_name="raw", index_option="basic")
    for name in (*TEXT_FIELDS, ranking.SUBJECT_FIELD):
        # the subject is stored: embedding it and a search's check of it read it back instead of deriving it again
        b.add_text_field(name, stored=name == ranking.SUBJECT_FIELD, tokenizer_name=analysis.TOKENIZER,
                         index_option="position")
    for name in ("deprecated", "importance", "grp", "seq", "sha64", "part", "standing", "superseded"):
        b.add_unsigned_field(name, indexed=True, fast=True)
    for name in ("created", "updated"):
        b.add_integer_field(name, indexed=True, fast=True)
    b.add_bytes_field("doc", stored=True, indexed=False)
    return b.build()


def body(memory: Memory) -> str:
    """The text BM25 scores as the body: the memory with its why and how."""
    return "\n".join(value for _name, value in _body_pieces(memory))


def _body_pieces(memory: Memory) -> list[tuple[str, str]]:
    """``(field, text)`` of what :func:`body` joins, in order: the text, the why, the how, those present."""
    return [(name, value) for name in ("text", "why", "how") if (value := getattr(memory, name))]


def group(memory: Memory) -> str:
    """The source (session) a memory was captured from; memories of one source are each other's context."""
    return f"{memory.source}:{memory.source_ref}" if memory.source_ref else ""


def grp_hash(group: str) -> int:
    """A source as a non-zero 64-bit number (0: no source)."""
    if not group:
        return 0
    return int.from_bytes(blake2b(group.encode(), digest_size=8).digest(), "big") or 1


def sha64(sha: str) -> int:
    """The first 64 bits of a blob SHA, as stored in the ``sha64`` fast field."""
    return int(sha[:16], 16)


def memory_chunks(memory: Memory) -> list[str]:
    """The chunks of a long memory's body (:mod:`gitmem.search.chunks`), none for a short one."""
    from gitmem.search.chunks import chunks  # here: a search needs them only for the snippet of a long memory

    return chunks(body(memory))


def shown_chunks(memory: Memory, parts: list[str] | None = None) -> list[str]:
    """:func:`memory_chunks` as a context shows them: where the memory's why or how starts inside a chunk (or
    before it, for a chunk wholly inside one) it carries the label a whole memory's bullet gives it
    (:data:`~gitmem.store.memory.BULLET_LABELS`), so a passage of a long memory does not pass its reason off as
    part of the rule. The index keeps the unlabelled chunks: the labels are no words of the memory. ``parts``:
    the memory's :func:`memory_chunks` when the caller has them."""
    parts = memory_chunks(memory) if parts is None else parts
    labels = dict(docs.BULLET_LABELS)
    marks, at = [], 0  # (where a labelled field starts in the body, its label)
    for name, value in _body_pieces(memory):
        if name in labels:
            marks.append((at, labels[name]))
        at += len(value) + 1
    if not parts or not marks:
        return parts
    from gitmem.search.chunks import locate  # here: only a long memory with a why or how needs it

    source = body(memory)
    return [part if span is None else _labelled(part, span, source, marks)
            for part, span in zip(parts, locate(source, parts), strict=True)]


def _labelled(part: str, span: tuple[tuple[int, int], ...], source: str, marks: list[tuple[int, str]]) -> str:
    """``part`` with the label of each mark (``(start in the body, label)``) it crosses, and the label of the one
    it starts inside, put where they start in it. ``span``: where :func:`~gitmem.search.chunks.locate` found the
    part in ``source``, the memory's body (a leading range is a heading the part repeats)."""
    start, end = span[-1]
    # the non-space characters of the part before its text proper: a repeated heading
    skip = sum(not c.isspace() for c in source[span[0][0]:span[0][1]]) if len(span) > 1 else 0
    inside = [(at, label) for at, label in marks if start < at < end]
    before = [label for at, label in marks if at <= start]
    places = [(sum(not c.isspace() for c in source[start:at]), label) for at, label in inside]
    if before:
        places.insert(0, (0, before[-1]))
    out, count, todo = [], 0, list(places)
    for c in part:
        while todo and count == skip + todo[0][0] and not c.isspace():
            out.append(todo.pop(0)[1] + " ")
        out.append(c)
        count += not c.isspace()
    return "".join(out) + "".join(" " + label for _n, label in todo)


def opening(memory: Memory) -> tuple[str, int, int] | None:
    """The first part of a long memory as a context shows a part (``(text, 1, count)``, see
    :attr:`gitmem.search.hit.Hit.passage`), None for a memory short enough to be shown whole."""
    parts = shown_chunks(memory)
    return (parts[0], 1, len(parts)) if parts else None


def embedding_text(memory: Memory) -> str:
    """What the embedding model sees of a memory (its cache key is the blob SHA plus :data:`VECTOR_RECIPE`)."""
    return embedding_layout(memory)[0]


def embedding_layout(memory: Memory) -> tuple[str, list[tuple[int, int, int]]]:
    """:func:`embedding_text` and where each part of :func:`body` (text, why, how: those present, in order) sits
    in it: ``(start in the body, start in the embedding text, length)``, to find a sentence's or chunk's
    characters in what the model read."""
    parts = [("", memory.name, False), ("", memory.description, False), ("", memory.text, True),
             ("Why: ", memory.why, True), ("How to apply: ", memory.how, True),
             ("Tags: ", ", ".join(memory.tags), False)]
    text, layout, at_body = "", [], 0
    for label, value, in_body in parts:
        if not value:
            continue
        text += ("\n" if text else "") + label
        if in_body:
            layout.append((at_body, len(text), len(value)))
            at_body += len(value) + 1
        text += value
    return text, layout


def memory_json(memory: Memory) -> bytes:
    """The memory as a JSON array in :data:`_MEMORY_NAMES` order: decoding an array is 2.5 times faster than an
    object with the same values (no keys to decode), and every hit of every search decodes one."""
    import json  # here: a search that finds nothing never needs it (and reading one back uses quickjson)

    values: list[Any] = []
    for name in _MEMORY_NAMES:
        value = getattr(memory, name)
        if name in _TIMES:
            value = docs.format_time(value) if value else None
        elif name == "tags":
            value = list(value)
        values.append(value)
    return json.dumps(values, ensure_ascii=False, default=str).encode()


def subject(doc: Any) -> str:
    """The subject a standing rule names, as its index document stores it (:func:`documents`), or ""."""
    found: str | None = doc.get_first(ranking.SUBJECT_FIELD)
    return found or ""


def memory_from_json(raw: bytes) -> Memory:
    """The memory :func:`memory_json` stored (read without importing :mod:`json`: the prompt hook decodes hits)."""
    values = quickjson.loads(raw.decode())
    data = dict(zip(_MEMORY_NAMES, values, strict=True))
    data["tags"] = tuple(data["tags"])
    for key in _TIMES:
        if data[key]:
            data[key] = datetime.fromisoformat(data[key])
    # Every field was validated when the file was indexed, and FORMAT changes with the field list; a record's
    # __init__ checks and sets each of its ~20 fields; filling __dict__ directly costs ~1 µs per hit.
    memory = object.__new__(Memory)
    memory.__dict__.update(data)
    return memory


def superseded(memory: Memory) -> int:
    """What replaced ``memory``: :data:`~gitmem.search.scoring.COMPACTED` (compaction folded it into a summary),
    :data:`~gitmem.search.scoring.REPLACED` (a later state of the same fact) or 0 (nothing: it is current, or was
    forgotten). Read from the memory alone (its deprecation reason), so a rebuild and a refresh that does not
    re-read its successor agree."""
    if not (memory.deprecated and memory.superseded_by):
        return 0
    compacted = memory.deprecated_reason == docs.compacted_into(memory.superseded_by)
    return ranking.COMPACTED if compacted else ranking.REPLACED


def documents(memory: Memory, path: str, sha: str, grp: int, seq: int, ctx: str) -> list[Any]:
    """The tantivy documents of one memory file: the memory itself (``part`` 0: every field, the whole body,
    the stored memory), then for a long memory one document per chunk (``part`` 1, 2, …: its name and that
    chunk as the body, with the same filter and ranking fields; a search scores the memory by its best
    document). ``grp``/``seq`` place it in its source, ``ctx`` is its neighbours' text. The ``standing`` field is
    1 when the memory states a standing instruction or preference (:func:`gitmem.search.standing.stands`), and
    the ``cond`` field holds the subject such a rule names, if any; the ``superseded`` field says what replaced a
    deprecated memory (:func:`superseded`)."""
    flags = int(stands(memory)), superseded(memory)
    main = _document(memory, path, sha, grp, seq, {"description": memory.description, "body": body(memory),
                                                    "tags": " ".join(memory.tags), "ctx": ctx,
                                                    ranking.SUBJECT_FIELD: condition(memory.text) if flags[0] else ""},
                     0, flags)
    main.add_bytes("doc", memory_json(memory))
    return [main, *(_document(memory, path, sha, grp, seq, {"body": chunk}, part, flags)
                    for part, chunk in enumerate(memory_chunks(memory), start=1))]


def _document(memory: Memory, path: str, sha: str, grp: int, seq: int, text: dict[str, str], part: int,
              flags: tuple[int, int]) -> Any:
    d = tantivy.Document()
    for name, value in (("path", path), ("sha", sha), ("key", memory.id), ("type", memory.type),
                        ("category", memory.category), ("project", memory.project or GLOBAL_PROJECT),
                        ("scope", memory.scope)):
        d.add_text(name, value)
    for tag in memory.tags:
        d.add_text("tag", tag)
    for name, value in (("name", memory.name), *text.items()):
        if value:
            d.add_text(name, analysis.normalise(value))
    d.add_unsigned("deprecated", int(memory.deprecated))
    d.add_unsigned("importance", memory.importance)
    d.add_unsigned("grp", grp)
    d.add_unsigned("seq", seq)
    d.add_unsigned("sha64", sha64(sha))
    d.add_unsigned("part", part)
    d.add_unsigned("standing", flags[0])
    d.add_unsigned("superseded", flags[1])
    d.add_integer("created", int(memory.created.timestamp()))
    d.add_integer("updated", int(memory.updated.timestamp()))
    return d


def git_blob_sha(data: bytes) -> str:
    """The SHA git gives a blob with these bytes."""
    import hashlib  # only a refresh that reads files needs it

    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
