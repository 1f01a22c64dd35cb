"""Typed memory documents: Markdown with YAML frontmatter, validated, with safe file names.

A memory file looks like::

    ---
    id: use-postgresql-not-mysql-3f9a1c
    name: Use PostgreSQL, not MySQL
    type: project
    category: decision
    importance: 4
    tags: [database]
    scope: project
    project: github.com-acme-shop
    source: cli
    created: '2026-11-30T13:20:00Z'
    updated: '2026-11-30T13:20:00Z'
    deprecated: false
    schema_version: 1
    ---
    Use PostgreSQL, not MySQL: JSON queries are faster.

    **Why:** we benchmarked both in May.
    **How to apply:** new services get a PostgreSQL database.

The format is a public contract (users review it in pull requests); change it only with a ``schema_version`` bump.

The :class:`Memory` record, its fields and vocabulary are declared in :mod:`gitmem.store.memory` (which a search
hit's reader imports without this module's ``re``, ``unicodedata`` and YAML); this module reads and writes the
file, checks user input, names ids and files, and re-exports them, so ``from gitmem.store.document import Memory``
keeps working.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import UTC, date, datetime, timedelta
from functools import cache

from gitmem.errors import DocumentError, ValidationError
from gitmem.store.memory import CATEGORIES as CATEGORIES
from gitmem.store.memory import CATEGORY_ORDER as CATEGORY_ORDER
from gitmem.store.memory import FRONTMATTER_KEYS as FRONTMATTER_KEYS
from gitmem.store.memory import GLOBAL_DIR as GLOBAL_DIR
from gitmem.store.memory import MAX_TAG_LENGTH as MAX_TAG_LENGTH
from gitmem.store.memory import MAX_TAGS as MAX_TAGS
from gitmem.store.memory import MAX_TEXT_BYTES as MAX_TEXT_BYTES
from gitmem.store.memory import MEMORIES_DIR as MEMORIES_DIR
from gitmem.store.memory import MEMORY_FIELDS as MEMORY_FIELDS
from gitmem.store.memory import MERGE_RULES as MERGE_RULES
from gitmem.store.memory import REDACT_RULES as REDACT_RULES
from gitmem.store.memory import SCHEMA_VERSION as SCHEMA_VERSION
from gitmem.store.memory import SCOPES as SCOPES
from gitmem.store.memory import SOURCES as SOURCES
from gitmem.store.memory import TIME_FIELDS as TIME_FIELDS
from gitmem.store.memory import TYPES as TYPES
from gitmem.store.memory import WRITE_RULES as WRITE_RULES
from gitmem.store.memory import Memory as Memory
from gitmem.store.memory import bullet as bullet
from gitmem.store.memory import field_names as field_names
from gitmem.store.memory import first_line as first_line
from gitmem.store.memory import format_time as format_time
from gitmem.store.memory import utcnow as utcnow
from gitmem.text import scripts
from gitmem.text.records import replace

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: reading memories does not import typing (~3 ms a process)
if TYPE_CHECKING:
    from typing import Any

SESSION_TTL = timedelta(days=1)

_WHY = "**Why:**"
_HOW = "**How to apply:**"
# Letters, digits and CJK/kana/hangul; used both for slugs and to decide whether an id can be a file name as is.
_WORD = "0-9a-z" + scripts.CJK

@cache
def _pattern(name: str) -> re.Pattern[str]:
    """The file-name patterns, compiled on first use (the CJK ranges cost ~2-4 ms each to compile, which a
    search that never writes a file should not pay)."""
    return re.compile({
        "safe_id": rf"^[{_WORD}][{_WORD}._-]{{0,99}}$",
        "non_word": rf"[^{_WORD}]+",
        "non_word_dot": rf"[^{_WORD}.]+",
    }[name])


_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}


def parse_timestamp(value: Any, field_name: str) -> datetime:
    """Accept an ISO 8601 string, a YAML timestamp or a date; naive times are taken as UTC."""
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, date):
        parsed = datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        text = value.strip()
        if text.endswith("Z"):
            text = text[:-1] + "+00:00"
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            raise ValidationError(
                f"'{field_name}' is not a date: {value!r}", "use ISO 8601, e.g. 2026-11-30T13:20:00Z"
            ) from None
    else:
        raise ValidationError(f"'{field_name}' is not a date: {value!r}", "use ISO 8601, e.g. 2026-11-30")
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC).replace(microsecond=0)


def slugify(text: str, max_length: int = 48, *, keep_dots: bool = False) -> str:
    """A lowercase file-name-safe slug that keeps CJK characters: ``"Use Postgres!"`` → ``"use-postgres"``.

    ``keep_dots`` keeps inner dots (for host names in project ids: ``github.com-acme-shop``)."""
    normal = unicodedata.normalize("NFKC", text).lower()
    slug = _pattern("non_word_dot" if keep_dots else "non_word").sub("-", normal).strip("-.")
    slug = re.sub(r"\.{2,}", ".", slug)
    if len(slug) > max_length:
        cut = slug[:max_length]
        # end on a word boundary when one is near, so ids read "...-never-use" rather than "...-never-us"
        slug = cut[: cut.rfind("-")] if cut.rfind("-") > max_length // 2 else cut.rstrip("-")
    return slug


def name_slug(name: str, max_length: int = 80) -> str:
    """The slug of a name a user gives that becomes a file name (a wiki page's title, a work, a character), with
    any secret in it redacted first: slugged (``ghp-1a2b…``), a token no longer looks like one to the commit's
    redaction gate, and a file name stays in git history."""
    from gitmem.redact.engine import redact

    return slugify(redact(name).text, max_length)


def id_slug(text: str) -> str:
    """The readable part of an id derived from ``text``: its ASCII words, at most 40 characters (``memory`` when
    it has none). Derived ids are ASCII on purpose: see "Ids and file names" in docs/store.md."""
    slug = re.sub(r"[^0-9a-z]+", "-", slugify(text, 80)).strip("-")
    return slugify(slug, 40) or "memory"


def new_id(text: str, *, suffix: str = "") -> str:
    """A fresh id: a slug of the text and 6 random hex digits (or ``suffix``), e.g.
    ``use-postgresql-not-mysql-3f9a1c``."""
    import secrets

    return f"{id_slug(text)}-{suffix or secrets.token_hex(3)}"


def is_derived_id(memory_id: str, text: str) -> bool:
    """Whether ``memory_id`` is what :func:`new_id` makes of ``text`` (as opposed to an id given by a caller).
    Ids derived before derived ids became ASCII-only (they kept CJK characters) count too."""
    if len(memory_id) < 8 or memory_id[-7] != "-" or not all(c in "0123456789abcdef" for c in memory_id[-6:]):
        return False
    return memory_id[:-7] in (id_slug(text), slugify(text, 40) or "memory")


_ASCII_WORD = frozenset("0123456789abcdefghijklmnopqrstuvwxyz")
_ASCII_SAFE = _ASCII_WORD | {".", "_", "-"}


def is_safe_id(value: str) -> bool:
    """Whether ``value`` can be used as a file name unchanged on every platform."""
    if value.isascii():  # the common case, answered without compiling the CJK-aware pattern (~15 ms)
        shaped = 0 < len(value) <= 100 and value[0] in _ASCII_WORD and set(value) <= _ASCII_SAFE
    else:
        shaped = bool(_pattern("safe_id").match(value))
    return shaped and ".." not in value and value.split(".")[0] not in _RESERVED


def file_stem(memory_id: str) -> str:
    """The file name (without ``.md``) for an id. Safe ids are used as they are; any other id becomes a
    slug plus a hash of the original, so two different ids never share a file and no id escapes its folder."""
    if is_safe_id(memory_id) and not memory_id.endswith((".", ".md")):
        return memory_id
    import hashlib  # loads OpenSSL (~3 ms): only an id that is not a file name as it is needs it

    digest = hashlib.sha1(memory_id.encode("utf-8")).hexdigest()[:10]
    slug = slugify(memory_id, 60)
    return f"{slug}-{digest}" if slug else f"id-{digest}"


def memory_file(path: str) -> bool:
    """Whether ``path`` (in the repository, ``/``-separated) is where the store reads memories: a ``.md`` file
    directly inside a folder of ``memories/`` (``global`` or a project id) whose name does not start with a dot, as
    :meth:`gitmem.store.memories.MemoryRepo.iter_files` reads them (the one statement of that rule: the search
    index and ``doctor`` ask it). ``memories/x.md``, ``memories/global/sub/x.md`` and ``memories/global/x.txt`` are
    not memories: ``list`` and ``show`` never see them, the index does not take them, and ``doctor`` warns about
    them (:meth:`gitmem.api.Repository.doctor`)."""
    parts = path.split("/")
    return len(parts) == 3 and parts[0] == MEMORIES_DIR and not parts[1].startswith(".") \
        and parts[2].endswith(".md")


def named_by_id(path: str, memory_id: str) -> bool:
    """Whether the memory file ``path`` bears the file name of the id it holds (:func:`file_stem`). The store opens
    a memory by that name: ``list`` shows a file named otherwise, but ``show``, ``edit`` and ``forget`` cannot open
    it by its id, and the path of its hits would name a file that does not exist, so the index leaves it out
    (``doctor`` warns that the name does not match the id)."""
    return path.rsplit("/", 1)[-1].removesuffix(".md") == file_stem(memory_id)


def check_id(memory_id: str, *, new: bool = True) -> str:
    """Validate an id given by a user or a record (any printable text up to 200 characters); ``new``: for a
    memory being made (an empty one can be left out), else one being looked up."""
    if not isinstance(memory_id, str) or not memory_id.strip():
        raise ValidationError("'id' is empty", "give a non-empty id or leave it out to get a fresh one" if new
                              else "give the id of a memory; gitmem list shows them")
    value = unicodedata.normalize("NFC", memory_id.strip())
    if len(value) > 200 or any(unicodedata.category(ch).startswith("C") for ch in value):
        raise ValidationError(f"'id' is not usable: {memory_id[:60]!r}", "use up to 200 printable characters")
    if new and value in (".", ".."):  # a link to it would name the page above (the viewer, any URL)
        raise ValidationError(f"'id' is not usable: {value!r}", "use a name with a letter or digit in it")
    return value


def check_name(value: str, what: str = "name") -> str:
    """Validate a name that becomes a file or folder name (a wiki page, a project, a work, a character): refuse
    ``..``, path separators, absolute paths, NUL and other control characters, and reserved device names, so
    nothing derived from it can point outside its folder. Returns the name stripped and NFC-normalised."""
    text = unicodedata.normalize("NFC", value.strip()) if isinstance(value, str) else ""
    problem = ""
    if not text:
        problem = "is empty"
    elif any(unicodedata.category(ch) == "Cc" for ch in text):
        problem = "contains a NUL or control character"
    elif "/" in text or "\\" in text or text.startswith("~") or (len(text) > 1 and text[1] == ":"):
        problem = "contains a path separator or is an absolute path"
    elif ".." in text or text in (".",):
        problem = "contains '..'"
    elif text.split(".")[0].strip().lower() in _RESERVED:
        problem = "is a reserved device name"
    elif len(text) > 200:
        problem = "is longer than 200 characters"
    if problem:
        from gitmem.redact.engine import redact

        shown = redact(value).text if isinstance(value, str) else value  # a URL with its password, say: not echoed
        kind = " (and holds a secret)" if isinstance(value, str) and shown != value else ""
        raise ValidationError(f"{what} {shown!r} {problem}{kind}",
                              f"use letters, digits, '-', '_' or CJK characters for the {what}")
    return text


def project_dir(project: str) -> str:
    """The folder under ``memories/`` for a project id (``global`` for none)."""
    if not project:
        return GLOBAL_DIR
    stem = file_stem(project)
    return f"project-{stem}" if stem == GLOBAL_DIR else stem


#: frontmatter keys written even when empty
_ALWAYS = frozenset(field_names(write="always"))


def fields_table() -> str:
    """The fields of a memory as the Markdown table of ``docs/store.md`` (``python scripts/doc_tables.py``)."""
    written = {"always": "frontmatter", "set": "frontmatter, when set", "body": "body", "extra": "frontmatter"}
    redacted = {"scrub": "secrets replaced", "refuse": "refused if it holds one", "none": ""}
    lines = ["| field | meaning | written | redacted | merged by `sync` |", "|---|---|---|---|---|"]
    for f in MEMORY_FIELDS:
        meta = f.metadata
        lines.append(f"| `{f.name}` | {meta['doc']} | {written[meta['write']]} | "
                     f"{redacted[meta['redact']]} | "
                     f"{MERGE_RULES[meta['merge']]} |")
    return "\n".join(lines) + "\n"


def _as_str(value: Any, name: str) -> str:
    if value is None:
        return ""
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return _unicode(str(value), name)
    raise ValidationError(f"'{name}' must be text, not {type(value).__name__}", f"write {name}: <text>")


def _unicode(value: str, name: str) -> str:
    """``value``, refused when it cannot be written as UTF-8 (a lone surrogate, half of a cut emoji): it failed at
    the commit, a 500 from the HTTP API, where the same in the text was a clear refusal."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(f"'{name}' is not valid Unicode text (a lone surrogate: half of an emoji?)",
                              "pass UTF-8 text") from None
    return value


