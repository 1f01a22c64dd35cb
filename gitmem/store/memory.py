"""The memory record and its vocabulary, for every process that reads memories, the prompt hook's first.

:class:`Memory` declares each field of a memory once, with its metadata; the types, categories, scopes and sources
it takes, the folders of the repository, and what is derived from the fields (:data:`MEMORY_FIELDS`,
:data:`FRONTMATTER_KEYS`, :data:`TIME_FIELDS`, :func:`field_names`) live here too. Reading a memory's file, checking
user input and naming files is :mod:`gitmem.store.document`'s work (which re-exports all of this).

The prompt hook decodes search hits into :class:`Memory` objects and renders them, so this module loads neither
:mod:`dataclasses` (a :class:`~gitmem.text.records.Record` instead), nor :mod:`re`, :mod:`functools`,
:mod:`unicodedata`, nor :mod:`datetime` (the fields hold datetimes, made where a time is read or taken):
``tests/agents/claude/test_hook_imports.py`` checks it.
"""

from __future__ import annotations

from gitmem.text.records import Record, asdict, field, fields

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: reading memories does not import typing (~3 ms a process)
if TYPE_CHECKING:
    from datetime import datetime
    from typing import Any

SCHEMA_VERSION = 1
TYPES = ("user", "feedback", "project", "reference")
CATEGORIES = ("background", "decision", "preference", "constraint", "correction")
#: categories in the order a reader should see them (and a lifecycle keeps them): what must not be violated first
CATEGORY_ORDER = ("constraint", "correction", "decision", "preference", "background")
assert set(CATEGORY_ORDER) == set(CATEGORIES)
SCOPES = ("global", "project", "session")
SOURCES = ("cli", "hook", "commit", "import", "capture", "sync", "api")
#: Largest memory text accepted, in UTF-8 bytes: a memory is a rule or a fact, not a document.
MAX_TEXT_BYTES = 16 * 1024
MAX_TAGS = 32
MAX_TAG_LENGTH = 64
#: the tag of a memory that compaction wrote in place of a cluster of others (each then superseded by it)
SUMMARY_TAG = "summary"
GLOBAL_DIR = "global"
MEMORIES_DIR = "memories"


def compacted_into(summary_id: str) -> str:
    """The deprecation reason of a memory that compaction folded into the summary ``summary_id``: what tells it from
    a memory replaced by a later state of the same fact, from the memory alone."""
    return f"compacted into {summary_id}"


def utcnow() -> datetime:
    """The current time, UTC, to the second (what gets written to files)."""
    from datetime import UTC, datetime  # here: decoding a search hit's memory never takes the time

    return datetime.now(UTC).replace(microsecond=0)


def format_time(value: datetime) -> str:
    """A time as written to files: ISO 8601, UTC, to the second (``2026-11-30T13:20:00Z``)."""
    from datetime import UTC

    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def first_line(text: str, limit: int = 80) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


#: how ``gitmem sync`` merges a field when both sides changed it (``gitmem.sync.merge`` implements each rule)
MERGE_RULES: dict[str, str] = {
    "identity": "the file's identity: both sides have the same value",
    "text": "line by line (`merge3`); a true conflict keeps the other side as a sibling memory",
    "newer": "the side with the newer `updated` wins",
    "placement": "`scope` and `project` together: the side with the newer `updated` wins",
    "max": "the higher value",
    "set": "set merge: what either side added is kept, what one side removed stays removed",
    "oldest": "the older time",
    "newest": "the newer time",
    "either": "true when either side is true",
    "deprecation": "follows the side that deprecated the memory (cleared when the merge is not deprecated); both "
                   "deprecated it: both reasons, the newer first",
    "extra": "key by key, the side with the newer `updated` wins",
}
#: how a field is redacted before a commit: ``scrub`` replaces secrets in it, ``refuse`` refuses a value that
#: holds one (it names a file), ``none`` has no free text
REDACT_RULES = ("scrub", "refuse", "none")
#: where a field is written: ``always`` in the frontmatter, ``set`` in the frontmatter when not empty, ``body`` in
#: the Markdown body, ``extra`` as the frontmatter keys it holds
WRITE_RULES = ("always", "set", "body", "extra")


