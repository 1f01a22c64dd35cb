"""What the MCP tools, the HTTP API and the web viewer answer with, built once on :class:`~gitmem.api.Repository`.

A :class:`MemoryService` holds one open repository (so the search index and the embedding model stay warm
between requests) and serialises access to it with a lock: the index refreshes itself from git on every search
and is not meant to be refreshed by two threads at once. Writes are serialised across processes by the
repository's own lock as usual.

Every function returns plain JSON-friendly data; each door only adds its transport.
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from gitmem.api import Repository
from gitmem.errors import GitmemError, NotFoundError, ValidationError
from gitmem.git.messages import LogEntry
from gitmem.store import document as docs
from gitmem.store.document import Memory, check_name, first_line
from gitmem.store.memories import _parent
from gitmem.text.tokens import count_tokens

T = TypeVar("T")
#: fields ``remember`` accepts from a request besides ``text`` (the CLI's options)
REMEMBER_FIELDS = ("type", "category", "importance", "tags", "scope", "project", "name", "why", "how", "id")
MAX_DIFF_LINES = 200


def age(when: datetime, now: datetime | None = None) -> str:
    """A short age such as ``5m``, ``3h``, ``12d``, ``4mo`` or ``2y``."""
    seconds = max(0, int(((now or datetime.now(UTC)) - when).total_seconds()))
    for unit, size in (("y", 365 * 86400), ("mo", 30 * 86400), ("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def iso(timestamp: int) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class HistoryEntry:
    """One commit that touched a memory, with the change it made to the memory's file."""

    entry: LogEntry
    diff: str = ""
    added: int = 0
    removed: int = 0

    def to_dict(self, *, with_diff: bool = True) -> dict[str, Any]:
        e = self.entry
        data: dict[str, Any] = {"commit": e.sha, "date": iso(e.time), "author": e.author, "op": e.op,
                                "source": e.source, "subject": e.subject,
                                "summary": f"+{self.added} -{self.removed} lines"}
        if with_diff:
            data["diff"] = self.diff
        return data


@dataclass
class Retrieved:
    """Ranked memories cut to a token budget."""

    memories: list[dict[str, Any]]
    tokens: int
    budget: int
    left_out: int = 0
    notice: str = ""


def _used(repo: Repository, ids: list[str]) -> None:
    """Count the memories an agent was given over MCP or HTTP as used, as the hooks count theirs: ``gitmem gc``
    retires low-importance memories no one used, and an agent that reaches gitmem only over MCP (Codex, Gemini,
    OpenCode) had every memory it read counted as unused. A repository this user cannot write stays uncounted."""
    from gitmem.store.usage import bump_usage

    if ids:
        with suppress(OSError):
            bump_usage(repo.path, ids)