_LOWER_MARKER = re.compile(r"\[redacted:([a-z0-9-]{1,40})\]")


def _upper_marker(match: re.Match[str]) -> str:
    return f"[REDACTED:{match.group(1)}]"


def normalise_tags(value: Any) -> tuple[str, ...]:
    """Tags from a list or a comma-separated string: stripped, lowercased, unique, in order."""
    if value is None or value == "":
        return ()
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)):
        raise ValidationError("'tags' must be a list of words", "e.g. tags: [database, postgres]")
    tags: list[str] = []
    for item in items:
        if not isinstance(item, (str, int)) or isinstance(item, bool):
            raise ValidationError(f"tag {item!r} is not text", "tags are short words such as 'database'")
        _unicode(str(item), "tags")
        # a redaction marker keeps its case: lower-cased, the redactor no longer knew it and wrapped it again, one
        # more "]" a write ("api_key=[REDACTED:password]]")
        tag = _LOWER_MARKER.sub(_upper_marker, " ".join(str(item).split()).lower())
        if len(tag) > MAX_TAG_LENGTH:
            raise ValidationError(f"tag '{tag[:20]}…' is longer than {MAX_TAG_LENGTH} characters", "shorten it")
        if tag and tag not in tags:
            tags.append(tag)
    if len(tags) > MAX_TAGS:
        raise ValidationError(f"{len(tags)} tags given", f"use at most {MAX_TAGS}")
    return tuple(tags)