def _meta(*, merge: str, redact: str = "none", write: str = "set", doc: str) -> dict[str, str]:
    """A :class:`Memory` field's metadata: the one place a field is described."""
    return {"merge": merge, "redact": redact, "write": write, "doc": doc}


class Memory(Record):
    """One memory: a statement the agent should act on, with its metadata.

    Each field is declared here once, with its metadata (``merge``: a key of :data:`MERGE_RULES`; ``redact``:
    one of :data:`REDACT_RULES`; ``write``: one of :data:`WRITE_RULES`; ``doc``: what it means). The frontmatter
    order (declaration order), the fields ``gitmem import`` accepts, the sync merge, the redaction before a commit
    and the field table of ``docs/store.md`` are derived from it. A frozen :class:`~gitmem.text.records.Record`:
    :func:`~gitmem.text.records.replace` makes a changed copy."""

    id: str = field(metadata=_meta(merge="identity", redact="refuse", write="always",
                                   doc="unique id, also the file name (derived from the text unless given)"))
    text: str = field(metadata=_meta(merge="text", redact="scrub", write="body",
                                     doc="the statement itself (the Markdown body)"))
    name: str = field(default="", metadata=_meta(merge="text", redact="scrub", write="always",
                                                 doc="short title (default: the first line)"))
    description: str = field(default="", metadata=_meta(merge="text", redact="scrub", doc="one-line summary"))
    type: str = field(default="user", metadata=_meta(merge="newer", write="always", doc="one of " + ", ".join(TYPES)))
    category: str = field(default="background", metadata=_meta(merge="newer", write="always",
                                                               doc="one of " + ", ".join(CATEGORIES)))
    importance: int = field(default=3, metadata=_meta(merge="max", write="always", doc="1 (trivia) to 5 (a hard rule)"))
    tags: tuple[str, ...] = field(default=(), metadata=_meta(merge="set", redact="scrub", write="always",
                                                             doc="lower-case labels"))
    scope: str = field(default="global", metadata=_meta(merge="placement", write="always",
                                                        doc="one of " + ", ".join(SCOPES)))
    project: str = field(default="", metadata=_meta(merge="placement", redact="refuse",
                                                    doc="project id (empty: every project)"))
    why: str = field(default="", metadata=_meta(merge="text", redact="scrub", write="body",
                                                doc="the reason (a **Why:** line of the body)"))
    how: str = field(default="", metadata=_meta(merge="text", redact="scrub", write="body",
                                                doc="how to apply it (a **How to apply:** line of the body)"))
    source: str = field(default="cli", metadata=_meta(merge="newer", write="always",
                                                      doc="one of " + ", ".join(SOURCES)))
    source_ref: str = field(default="", metadata=_meta(merge="newer", redact="scrub",
                                                       doc="where it came from (a commit, a session, a file)"))
    created: datetime = field(default_factory=utcnow, metadata=_meta(merge="oldest", write="always",
                                                                     doc="when it was first written (UTC)"))
    updated: datetime = field(default_factory=utcnow, metadata=_meta(merge="newest", write="always",
                                                                     doc="when it last changed (UTC)"))
    expires: datetime | None = field(default=None, metadata=_meta(
        merge="newer", doc="when recall stops using it (session scope: a day after it was written)"))
    deprecated: bool = field(default=False, metadata=_meta(merge="either", write="always",
                                                           doc="forgotten: kept in the file, no longer recalled"))
    deprecated_reason: str = field(default="", metadata=_meta(merge="deprecation", redact="scrub",
                                                              doc="why it was forgotten"))
    superseded_by: str = field(default="", metadata=_meta(merge="deprecation", redact="scrub",
                                                          doc="id of the memory that replaces it"))
    conflicted: bool = field(default=False, metadata=_meta(
        merge="either", doc="a sync met a true conflict here; gitmem resolve settles it"))
    schema_version: int = field(default=SCHEMA_VERSION, metadata=_meta(merge="newer", write="always",
                                                                       doc="version of the file format"))
    #: frontmatter keys gitmem does not know, kept as they are so a newer writer's data is not lost
    extra: dict[str, Any] = field(default_factory=dict, compare=False, metadata=_meta(
        merge="extra", redact="scrub", write="extra", doc="frontmatter keys gitmem does not know, kept as they are "
        "(`gitmem export` writes them under `\"extra\"`, YAML dates as ISO strings, and `import` reads them back)"))

    @property
    def path(self) -> str:
        """The file's path inside the memory repository (POSIX separators)."""
        # the file-name rules need re and unicodedata: only a writer asks for a memory's path
        from gitmem.store.document import file_stem, project_dir

        return f"{MEMORIES_DIR}/{project_dir(self.project)}/{file_stem(self.id)}.md"

    @property
    def title(self) -> str:
        return self.name or first_line(self.text)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict of every field (times as ISO 8601 strings)."""
        data = asdict(self)
        data["tags"] = list(self.tags)
        for key in TIME_FIELDS:
            value = getattr(self, key)
            data[key] = format_time(value) if value else None
        data["path"] = self.path
        data["name"] = self.title
        extra = data.pop("extra")
        return {**extra, **data}


def field_names(**metadata: str) -> tuple[str, ...]:
    """The :class:`Memory` fields whose metadata has these values, in declaration order:
    ``field_names(merge="text")``, ``field_names(redact="scrub")``."""
    return tuple(f.name for f in MEMORY_FIELDS if all(f.metadata[k] == v for k, v in metadata.items()))


#: every field of :class:`Memory`, with its metadata
MEMORY_FIELDS = fields(Memory)
#: the frontmatter keys gitmem writes, in the order it writes them
FRONTMATTER_KEYS = tuple(f.name for f in MEMORY_FIELDS if f.metadata["write"] in ("always", "set"))
#: the fields that hold a time (written as ISO 8601 UTC strings)
TIME_FIELDS = tuple(f.name for f in MEMORY_FIELDS if str(f.type).startswith("datetime"))


#: how a bullet labels a memory's why and how (a passage of a long memory labels them where they start in it)
BULLET_LABELS = (("why", "Why:"), ("how", "How:"))


def _flat(passage: str, text: str) -> str:
    """A part of a long memory (whose text is ``text``) on one line. A part that opens with the heading of its
    section (a ``#`` line of the text) keeps it apart: "Payment: Payment is created…", which run together read
    "Payment Payment is created…"."""
    head, _, rest = passage.strip().partition("\n")
    headings = {line.lstrip("#").strip() for line in text.splitlines() if line.startswith("#")}
    if rest.strip() and head.lstrip("#").strip() in headings:
        return f"{head.lstrip('#').strip()}: {' '.join(rest.split())}"
    return " ".join(passage.split())


def bullet(memory: Memory, passage: tuple[str, int, int] | None = None) -> str:
    """A memory as one Markdown bullet for an agent's context: the rule, its why/how, its type tag and id (so the
    agent can cite or forget it), and what replaced it when a later memory did (a question about the past, "what
    did we use first", is answered by such a memory: the agent must not take it for the current state).

    ``passage`` (``(text, n, count)``: part ``n`` of the ``count`` parts a long memory is cut into, why and how
    included) stands for the memory's text: a long note's part that a search matched, where the whole note would
    fill the context or not fit at all; the id fetches the rest."""
    if passage is not None:
        text, extra, part = _flat(passage[0], memory.text), "", f", part {passage[1]} of {passage[2]}"
    else:
        text, part = " ".join(memory.text.split()), ""
        extra = "".join(f" {label} {value}" for name, label in BULLET_LABELS if (value := getattr(memory, name)))
    scope = memory.type + (f", {memory.project}" if memory.project else "")
    replaced = f", replaced by {memory.superseded_by}" if memory.superseded_by else ""
    return f"- [{scope}] {text}{extra} (id: {memory.id}{part}{replaced})"