class MemoryService:
    """One warm repository shared by every request of a server process."""

    def __init__(self, repo: Repository, *, project: str = "") -> None:
        self.repo = repo
        #: the project a wiki request without one means (the entry point's working directory's project)
        self.project = project
        self._lock = threading.RLock()

    @contextmanager
    def locked(self) -> Iterator[Repository]:
        with self._lock:
            yield self.repo

    def run(self, func: Callable[[Repository], T]) -> T:
        """Call ``func`` with the repository while no other request uses it."""
        with self._lock:
            return func(self.repo)

    # -- reading ----------------------------------------------------------------------------------------
    def search(self, query: str, *, k: int = 10, type: str | None = None, category: str | None = None,
               tags: list[str] | None = None, project: str | None = None,
               include_deprecated: bool = False) -> list[dict[str, Any]]:
        """The best memories for ``query``, one row each: id, title, kind, age, a one-line snippet, the whole text
        with its why and how, and what reading that costs in tokens (each door picks what it shows)."""
        if not query.strip():
            raise ValidationError("the search query is empty", "say what to look for, e.g. 'database'")
        with self.locked() as repo:
            hits = repo.search(query, k=k, type=type, category=category, tags=tags or None, project=project,
                               include_deprecated=include_deprecated)
            now = datetime.now(UTC)
            _used(repo, [h.id for h in hits if not h.memory.deprecated])
            return [{"id": h.id, "title": h.memory.title, "type": h.memory.type, "category": h.memory.category,
                     "importance": h.memory.importance, "project": h.memory.project,
                     "age": age(h.memory.updated, now), "snippet": first_line(" ".join(h.snippet.split()), 160),
                     "text": full_text(h.memory), "tokens": count_tokens(full_text(h.memory)),
                     "score": round(h.score, 4),
                     "deprecated": h.memory.deprecated} for h in hits]

    def get(self, memory_id: str) -> Memory:
        with self.locked() as repo:
            memory = repo.get(memory_id)
            _used(repo, [memory.id])
            return memory

    def list_memories(self, **filters: Any) -> list[Memory]:
        if filters.get("project"):  # "../.." is refused as every other route refuses it, not an empty list
            filters["project"] = check_name(filters["project"], "project")
        with self.locked() as repo:
            return repo.list(**filters)

    def retrieve(self, query: str, *, top_k: int = 10, token_budget: int | None = None, project: str | None = None,
                 explain: bool = False) -> Retrieved:
        """The best ``top_k`` memories for ``query`` in score order, as many as fit in ``token_budget`` tokens
        (default: the configured recall budget); a memory that does not fit is left out, smaller ones after it
        may still fit."""
        if not query.strip():
            raise ValidationError("the query is empty", "say what to look for, e.g. query=database")
        with self.locked() as repo:
            budget = token_budget if token_budget is not None else repo.config.recall.budget
            if budget <= 0:
                raise ValidationError(f"token_budget {budget} is not positive", "give a number of tokens, e.g. 800")
            index = repo.index()
            hits = index.search(query, k=top_k, project=project or None, related_only=True)
            rows: list[dict[str, Any]] = []
            used = left_out = 0
            for hit in hits:
                memory = hit.memory
                cost = count_tokens(full_text(memory))
                if used + cost > budget:
                    left_out += 1
                    continue
                used += cost
                row: dict[str, Any] = {"id": hit.id, "text": memory.text, "score": round(hit.score, 6),
                                       "tokens": cost, "title": memory.title, "type": memory.type,
                                       "category": memory.category, "importance": memory.importance,
                                       "tags": list(memory.tags), "project": memory.project, "why": memory.why,
                                       "how": memory.how, "updated": memory.to_dict()["updated"],
                                       # a past state a question about order brings back: say what replaced it
                                       **({"superseded_by": memory.superseded_by} if memory.deprecated else {})}
                if explain:
                    row["explanation"] = {k: round(v, 6) for k, v in hit.parts.items()}
                rows.append(row)
            _used(repo, [row["id"] for row in rows])
            return Retrieved(rows, used, budget, left_out, index.notice or "")

    def history(self, memory_id: str, *, limit: int | None = None) -> list[HistoryEntry]:
        """The commits of one memory, newest first, each with the diff of the memory's file."""
        with self.locked() as repo:
            entries = repo.log(memory_id, limit=limit)
            try:
                path: str | None = repo.get(memory_id).path
            except NotFoundError:  # purged: the file is gone from the work tree, the trailers name it
                path = next((e.trailers["Gitmem-Path"][0] for e in entries if e.trailers.get("Gitmem-Path")), None)
            result = []
            for entry in entries:
                result.append(self._with_diff(repo, entry, path))
            return result

    @staticmethod
    def _with_diff(repo: Repository, entry: LogEntry, path: str | None) -> HistoryEntry:
        if path is None:
            return HistoryEntry(entry)
        after = repo.git.read_head_file(path, commit=entry.sha.encode())
        parent = _parent(repo.git, entry.sha)
        before = repo.git.read_head_file(path, commit=parent) if parent else None
        old = (before or b"").decode("utf-8", "replace").splitlines()
        new = (after or b"").decode("utf-8", "replace").splitlines()
        lines = list(difflib.unified_diff(old, new, f"a/{path}", f"b/{path}", lineterm="", n=1))
        added = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
        removed = sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
        if len(lines) > MAX_DIFF_LINES:
            lines = [*lines[:MAX_DIFF_LINES], f"... {len(lines) - MAX_DIFF_LINES} more lines"]
        return HistoryEntry(entry, "\n".join(lines), added, removed)

    def recall(self, cwd: str | None, *, budget: int | None = None, query: str | None = None) -> dict[str, Any]:
        """The block a session started in ``cwd`` would get (usage counters are bumped as for a real session)."""
        where = Path(cwd) if cwd else Path.home()
        if not where.is_dir():
            raise ValidationError(f"{where} is not a directory", "pass the code project's folder as cwd")
        with self.locked() as repo:
            result = repo.recall(cwd=where, budget=budget, query=query)
        return {"text": result.text, "tokens": result.tokens, "budget": result.budget, "query": result.query,
                "project": result.project, "ids": result.ids, "left_out": result.left_out}

    def session_block(self, cwd: str, paths: list[str]) -> dict[str, Any]:
        """The session-start block the hook would compute in-process for ``cwd`` and its hot ``paths``
        (:func:`gitmem.agents.claude.inputs.block_of` of the same recall; usage counters are bumped as for a real
        session)."""
        from gitmem.agents.claude.inputs import block_of

        where = Path(cwd)
        if not where.is_dir():
            raise ValidationError(f"{where} is not a directory", "pass the code project's folder as cwd")
        with self.locked() as repo:  # as in the hook: the query only is embedded, the warm-up does the rest
            result = repo.recall(cwd=where, paths=paths, embed_missing=False)
        block = block_of(result)
        return {"text": block.text, "query": block.query, "ids": block.ids, "more": block.more,
                "avoid": block.avoid, "pending": result.vectors_missing, "parts": [list(p) for p in block.parts]}

    def prompt_block(self, prompt: str, *, project: str, seen: list[str], previous: list[str],
                     seen_parts: Sequence[tuple[str, int]] = ()) -> dict[str, Any]:
        """The memories a prompt brings in, as the prompt hook would compute them in-process
        (:func:`gitmem.briefing.prompt.prompt_recall`): ``ids`` of those shown whole, ``parts`` (``[id, n]``) of
        the long ones shown by their part ``n``."""
        from gitmem.briefing.block import given
        from gitmem.briefing.prompt import prompt_recall

        with self.locked() as repo:
            text, hits = prompt_recall(repo, prompt, project=project, seen=seen, previous=previous,
                                       seen_parts=seen_parts)
        whole, parts = given(hits)
        return {"text": text, "ids": whole, "parts": [list(p) for p in parts]}

    def wiki_project(self, project: str | None) -> str:
        """``project``, else the service's default project; an error saying what to pass when neither is set."""
        chosen = (project or "").strip() or self.project
        if not chosen:
            raise ValidationError("no project given for the wiki", "pass the project id, e.g. project=my-app")
        return chosen

    def wiki_projects(self) -> list[dict[str, Any]]:
        """The projects that have a wiki, each with how many pages it holds (generated ones left out)."""
        from gitmem.store.wikipage import WIKI_DIR

        with self.locked() as repo:
            root = repo.path / WIKI_DIR
            names = sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
            return [{"project": name, "pages": len(repo.wiki(name).pages())} for name in names]

    def wiki_query(self, query: str, *, project: str | None = None, k: int = 10, category: str | None = None,
                   tags: list[str] | None = None) -> dict[str, Any]:
        """Search over a project's wiki pages, best first (what ``gitmem wiki query --json`` prints)."""
        if not query.strip():
            raise ValidationError("the wiki query is empty", "say what to look for, e.g. 'deploy'")
        name = self.wiki_project(project)
        with self.locked() as repo:
            hits = repo.wiki(name).query(query, k=k, category=category, tags=tuple(tags or ()))
        return {"project": name, "results": [h.to_dict() for h in hits]}

    def wiki_ingest(self, title: str, text: str, *, project: str | None = None, category: str | None = None,
                    tags: list[str] | None = None, confidence: str | None = None, sources: list[str] | None = None,
                    source: str = "api") -> dict[str, Any]:
        """Add ``text`` to the wiki page for ``title`` as ``gitmem wiki ingest`` does (a new page, or a new
        section of the existing one; redacted; one commit)."""
        name = self.wiki_project(project)
        with self.locked() as repo:
            result = repo.wiki(name).ingest(title, text, category=category, tags=tags or (),
                                            confidence=confidence, sources=sources or (), source=source)
        return {"project": name, **result.to_dict()}

    # -- writing ----------------------------------------------------------------------------------------
    def remember(self, text: str, *, source: str = "api", reuse_same_text: bool = False,
                 **fields: Any) -> dict[str, Any]:
        """Store one memory as one commit (validated and redacted like the CLI's ``remember``).

        A ``project`` given is checked like the wiki's (:func:`~gitmem.store.document.check_name`): a value such
        as ``../../evil`` is refused rather than stored under a slug of it; with ``scope`` global it is refused as
        ``gitmem remember --scope global --project`` is (storing would drop the project without a word). With
        ``reuse_same_text`` (the MCP tool: an agent retries a call whose answer it lost) an active memory whose
        text is the same, once redacted and with its white space folded, in the same scope and project is returned
        instead of a second copy: ``commit`` is then empty and ``existing`` true."""
        unknown = sorted(set(fields) - set(REMEMBER_FIELDS))
        if unknown:
            raise ValidationError(f"unknown field(s) {', '.join(unknown)}", f"allowed: {', '.join(REMEMBER_FIELDS)}")
        given = {k: v for k, v in fields.items() if v is not None}
        if given.get("scope") == "global" and str(given.get("project") or "").strip():
            # checked here, where the MCP tool and the HTTP API both pass, so both refuse it in the same words
            raise ValidationError("scope global and project contradict each other", "pass only one of them")
        if isinstance(given.get("project"), str) and given["project"].strip():
            given["project"] = check_name(given["project"], "project")
        with self.locked() as repo, repo.git.locked():  # the check and the commit under one writer lock
            if reuse_same_text and given.get("id") is None:
                same = _same_text(repo, text, source, given)
                if same is not None:
                    return {"id": same.id, "commit": "", "path": same.path, "redacted": list(repo.last_redaction),
                            "existing": True}
            memory = repo.remember(text, source=source, **given)
            data = {"id": memory.id, "commit": (repo.git.head() or b"").decode(), "path": memory.path,
                    "redacted": list(repo.last_redaction)}
            return {**data, "existing": False} if reuse_same_text else data

    def forget(self, memory_id: str, reason: str, *, source: str = "api") -> dict[str, Any]:
        """Deprecate a memory (one commit with the reason)."""
        with self.locked() as repo:
            memory = repo.forget(memory_id, reason, source=source)
            return {"id": memory.id, "deprecated": True, "reason": memory.deprecated_reason,
                    "commit": (repo.git.head() or b"").decode()}

    def restore(self, memory_id: str, *, source: str = "api") -> dict[str, Any]:
        """Make a deprecated memory active again (one commit)."""
        with self.locked() as repo:
            memory = repo.restore(memory_id, source=source)
            return {"id": memory.id, "deprecated": False, "commit": (repo.git.head() or b"").decode()}


