"""The memory repository as a library: ``remember``, ``get``, ``list``, ``forget``, ``restore``, ``log``, ``import``.

Every write is exactly one commit with ``Gitmem-Op`` / ``Gitmem-Source`` trailers, made under the repository's
writer lock, with secrets redacted first. Reads go to the work tree.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from gitmem.config import Config
from gitmem.errors import DocumentError, NotFoundError, ValidationError
from gitmem.files.atomic import read_text_inside
from gitmem.git.messages import LogEntry, format_message
from gitmem.git.store import GitStore
from gitmem.redact.engine import redact, redact_value
from gitmem.store import document as docs
from gitmem.store.base import StoredRepo
from gitmem.store.document import Memory
from gitmem.store.importing import ImportResult, export_record, listed, record_to_memory, stable_id
from gitmem.store.layout import Issue, check_layout
from gitmem.text.counted import counted
from gitmem.text.records import replace

_MAX_TRAILER_IDS = 20


class MemoryRepo(StoredRepo):
    """A memory repository opened with an explicit :class:`~gitmem.config.Config`."""

    def __init__(self, config: Config, *, lock_timeout: float = 30.0) -> None:
        super().__init__(config, lock_timeout=lock_timeout)
        self.path: Path = self.git.path
        #: unreadable files met by the last :meth:`list`, as (path, reason)
        self.warnings: list[DocumentError] = []
        self.last_redaction: list[str] = []
        #: the memories the last :meth:`forget` of a compaction summary made active again
        self.last_unfolded: builtins.list[Memory] = []
        self._tag_redaction: list[str] = []

    def __repr__(self) -> str:
        return f"MemoryRepo({str(self.path)!r})"

    # -- reading ----------------------------------------------------------------------------------------
    def _memory_dirs(self) -> list[Path]:
        root = self.path / docs.MEMORIES_DIR
        if not root.is_dir():
            return []
        # a link (to a folder outside the repository, say) is never followed: doctor reports it
        return sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink() and not p.name.startswith("."))

    def _find(self, memory_id: str) -> Path | None:
        stem = docs.file_stem(docs.check_id(memory_id, new=False)) + ".md"
        for directory in self._memory_dirs():
            candidate = directory / stem
            if candidate.is_file() and not candidate.is_symlink():
                return candidate
        return None

    def _text(self, path: Path) -> str:
        return read_text_inside(self.path, path.relative_to(self.path).as_posix())

    def _read(self, path: Path) -> Memory:
        return docs.loads(self._text(path), path.relative_to(self.path).as_posix())

    def get(self, memory_id: str) -> Memory:
        """The memory with this id. Raises :class:`NotFoundError` if there is none."""
        path = self._find(memory_id)
        if path is None:
            raise NotFoundError(f"no memory with id '{memory_id}'", "list ids with: gitmem list")
        return self._read(path)

    def raw(self, memory_id: str) -> str:
        """The text of the memory file with this id as it is, for mending one that cannot be read as a memory
        (``gitmem edit`` of a file ``doctor`` names). Raises :class:`NotFoundError` if there is none, and
        :class:`DocumentError` when it is no UTF-8 text or a symbolic link."""
        path = self._find(memory_id)
        if path is None:
            raise NotFoundError(f"no memory with id '{memory_id}'", "list ids with: gitmem list")
        return self._text(path)

    def iter_files(self) -> Iterator[tuple[str, Memory | DocumentError]]:
        """Every memory file as (repo-relative path, memory or the error that stops it being read)."""
        for directory in self._memory_dirs():
            for path in sorted(directory.glob("*.md")):
                rel = path.relative_to(self.path).as_posix()
                try:
                    yield rel, self._read(path)
                except DocumentError as exc:
                    yield rel, exc

    def list(
        self,
        *,
        type: str | None = None,
        category: str | None = None,
        tag: str | None = None,
        project: str | None = None,
        deprecated: bool = False,
    ) -> builtins.list[Memory]:
        """Memories matching every given filter, newest first; deprecated ones only with ``deprecated=True``."""
        if type is not None and type not in docs.TYPES:
            raise ValidationError(f"unknown type {type!r}", f"use one of: {', '.join(docs.TYPES)}")
        if category is not None and category not in docs.CATEGORIES:
            raise ValidationError(f"unknown category {category!r}", f"use one of: {', '.join(docs.CATEGORIES)}")
        wanted_tag = tag.strip().lower() if tag else None
        self.warnings = []
        result: list[Memory] = []
        for _rel, item in self.iter_files():
            if isinstance(item, DocumentError):
                self.warnings.append(item)
                continue
            if (
                (item.deprecated and not deprecated)
                or (type and item.type != type)
                or (category and item.category != category)
                or (wanted_tag and wanted_tag not in item.tags)
                or (project is not None and item.project != project)
            ):
                continue
            result.append(item)
        result.sort(key=lambda m: (m.updated, m.id), reverse=True)
        return result

    def log(
        self, memory_id: str | None = None, *, op: str | None = None, source: str | None = None,
        limit: int | None = None,
    ) -> builtins.list[LogEntry]:
        """The audit trail: commits (newest first), optionally for one memory, one op or one source."""
        entries = self.git.log(limit=None if (op or source or memory_id) else limit)
        if memory_id is not None:
            # the commits that name it (Gitmem-Id: every gitmem write, whichever folder the file was in then,
            # before a move too) and the ones that touched its file as it is now (an edit by hand)
            found = self._find(memory_id)
            touched = {e.sha for e in self.git.log(paths=[found.relative_to(self.path).as_posix()])} if found \
                else set()
            entries = [e for e in entries if memory_id in e.ids or e.sha in touched]
            if not entries:
                raise NotFoundError(f"no memory with id '{memory_id}' in the history", "list ids with: gitmem list")
        if op:
            entries = [e for e in entries if e.op == op]
        if source:
            entries = [e for e in entries if e.source == source or e.source.split(":", 1)[0] == source]
        return entries[:limit] if limit else entries

    # -- writing ----------------------------------------------------------------------------------------
    def _author(self) -> str:
        return self.git.author(self.config.author)

    def _clean(self, memory: Memory) -> Memory:
        """Redact secrets in every field before the memory is written; remember what kinds were found.

        Free text (the fields declared ``redact="scrub"``: body, name, description, why, how, tags, reasons,
        unknown frontmatter keys) is redacted. Names that become file names (declared ``redact="refuse"``)
        cannot be redacted without changing what they name: an id derived from the text is derived again from
        the redacted text, and an id or a project given by the caller that holds a secret is refused with a
        :class:`ValidationError`. The commit helper checks again
        (:meth:`GitStore.commit`), so a field added later cannot slip through."""
        patterns = self.config.redaction.extra_patterns
        kinds: list[str] = []

        def scrub(value: str) -> str:
            if not value:
                return value
            result = redact(value, extra_patterns=patterns)
            kinds.extend(k for k in result.kinds if k not in kinds)
            return result.text

        def refuse(value: str, what: str) -> None:
            result = redact(value, extra_patterns=patterns) if value else None
            if result is not None and result.kinds:
                raise ValidationError(f"the {what} holds a secret ({', '.join(result.kinds)}): {result.text!r}",
                                      f"choose {'an' if what[0] in 'aeiou' else 'a'} {what} without it: it becomes a "
                                      "file name in git history")

        text = scrub(memory.text)
        memory_id = memory.id
        if docs.is_derived_id(memory_id, memory.text):
            if text != memory.text:
                memory_id = docs.new_id(text, suffix=memory_id[-6:])
        else:
            refuse(memory_id, "id")
        for name in docs.field_names(redact="refuse"):
            if name != "id":  # handled above: a derived id is derived again instead
                refuse(getattr(memory, name), name)
        extra = redact_value(memory.extra, extra_patterns=patterns) if memory.extra else (memory.extra, ())
        kinds.extend(k for k in extra[1] if k not in kinds)
        # every other field its declaration marks for scrubbing (``Memory``'s field metadata)
        scrubbed: dict[str, Any] = {name: tuple(scrub(t) for t in value) if isinstance(value, tuple) else scrub(value)
                                    for name in docs.field_names(redact="scrub") if name not in ("text", "extra")
                                    for value in [getattr(memory, name)]}
        cleaned = replace(memory, **scrubbed, id=memory_id, text=text, extra=extra[0])
        # the tags' secrets were redacted before the tags were lower-cased (_raw_tags): reported with the rest
        self.last_redaction = [*kinds, *(k for k in self._tag_redaction if k not in kinds)]
        self._tag_redaction = []
        return cleaned

    def commit(self, changes: Mapping[str, bytes | None], subject: str, op: str, source: str,
               ids: Iterable[str] = (), extra: Mapping[str, str | builtins.list[str]] | None = None,
               body: str = "") -> str:
        """Commit ``changes`` (path → content, ``None`` deletes) as the configured author; the one way every
        writer (memories, instincts, evolve, lifecycle, projects, wiki, writer) records a change, so the log reads
        the same whoever wrote it. The message is ``subject``, ``body`` and the trailers ``Gitmem-Op``,
        ``Gitmem-Source``, ``Gitmem-Id`` (``Gitmem-Count`` past 20 ids) and ``extra``. The caller holds
        :meth:`GitStore.locked`. Returns the new commit's sha ("" when nothing changed)."""
        id_list = list(ids)
        trailers: dict[str, str | list[str]] = {"Gitmem-Op": op, "Gitmem-Source": source}
        if len(id_list) <= _MAX_TRAILER_IDS:
            trailers["Gitmem-Id"] = id_list
        else:
            trailers["Gitmem-Count"] = str(len(id_list))
        trailers.update(extra or {})
        # redacted before format_message cuts the subject to 72 characters: a cut secret is no longer recognised
        subject = self.git.scrub_text(subject)
        return self.git.commit(changes, format_message(subject, trailers, body), self._author())

    @staticmethod
    def _source_label(memory: Memory) -> str:
        return f"{memory.source}:{memory.source_ref}" if memory.source_ref else memory.source

    def _raw_tags(self, value: Any) -> Any:
        """Tags redacted before they are lower-cased (a lower-cased AWS key is no longer recognised); the kinds
        found are kept in :attr:`_tag_redaction` for the next :meth:`_clean` to report."""
        patterns = self.config.redaction.extra_patterns

        def one(tag: str) -> str:
            result = redact(tag, extra_patterns=patterns)
            self._tag_redaction.extend(k for k in result.kinds if k not in self._tag_redaction)
            return result.text

        if isinstance(value, str):
            return one(value)
        if isinstance(value, (list, tuple)):
            return [one(t) if isinstance(t, str) else t for t in value]
        return value

    def remember(self, text: str, **fields: Any) -> Memory:
        """Store a new memory and commit it. Keyword fields are those of :func:`gitmem.store.document.make_memory`
        (``type``, ``category``, ``importance``, ``tags``, ``scope``, ``project``, ``why``, ``how``, ...)."""
        memory = self._new(text, fields)
        with self.git.locked():
            memory = self._free_id(memory, given=fields.get("id") is not None)
            self.commit({memory.path: docs.dumps(memory).encode()}, f"remember: {memory.title}", "add",
                        self._source_label(memory), [memory.id], body=_summary(memory))
        return memory

    def supersede(self, old_id: str, text: str, **fields: Any) -> Memory:
        """Store ``text`` as the memory that replaces ``old_id``, and deprecate that one as superseded by it, in one
        commit. The new memory holds where the old one held (its type, scope and project) unless ``fields`` (those
        of :meth:`remember`) say otherwise: a project's decision is replaced within that project."""
        with self.git.locked():
            old = self.get(old_id)
            if old.deprecated:
                raise ValidationError(f"memory '{old.id}' is deprecated already", "supersede a current memory")
            for name in ("type", "scope", "project"):
                fields.setdefault(name, getattr(old, name))
            memory = self._free_id(self._new(text, fields), given=False)
            replaced = self._clean(replace(old, deprecated=True, deprecated_reason=f"superseded by {memory.id}",
                                           superseded_by=memory.id, updated=docs.utcnow()))
            self.commit({memory.path: docs.dumps(memory).encode(), replaced.path: docs.dumps(replaced).encode()},
                        f"remember: {memory.title}", "add", self._source_label(memory), [memory.id, replaced.id],
                        body=f"{_summary(memory)}\n\nSupersedes {replaced.id}: {replaced.title}")
        return memory

    def _new(self, text: str, fields: dict[str, Any]) -> Memory:
        """The memory ``text`` and ``fields`` describe, redacted (tags as given are redacted before they are
        lower-cased)."""
        self._tag_redaction = []
        import inspect  # here: only a write pays for it

        allowed = set(inspect.signature(docs.make_memory).parameters) - {"text"}
        unknown = sorted(set(fields) - allowed)
        if unknown:  # a TypeError naming an internal function, before
            raise ValidationError(f"unknown field(s) {', '.join(unknown)}", f"allowed: {', '.join(sorted(allowed))}")
        if "tags" in fields:
            fields = {**fields, "tags": self._raw_tags(fields["tags"])}
        return self._clean(docs.make_memory(text, **fields))

    def _free_id(self, memory: Memory, *, given: bool) -> Memory:
        """``memory`` under an id no file has (the caller holds the lock): an id the caller ``given`` is refused when
        taken; a derived one draws another suffix (24 bits can collide in a large repository)."""
        if given:
            if self._find(memory.id) is not None:
                raise ValidationError(f"a memory with id '{memory.id}' already exists",
                                      "pick another id or edit that memory")
            return memory
        while self._find(memory.id) is not None:
            memory = replace(memory, id=docs.new_id(memory.text))
        return memory

    def commit_batch(
        self,
        memories: Iterable[Memory],
        *,
        subject: str,
        op: str,
        source: str,
        trailers: Mapping[str, str | builtins.list[str]] | None = None,
        body: str = "",
        merge: Callable[[Memory, Memory], Memory | None] | None = None,
        remove: Iterable[Memory] = (),
    ) -> tuple[str, builtins.list[Memory]]:
        """Write several memories (new or replacing the file with the same id) as one commit; the files of the
        memories in ``remove`` are deleted in the same commit (history keeps them).

        ``merge(old, new)`` decides what happens when a memory with that id exists: it returns the memory to
        write, or None to leave the old one alone (default: the new one replaces it, keeping ``created``).
        Returns (commit SHA or "" when nothing changed, the memories written)."""
        written: list[Memory] = []
        changes: dict[str, bytes | None] = {}
        removed = builtins.list(remove)
        with self.git.locked():
            for gone in removed:
                found = self._find(gone.id)
                if found is not None:
                    changes[found.relative_to(self.path).as_posix()] = None
            retitled: dict[str, str] = {}  # a title as the caller saw it → as it is stored (secrets redacted)
            for memory in memories:
                given, memory = memory, self._clean(memory)
                if given.title != memory.title:
                    retitled[given.title] = memory.title
                existing = self._find(memory.id)
                if existing is not None:
                    old = self._read(existing)
                    chosen = merge(old, memory) if merge else replace(memory, created=old.created)
                    if chosen is None:
                        continue
                    memory = self._clean(chosen)
                    old_rel = existing.relative_to(self.path).as_posix()
                    if old_rel != memory.path:
                        changes[old_rel] = None
                changes[memory.path] = docs.dumps(memory).encode()
                written.append(memory)
            sha = ""
            if changes:
                ids = [m.id for m in written] + [m.id for m in removed if m.id not in {w.id for w in written}]
                for raw, clean in retitled.items():  # "extract: <title>": a title cut at 80 characters may have
                    subject, body = subject.replace(raw, clean), body.replace(raw, clean)  # cut a key past knowing
                sha = self.commit(changes, subject, op, source, ids, extra=trailers, body=body)
        return sha, written

    def save(self, memory: Memory, *, op: str = "update", source: str = "cli", subject: str = "") -> Memory:
        """Write a changed memory back (its ``updated`` time is set now). Returns the memory as stored."""
        memory = self._clean(replace(memory, updated=docs.utcnow()))
        docs.loads(docs.dumps(memory), memory.path)  # validate the round trip before anything is written
        with self.git.locked():
            old = self._find(memory.id)
            if old is None:
                raise NotFoundError(f"no memory with id '{memory.id}'", "use remember to add a new one")
            self.commit(self._written(memory, old), subject or f"edit: {memory.title}", op, source, [memory.id])
        return memory

    def _written(self, memory: Memory, found: Path) -> dict[str, bytes | None]:
        """The changes that write ``memory`` back: at its path, and the file it was read from (``found``) removed
        when that is elsewhere (moved between projects, or a file put in the wrong folder by hand): a write never
        leaves a second copy behind."""
        changes: dict[str, bytes | None] = {memory.path: docs.dumps(memory).encode()}
        rel = found.relative_to(self.path).as_posix()
        if rel != memory.path:
            changes[rel] = None
        return changes

    def _unfolded(self, summary: Memory) -> tuple[builtins.list[Memory], dict[str, bytes | None]]:
        """The memories ``gitmem compact`` folded into ``summary``, made active again, and the changes that write
        them: forgetting a summary undoes the compaction (its members, deprecated for it, were otherwise lost to
        every search with it)."""
        from gitmem.store.memory import SUMMARY_TAG, compacted_into

        if SUMMARY_TAG not in summary.tags:
            return [], {}
        back: builtins.list[Memory] = []
        changes: dict[str, bytes | None] = {}
        for member in self.list(deprecated=True):
            if member.deprecated and member.superseded_by == summary.id and \
                    member.deprecated_reason == compacted_into(summary.id):
                found = self._find(member.id)
                if found is None:
                    continue
                again = replace(member, deprecated=False, deprecated_reason="", superseded_by="",
                                updated=docs.utcnow())
                back.append(again)
                changes.update(self._written(again, found))
        return back, changes

    def forget(self, memory_id: str, reason: str, *, purge: bool = False, superseded_by: str = "",
               source: str = "cli") -> Memory:
        """Deprecate a memory (the file stays, with ``deprecated: true`` and the reason), or with ``purge``
        delete its file; either way git history keeps every version. Forgetting a compaction summary makes the
        memories it summarised active again, in the same commit (:attr:`last_unfolded`)."""
        self.last_unfolded = []
        reason = " ".join(redact(reason or "", extra_patterns=self.config.redaction.extra_patterns).text.split())
        if not reason:
            raise ValidationError("a reason is required to forget a memory", "pass --reason \"why it is wrong\"")
        with self.git.locked():
            found = self._find(memory_id)
            if found is None:
                raise NotFoundError(f"no memory with id '{memory_id}'", "list ids with: gitmem list")
            rel = found.relative_to(self.path).as_posix()  # the file as it is, wherever it was put
            try:
                memory = self._read(found)
            except DocumentError as exc:
                if not purge:  # a deprecation rewrites the file, which cannot be read: say how to be rid of it
                    raise DocumentError(exc.message, f"{exc.hint}; or delete it: gitmem forget {memory_id} --purge "
                                        "--reason ...") from None
                self.commit({rel: None}, f"purge: {rel} (unreadable)", "purge", source, [memory_id],
                            extra={"Gitmem-Path": rel}, body=f"Reason: {reason}")
                return replace(docs.make_memory(f"(unreadable file {rel})", id=memory_id), deprecated=True,
                               deprecated_reason=reason)
            back, unfolding = self._unfolded(memory) if not memory.deprecated else ([], {})
            note = f"\n\nThe {len(back)} memories it summarised are active again." if back else ""
            if purge:
                self.commit({rel: None, **unfolding}, f"purge: {memory.title}", "purge", source,
                            [memory.id, *(m.id for m in back)], extra={"Gitmem-Path": rel},
                            body=f"Reason: {reason}{note}")
                self.last_unfolded = back
                return replace(memory, deprecated=True, deprecated_reason=reason)
            if memory.deprecated and not superseded_by:
                raise ValidationError(f"memory '{memory.id}' is already deprecated",
                                      "restore it first, or use --purge to delete the file")
            changed = self._clean(replace(memory, deprecated=True, deprecated_reason=reason,
                                          superseded_by=superseded_by or memory.superseded_by,
                                          updated=docs.utcnow()))
            self.commit({**self._written(changed, found), **unfolding}, f"forget: {changed.title}", "deprecate",
                        source, [changed.id, *(m.id for m in back)],
                        body=f"Reason: {changed.deprecated_reason}{note}")
            self.last_unfolded = back
        return changed

    def restore(self, memory_id: str, *, source: str = "cli") -> Memory:
        """Undo :meth:`forget`: clear the deprecation, or bring a purged file back from history."""
        with self.git.locked():
            path = self._find(memory_id)
            if path is not None:
                memory = self._read(path)
                if not memory.deprecated:
                    raise ValidationError(f"memory '{memory_id}' is not deprecated", "nothing to restore")
                restored = replace(memory, deprecated=False, deprecated_reason="", superseded_by="",
                                   updated=docs.utcnow())
                changes = self._written(restored, path)
            else:
                restored = self._from_history(memory_id)
                changes = {restored.path: docs.dumps(restored).encode()}
            self.commit(changes, f"restore: {restored.title}", "restore", source, [restored.id])
        return restored

    def _from_history(self, memory_id: str) -> Memory:
        for entry in self.git.log():
            if entry.op == "purge" and memory_id in entry.ids and entry.trailers.get("Gitmem-Path"):
                rel = entry.trailers["Gitmem-Path"][0]
                parent = self.git.read_head_file(rel, commit=_parent(self.git, entry.sha))
                if parent is not None:
                    memory = docs.loads(parent.decode("utf-8"), rel)
                    return replace(memory, deprecated=False, deprecated_reason="", updated=docs.utcnow())
        raise NotFoundError(f"no memory with id '{memory_id}', nor a purged one", "list ids with: gitmem list")

    def import_records(
        self,
        records: Iterable[Mapping[str, Any]],
        *,
        origin: str = "",
        progress: Callable[[int], None] | None = None,
    ) -> ImportResult:
        """Import memories from dicts (``text`` required; ids, dates and sources kept) in one commit.

        The whole import is refused, with the record number, if any record is invalid."""
        prepared: list[Memory] = []
        undated: set[str] = set()  # records without dates: an existing memory keeps its own
        seen: dict[str, int] = {}
        redacted = 0
        problems: list[str] = []  # every invalid record, said at once (nothing is imported then)
        for number, record in enumerate(records, start=1):
            if progress:
                progress(1)
            try:
                self._tag_redaction = []
                memory = self._clean(record_to_memory(record, self._raw_tags))
            except ValidationError as exc:  # with the values it takes ("unknown category 'fact'": the ones there
                # are), not a command's advice (an empty text's "gitmem remember …")
                fits = exc.hint and "gitmem " not in exc.hint
                problems.append(f"record {number}: {exc.message}" + (f" ({exc.hint})" if fits else ""))
                continue
            if record.get("id") is None:
                memory = replace(memory, id=stable_id(memory))
            if memory.id in seen:
                if record.get("id") is None:  # the same text twice, without ids: one memory
                    continue
                problems.append(f"record {number}: id '{memory.id}' already used by record {seen[memory.id]}")
                continue
            seen[memory.id] = number
            if "created" not in record and "updated" not in record:
                undated.add(memory.id)
            redacted += bool(self.last_redaction)
            prepared.append(memory)
        if problems:
            raise ValidationError(listed(problems), "fix these records and import again; nothing was imported")
        result = ImportResult(redacted=redacted)
        changes: dict[str, bytes | None] = {}
        ids: list[str] = []
        with self.git.locked():
            for memory in prepared:
                existing = self._find(memory.id)
                if existing is not None and memory.id in undated:
                    try:
                        old = self._read(existing)
                        memory = replace(memory, created=old.created, updated=old.updated)
                    except DocumentError:
                        pass
                content = docs.dumps(memory).encode()
                if existing is not None:
                    if existing.read_bytes() == content:
                        result.unchanged += 1
                        continue
                    old_rel = existing.relative_to(self.path).as_posix()
                    if old_rel != memory.path:
                        changes[old_rel] = None
                    result.updated += 1
                else:
                    result.added += 1
                changes[memory.path] = content
                ids.append(memory.id)
            if changes:
                label = f" from {origin}" if origin else ""
                result.commit = self.commit(
                    changes, f"import: {counted(len(ids), 'memory')}{label}", "ingest",
                    f"import:{origin}" if origin else "import", ids,
                    body=f"{result.added} added, {result.updated} updated, {result.unchanged} unchanged",
                )
        return result

    def export(self, *, deprecated: bool = True) -> Iterator[dict[str, Any]]:
        """Every memory as a dict that :meth:`import_records` accepts back; the files that cannot be read are in
        :attr:`warnings` once it is done."""
        self.warnings = []
        for _rel, item in self.iter_files():
            if isinstance(item, DocumentError):
                self.warnings.append(item)
            elif deprecated or not item.deprecated:
                yield export_record(item)

    def project_changed(self, project: str, source: str) -> str:
        """Called by :mod:`gitmem.projects.memory` after ``projects/<project>.md`` changed, so that what layers
        above derive from it can follow (:class:`gitmem.api.Repository` regenerates the project wiki's
        ``environment.md``); the commit SHA, "" when nothing changed. Here: nothing to do."""
        return ""

    # -- health -----------------------------------------------------------------------------------------
    def doctor(self) -> builtins.list[Issue]:
        """Check the repository: configuration, branch, every memory file, duplicate ids, ignore rules (the API's
        :meth:`gitmem.api.Repository.doctor` adds secrets left in history)."""
        issues = check_layout(self.git)
        for key in self.config.ignored:  # "gitmem.toml: recall.new_feature"
            where, _, name = key.partition(": ")
            issues.append(Issue("warning", where, f"unknown key '{name}' ignored: a newer gitmem's setting (upgrade "
                                                  "gitmem on this machine) or a typo (fix it)"))
        ids: dict[str, str] = {}
        count = 0
        for rel, item in self.iter_files():
            if isinstance(item, DocumentError):
                issues.append(Issue("error", rel, item.message + (f" ({item.hint})" if item.hint else "")))
                continue
            count += 1
            if item.path != rel:
                move = f"git -C {self.path} mv {rel} {item.path}"
                if not docs.named_by_id(rel, item.id):  # show, edit and forget open a memory by its id's file name
                    issues.append(Issue("warning", rel, f"its id '{item.id}' names the file {item.path}: show, edit "
                                        f"and forget cannot open it by that id, and search leaves it out ({move})"))
                else:
                    issues.append(Issue("warning", rel, f"it belongs in {item.path} (its project); gitmem finds it "
                                        f"by its file name meanwhile ({move})"))
            if item.id in ids:
                issues.append(Issue("error", rel, f"id '{item.id}' is also used by {ids[item.id]}"))
            ids.setdefault(item.id, rel)
        issues.append(Issue("ok", "memories/", f"{counted(count, 'memory')} readable"))
        return issues


def _parent(git: GitStore, sha: str) -> bytes | None:
    with git.open() as repo:
        parents = repo[sha.encode()].parents  # type: ignore[attr-defined]
        return parents[0] if parents else None


def _summary(memory: Memory) -> str:
    """The body line of a memory's commit: what kind of memory it is."""
    return f"{memory.type} · {memory.category} · importance {memory.importance}"
