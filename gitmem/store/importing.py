"""What an import reads: a JSONL file's records (:func:`read_jsonl`) and each record as a memory
(:func:`record_to_memory`), refused with the reason before anything is written; :class:`ImportResult` is what
:meth:`gitmem.store.memories.MemoryRepo.import_records` did. ``gitmem export`` writes records that read back."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitmem.errors import GitmemError, ValidationError
from gitmem.store import document as docs
from gitmem.store.document import Memory
from gitmem.text.records import replace

#: fields an import record may carry (every field of a memory, and the ``path`` ``gitmem export`` writes so an
#: export can be imported again); anything else is refused so a typo is not silently dropped
IMPORT_FIELDS = frozenset({f.name for f in docs.MEMORY_FIELDS} | {"path"})


def export_record(memory: Memory) -> dict[str, Any]:
    """The record ``gitmem export`` writes for ``memory`` and :func:`record_to_memory` reads back: its fields, and
    the frontmatter keys gitmem does not know under ``extra`` (as top-level fields they read as typos), with YAML
    dates and times as ISO 8601 strings (JSON has no date)."""
    record = memory.to_dict()
    if memory.extra:
        for key in memory.extra:
            record.pop(key, None)
        record["extra"] = _plain(memory.extra)
    return record


def _plain(value: Any) -> Any:
    from datetime import date

    if isinstance(value, date):  # a datetime too
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


@dataclass
class ImportResult:
    """What an import did: counts and the commit (empty when nothing changed)."""

    added: int = 0
    updated: int = 0
    unchanged: int = 0
    commit: str = ""
    redacted: int = 0


def record_to_memory(record: Mapping[str, Any], clean_tags: Callable[[Any], Any]) -> Memory:
    """The memory an import record describes (``clean_tags``: the tags as given, redacted before they are
    lower-cased); raises :class:`ValidationError` saying what is wrong with the record."""
    if not isinstance(record, Mapping):
        raise ValidationError("a record must be a JSON object", 'e.g. {"text": "..."}')
    unknown = sorted(set(record) - IMPORT_FIELDS)
    if unknown:
        raise ValidationError(f"unknown field(s) {', '.join(unknown)}",
                              f"allowed: {', '.join(sorted(IMPORT_FIELDS - {'path', 'schema_version'}))}; keys of "
                              "your own go under \"extra\"")
    if "text" not in record:
        raise ValidationError("'text' is missing", 'every record needs {"text": "..."}')
    source = record.get("source")
    source_ref = record.get("source_ref") or ""
    if source and str(source) not in docs.SOURCES:
        source_ref = str(source)
        source = "import"
    memory = docs.make_memory(
        record["text"],
        id=record.get("id"),
        type=record.get("type"),
        category=record.get("category") or "background",
        importance=record.get("importance", 3),
        tags=clean_tags(record.get("tags")),
        scope=record.get("scope"),
        # a project given by hand ("../x") is refused as ``remember --project`` refuses it
        project=docs.check_name(given, "project") if isinstance(given := record.get("project"), str) and given
        else given or "",
        name=record.get("name") or "",
        description=record.get("description") or "",
        why=record.get("why") or "",
        how=record.get("how") or "",
        source=source or "import",
        source_ref=source_ref,
        created=record.get("created"),
        updated=record.get("updated"),
        expires=record.get("expires"),
    )
    deprecated = record.get("deprecated", False)
    if not isinstance(deprecated, bool):
        raise ValidationError("'deprecated' must be true or false", "use a JSON boolean")
    extra = record.get("extra") or {}
    if not isinstance(extra, Mapping):
        raise ValidationError("'extra' must be a JSON object", "give the frontmatter keys gitmem does not know as "
                                                               '{"extra": {"owner": "alice"}}')
    clash = sorted(set(extra) & {f.name for f in docs.MEMORY_FIELDS})  # read back as the field, not as extra
    if clash:
        raise ValidationError(f"'extra' holds the field(s) {', '.join(clash)}", "give them as fields of the record")
    return replace(memory, deprecated=deprecated,
                   deprecated_reason=str(record.get("deprecated_reason") or ""),
                   superseded_by=str(record.get("superseded_by") or ""), extra=dict(extra))


def stable_id(memory: Memory) -> str:
    """The id of an import record that has none: derived from the memory as stored (redacted: no hash of a secret
    in a file name) and where it holds, so the same record imported again is the same memory (a random suffix
    made every re-import of a file without ids add all of it a second time)."""
    import hashlib

    digest = hashlib.sha1(f"{memory.scope}\0{memory.project}\0{memory.text}".encode()).hexdigest()[:6]
    return docs.new_id(memory.text, suffix=digest)


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """Records of a JSONL file (a UTF-8 byte order mark allowed); after the last one, a :class:`ValidationError`
    names every bad line, so one run shows all there is to fix (nothing is imported from a file with one)."""
    import json

    try:
        handle = path.open("rb")
    except OSError as exc:
        raise GitmemError(f"cannot read {path}: {exc.strerror}", "check the file name") from None
    problems: list[str] = []
    with handle:
        for number, raw in enumerate(handle, start=1):
            try:
                # utf-8-sig: editors on Windows start a UTF-8 file with a byte order mark
                line = raw.decode("utf-8-sig" if number == 1 else "utf-8").strip()
            except UnicodeDecodeError:
                problems.append(f"line {number}: not UTF-8")
                continue
            if not line:
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                problems.append(f"line {number}: not valid JSON ({exc.msg} at column {exc.colno})")
                continue
            except RecursionError:
                problems.append(f"line {number}: JSON nested too deeply")
                continue
            if not isinstance(value, dict):
                problems.append(f"line {number}: not a JSON object")
                continue
            yield value
    if problems:
        raise ValidationError(f"{path}: {listed(problems)}", 'write one JSON object per line, e.g. {"text": "..."}; '
                                                           "nothing was imported")


def listed(problems: list[str], shown: int = 5) -> str:
    """The first ``shown`` problems, then how many more there are (one line)."""
    more = len(problems) - shown
    return "; ".join(problems[:shown]) + (f"; and {more} more" if more > 0 else "")