def _same_text(repo: Repository, text: str, source: str, fields: dict[str, Any]) -> Memory | None:
    """The active memory that storing ``text`` with ``fields`` would repeat: the same text as it would be
    stored (parsed, then redacted; white space folded) in the same scope and project, else None. An exact match
    on purpose: a near-duplicate (``gitmem remember --auto``'s similarity check) may be a new fact with another
    value, which a plain remember must store. Sets ``repo.last_redaction`` as storing it would."""
    # parsed (Why/How lines split off, scope and project settled) and redacted by remember's own step
    wanted = repo._new(text, {"source": source, **fields})
    flat = " ".join(wanted.text.split())
    now = docs.utcnow()
    # a memory remembered with this text got an id derived from it (its slug and 6 hex digits) in the folder of
    # its project: only those few files are read, not the whole repository (seconds at 10,000 memories)
    folder = (repo.path / wanted.path).parent
    for path in sorted(folder.glob(f"{docs.id_slug(wanted.text)}-*.md")):
        if not docs.is_derived_id(path.stem, wanted.text):
            continue
        try:
            memory = repo.get(path.stem)
        except GitmemError:  # unreadable or not a memory file: doctor reports it, remember stores a new one
            continue
        if (not memory.deprecated and memory.project == wanted.project and memory.scope == wanted.scope
                and (memory.expires is None or memory.expires > now) and " ".join(memory.text.split()) == flat):
            return memory
    return None


def full_text(memory: Memory) -> str:
    """What an agent reads when it asks for the whole memory: its text with the why and how."""
    parts = [memory.text]
    if memory.why:
        parts.append(f"Why: {memory.why}")
    if memory.how:
        parts.append(f"How to apply: {memory.how}")
    return "\n".join(parts)


def memory_view(memory: Memory, *, detailed: bool = True) -> dict[str, Any]:
    """A memory for a reader: concise (text, why, how and the fields that matter) or every frontmatter field."""
    if detailed:
        return memory.to_dict()
    data = {"id": memory.id, "title": memory.title, "type": memory.type, "category": memory.category,
            "importance": memory.importance, "text": memory.text}
    for key in ("why", "how", "project"):
        if getattr(memory, key):
            data[key] = getattr(memory, key)
    if memory.tags:
        data["tags"] = list(memory.tags)
    if memory.deprecated:
        data["deprecated_reason"] = memory.deprecated_reason
    return data