def _choice(value: Any, name: str, allowed: tuple[str, ...]) -> str:
    text = _as_str(value, name).strip().lower()
    if text not in allowed:
        raise ValidationError(f"unknown {name} {value!r}", f"use one of: {', '.join(allowed)}")
    return text


def check_importance(value: Any) -> int:
    try:  # true and false are not numbers here, though Python takes them for 1 and 0
        number = int(value) if not isinstance(value, bool | float) or (
            isinstance(value, float) and value.is_integer()) else None
    except (TypeError, ValueError):
        number = None
    if number is None or not 1 <= number <= 5:
        raise ValidationError(f"importance {value!r} is not allowed", "use a whole number from 1 to 5")
    return number


def check_text(text: Any, name: str = "text") -> str:
    """``text`` stripped, refused when it is not text, empty, holds a NUL or passes :data:`MAX_TEXT_BYTES`;
    ``name`` says what it is ("text" of a memory, "page text" of a wiki page) in the message."""
    what = f"the memory {name}" if name == "text" else f"the {name}"
    if not isinstance(text, str):
        raise ValidationError(f"{what} must be text", "give it as a string")
    value = text.strip()
    if not value:
        raise ValidationError(f"{what} is empty", "say what to remember, e.g. gitmem remember \"...\"" if name == "text"
                              else f"give the {name}, e.g. gitmem wiki ingest --title T \"...\"")
    if "\x00" in value:
        raise ValidationError(f"{what} contains a NUL byte", "remove binary data from the text")
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > MAX_TEXT_BYTES:
        raise ValidationError(
            f"{what} is {size} bytes, the limit is {MAX_TEXT_BYTES}",
            "store a short rule or fact and link to the long material",
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(f"{what} is not valid Unicode text", "pass UTF-8 text") from None
    return value


def split_body(body: str) -> tuple[str, str, str]:
    """Split a body into (text, why, how): trailing ``**Why:**`` / ``**How to apply:**`` lines are fields."""
    lines = body.strip().splitlines()
    why = how = ""
    while lines and (lines[-1].startswith(_WHY) or lines[-1].startswith(_HOW) or not lines[-1].strip()):
        line = lines.pop()
        if line.startswith(_WHY) and not why:
            why = line[len(_WHY):].strip()
        elif line.startswith(_HOW) and not how:
            how = line[len(_HOW):].strip()
        elif line.strip():
            lines.append(line)
            break
    return "\n".join(lines).strip(), why, how


def make_memory(
    text: str,
    *,
    id: str | None = None,
    type: str | None = None,
    category: str = "background",
    importance: Any = 3,
    tags: Any = (),
    scope: str | None = None,
    project: str = "",
    name: str = "",
    description: str = "",
    why: str = "",
    how: str = "",
    source: str = "cli",
    source_ref: str = "",
    created: Any = None,
    updated: Any = None,
    expires: Any = None,
) -> Memory:
    """Validate user input and build a :class:`Memory` (``**Why:**``/``**How to apply:**`` lines in the text
    become the ``why``/``how`` fields). Raises :class:`ValidationError` naming the bad field."""
    body, body_why, body_how = split_body(check_text(text))
    if not body:
        raise ValidationError("the memory text is empty", "put the rule or fact before the Why/How lines")
    project = _as_str(project, "project").strip()
    if project:  # it names the memory's folder: the surfaces refuse "../x" and the library must as well
        project = check_name(project, "project")
    scope_value = _choice(scope or ("project" if project else "global"), "scope", SCOPES)
    if scope_value != "global" and not project:
        raise ValidationError(f"scope '{scope_value}' needs a project", "pass --project ID (or use --scope global)")
    if scope_value == "global" and project:  # storing would drop the project without a word
        raise ValidationError(f"scope 'global' and project {project!r} contradict each other",
                              "pass only one of them")
    default_type = "project" if project else "user"
    created_at = parse_timestamp(created, "created") if created else utcnow()
    updated_at = parse_timestamp(updated, "updated") if updated else created_at
    expires_at = parse_timestamp(expires, "expires") if expires else None
    if expires_at is None and scope_value == "session":
        expires_at = created_at + SESSION_TTL
    memory = Memory(
        id=check_id(id) if id is not None else new_id(body),
        text=body,
        type=_choice(type or default_type, "type", TYPES),
        category=_choice(category, "category", CATEGORIES),
        importance=check_importance(importance),
        tags=normalise_tags(tags),
        scope=scope_value,
        project=project,
        name=" ".join(_as_str(name, "name").split())[:200],
        description=" ".join(_as_str(description, "description").split())[:500],
        why=" ".join((_as_str(why, "why") or body_why).split()),
        how=" ".join((_as_str(how, "how") or body_how).split()),
        source=_choice(source, "source", SOURCES),
        source_ref=_as_str(source_ref, "source_ref").strip()[:200],
        created=created_at,
        updated=updated_at,
        expires=expires_at,
    )
    return memory


def dumps(memory: Memory) -> str:
    """Serialise a memory to its file text (stable key order, UTF-8, Unix newlines)."""
    import frontmatter  # PyYAML and frontmatter load only when a file is written or read

    meta: dict[str, Any] = {}
    for key in FRONTMATTER_KEYS:
        value = memory.title if key == "name" else getattr(memory, key)
        if isinstance(value, datetime):
            value = format_time(value)
        elif isinstance(value, tuple):
            value = list(value)
        if key in _ALWAYS or value:
            meta[key] = value
    for key, value in memory.extra.items():
        meta.setdefault(key, value)
    body = memory.text
    trailer = [f"{_WHY} {memory.why}" if memory.why else "", f"{_HOW} {memory.how}" if memory.how else ""]
    trailer = [line for line in trailer if line]
    if trailer:
        body = body + "\n\n" + "\n".join(trailer)
    post = frontmatter.Post(body, **meta)
    text: str = frontmatter.dumps(post, sort_keys=False, allow_unicode=True, width=10_000)
    return text.replace("\r\n", "\n") + "\n"


def loads(text: str, path: str = "<memory>") -> Memory:
    """Parse a memory file. Raises :class:`DocumentError` naming ``path`` and what is wrong."""
    import frontmatter
    import yaml

    try:
        post = frontmatter.loads(text)
    except yaml.YAMLError as exc:
        reason = str(exc).splitlines()[0]
        raise DocumentError(f"{path}: broken YAML frontmatter: {reason}",
                            "fix the YAML between the --- lines") from None
    meta: dict[str, Any] = dict(post.metadata)
    if "id" not in meta:
        raise DocumentError(f"{path}: no 'id' in the frontmatter", "add an id: line or restore it from git history")
    try:
        schema = int(meta.get("schema_version", SCHEMA_VERSION))
        if schema > SCHEMA_VERSION:
            raise ValidationError(
                f"schema_version {schema} is newer than this gitmem ({SCHEMA_VERSION})", "upgrade gitmem"
            )
        known = {f.name for f in MEMORY_FIELDS}
        memory = make_memory(
            post.content,
            id=_as_str(meta["id"], "id"),
            type=meta.get("type"),
            category=meta.get("category", "background"),
            importance=meta.get("importance", 3),
            tags=meta.get("tags"),
            scope=meta.get("scope"),
            project=meta.get("project", ""),
            name=meta.get("name", ""),
            description=meta.get("description", ""),
            source=meta.get("source", "cli"),
            source_ref=meta.get("source_ref", ""),
            created=meta.get("created"),
            updated=meta.get("updated"),
            expires=meta.get("expires"),
        )
        deprecated = meta.get("deprecated", False)
        if not isinstance(deprecated, bool):
            raise ValidationError(f"'deprecated' must be true or false, not {deprecated!r}", "write true or false")
        return replace(
            memory,
            # a name equal to the derived title was written for readers, not set by the user
            name="" if memory.name == " ".join(first_line(memory.text).split())[:200] else memory.name,
            deprecated=deprecated,
            deprecated_reason=_as_str(meta.get("deprecated_reason"), "deprecated_reason"),
            superseded_by=_as_str(meta.get("superseded_by"), "superseded_by"),
            conflicted=bool(meta.get("conflicted", False)),
            schema_version=schema,
            extra={k: v for k, v in meta.items() if k not in known},
        )
    except ValidationError as exc:
        raise DocumentError(f"{path}: {exc.message}", exc.hint) from None
