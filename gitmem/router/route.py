"""``gitmem remember --auto``: decide where a finding belongs, check it against what is stored, store it there.

Rules decide first (:mod:`gitmem.router.rules`); when the optional model command of :mod:`gitmem.learn.modelreview` is
configured (``local/learning.toml``) and the rules fell back to a plain background memory, the model may pick
another surface (within the same daily budget). Then, before anything is written:

- a **duplicate** (the same fact already stored: a memory or directive with a cosine similarity of word and CJK
  pair counts >= 0.9, a project note, a wiki page that holds the text, a notepad note) stores nothing and names
  what holds it;
- a **conflict** (same subject, another value: similarity >= 0.5 with opposite polarity or a swapped choice, or
  the same words with other numbers, versions or code values) stores nothing either and shows both, unless
  ``supersede`` is given: then the new memory is stored and the old one deprecated as superseded by it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gitmem.errors import ValidationError
from gitmem.learn.dedup import conflicts_with
from gitmem.router import notepad
from gitmem.router.rules import SURFACES, Route, route
from gitmem.store import document as docs
from gitmem.text.overlap import similarity

if TYPE_CHECKING:
    from gitmem.store.memories import MemoryRepo

DUPLICATE_ABOVE = 0.9
MODEL_PROMPT = """Decide where a note for a coding agent's long-term memory belongs. Answer with JSON only:
{"surface": "memory|project|wiki|directive|notepad", "reason": "..."}. memory: a durable fact, decision or
preference; project: the code project's stack, commands, ports, environment; wiki: long or structured text,
architecture, patterns, debugging stories; directive: a standing instruction to always/never do something;
notepad: scratch for the next few turns only.

Note:
"""


@dataclass
class RouteResult:
    """The decision, what it was checked against, and what was stored (``id``/``page``) or why nothing was."""

    surface: str
    reason: str
    stored: bool = False
    id: str = ""
    page: str = ""
    duplicate_of: str = ""
    conflict: dict[str, str] = field(default_factory=dict)
    superseded: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"surface": self.surface, "reason": self.reason, "stored": self.stored, **self.details}
        for key in ("id", "page", "duplicate_of", "superseded"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        if self.conflict:
            out["conflict"] = self.conflict
        return out


def _model_route(repo: MemoryRepo, text: str) -> Route | None:
    """The model's surface when the command is configured and answers well, else None."""
    import json
    import subprocess

    from gitmem.learn.modelreview import _load_json, _spend, load_settings

    settings = load_settings(repo.path)
    if not settings.enabled or not _spend(repo.path, settings.semantic_daily_budget, docs.utcnow()):
        return None
    try:
        proc = subprocess.run(list(settings.semantic_command), input=MODEL_PROMPT + text[:2000], text=True,
                              capture_output=True, timeout=settings.semantic_timeout, check=False)
        answer = _load_json(proc.stdout) if proc.returncode == 0 else None
        if isinstance(answer, dict) and isinstance(answer.get("result"), str):
            answer = _load_json(answer["result"])
    except (OSError, subprocess.TimeoutExpired, ValueError, json.JSONDecodeError):
        return None
    if not isinstance(answer, dict) or answer.get("surface") not in SURFACES or answer.get("surface") == "memory":
        return None
    surface = str(answer["surface"])
    reason = f"model: {str(answer.get('reason') or surface)[:200]}"
    if surface == "notepad":
        return Route(surface, reason, section="priority")
    if surface == "directive":
        return Route(surface, reason, category="constraint", importance=4, priority="normal")
    return Route(surface, reason, category="reference" if surface == "wiki" else "")


class Router:
    """Routes findings for one project (``""``: none known) of a memory repository.

    ``memory_project`` is where a memory or a directive goes when it differs from the project the wiki, the
    project notes and the notepad use: ``gitmem remember`` makes a memory global outside a code project, where
    the wiki and the hooks' notepad go by the folder's name. None: ``project``."""

    def __init__(self, repo: MemoryRepo, project: str = "", *, memory_project: str | None = None) -> None:
        self.repo = repo
        self.project = docs.check_name(project, "project") if project else ""
        self.owner = self.project if memory_project is None else \
            docs.check_name(memory_project, "project") if memory_project else ""
        """the project of the memories and directives this router stores ("" global)"""
        self.local = repo.path / "local"

    def decide(self, text: str, *, model: bool = True) -> Route:
        decided = route(text)
        if model and decided.surface == "memory" and decided.category == "background":
            return _model_route(self.repo, text) or decided
        return decided

    # -- what is stored already ------------------------------------------------------------------------
    def _memories(self) -> list[docs.Memory]:
        return self.repo.list(project=self.owner) + (self.repo.list(project="") if self.owner else [])

    def _notes(self) -> list[str]:
        from gitmem.projects import memory as projects

        pf = projects.read(self.repo.path, self.project) if self.project else None
        lines = (pf.sections.get("Notes", "") if pf else "").splitlines()
        return [re.sub(r"^- (?:\d{4}-\d\d-\d\d: )?", "", ln.strip()) for ln in lines if ln.strip().startswith("- ")]

    def check(self, text: str, decided: Route) -> tuple[str, dict[str, str]]:
        """(what already holds this fact or "", the conflicting stored fact as {"id"/"note", "text"} or {})."""
        from gitmem.text.directives import directive_key

        flat = " ".join(text.split())
        if decided.surface == "notepad":
            notes = notepad.read(self.local, self.project or "global")[decided.section]
            same = next((n for n in notes if similarity(flat, n["text"]) >= DUPLICATE_ABOVE), None)
            return (f"notepad:{decided.section}" if same else ""), {}
        if decided.surface == "wiki" and self.project:
            from gitmem.wiki.store import Wiki

            for page in Wiki(self.repo, self.project).pages():
                if flat in " ".join(page.body.split()):
                    return f"wiki:{page.name}", {}
        key = directive_key(flat)
        memories = self._memories()
        for memory in memories:
            if (similarity(flat, memory.text) >= DUPLICATE_ABOVE and not conflicts_with(flat, memory.text)) or (
                    memory.id.startswith("directive-") and directive_key(memory.text) == key):
                return memory.id, {}
        for note in self._notes():
            if similarity(flat, note) >= DUPLICATE_ABOVE and not conflicts_with(flat, note):
                return f"project:{self.project}", {}
        for memory in memories:
            if conflicts_with(flat, memory.text):
                return "", {"id": memory.id, "text": memory.text}
        for note in self._notes():
            if conflicts_with(flat, note):
                return "", {"note": f"project:{self.project}", "text": note}
        return "", {}

    # -- storing ---------------------------------------------------------------------------------------
    def remember(self, text: str, *, supersede: bool = False, dry_run: bool = False, model: bool = True
                 ) -> RouteResult:
        """Decide, check and store ``text`` (nothing is written with ``dry_run``)."""
        text = docs.check_text(text, "text")
        decided = self.decide(text, model=model)
        result = RouteResult(decided.surface, decided.reason)
        details: dict[str, Any] = {}
        if decided.surface == "memory":
            details = {"category": decided.category, "importance": decided.importance}
        elif decided.surface == "notepad":
            details = {"section": decided.section}
        elif decided.surface == "directive":
            details = {"priority": decided.priority}
        elif decided.surface == "wiki":
            details = {"category": decided.category}
        result.details = details
        duplicate, conflict = self.check(text, decided)
        if duplicate:
            result.duplicate_of = duplicate
            return result
        if conflict:
            result.conflict = conflict
            if not supersede or "id" not in conflict or decided.surface not in ("memory", "directive", "project"):
                return result
        if dry_run:
            return result
        if conflict and supersede and decided.surface == "memory":
            # one commit, and the new memory holds where the old one did (a project's decision stays the project's)
            memory = self.repo.supersede(conflict["id"], text, category=decided.category,
                                         importance=decided.importance)
            result.id, result.stored, result.superseded = memory.id, True, conflict["id"]
            return result
        self.store(text, decided, result)
        if conflict and supersede and result.id:
            self.repo.forget(conflict["id"], f"superseded by {result.id}", superseded_by=result.id)
            result.superseded = conflict["id"]
        return result

    def store(self, text: str, decided: Route, result: RouteResult) -> None:
        """Write ``text`` where ``decided`` says, without any check; ``result`` gets the id or page."""
        if decided.surface == "notepad":
            notepad.add(self.local, self.project or "global", text, decided.section,
                        extra_patterns=self.repo.config.redaction.extra_patterns)
            result.stored = True
            return
        if decided.surface in ("project", "wiki") and not self.project:
            raise ValidationError(f"this finding belongs in the project {decided.surface}, but no project is known",
                                  "pass --project ID or run it inside the code project")
        if decided.surface == "wiki":
            from gitmem.wiki.store import Wiki

            title = re.split(r"(?<=[.!?。！？])\s*|\n", text.strip(), maxsplit=1)[0].strip("# ")[:80]
            written = Wiki(self.repo, self.project).ingest(title or "Note", text, category=decided.category,
                                                           sources=["remember:auto"])
            result.page, result.stored = written.page, bool(written.commit)
            return
        if decided.surface == "project":
            from gitmem.projects.memory import add_notes

            result.stored = bool(add_notes(self.repo, self.project, [" ".join(text.split())]))
            result.page = f"projects/{self.project}"
            return
        if decided.surface == "directive":
            from gitmem.briefing.directives import DIRECTIVE_TAG, directive_id
            from gitmem.text.directives import classify, directive_key

            rule = classify(" ".join(text.split()))
            body = rule.text if rule else text
            memory = docs.make_memory(
                body, id=directive_id(self.owner, directive_key(body)), type="feedback",
                category=decided.category or "constraint", importance=decided.importance, tags=[DIRECTIVE_TAG],
                project=self.owner, description=f"directive ({decided.priority} priority) stated by the user")
            sha, _saved = self.repo.commit_batch([memory], subject=f"directive: {memory.title}", op="add",
                                                  source="cli")
            result.id, result.stored = memory.id, bool(sha)
            return
        scope = "global" if decided.category == "preference" or not self.owner else "project"
        memory = self.repo.remember(text, category=decided.category, importance=decided.importance,
                                    project=self.owner if scope == "project" else "", scope=scope)
        result.id, result.stored = memory.id, True


def auto_remember(repo: MemoryRepo, text: str, *, project: str = "", supersede: bool = False,
                  dry_run: bool = False, model: bool = True, memory_project: str | None = None) -> RouteResult:
    """The library call behind ``gitmem remember --auto`` (see :class:`Router`)."""
    return Router(repo, project, memory_project=memory_project).remember(text, supersede=supersede,
                                                                         dry_run=dry_run, model=model)


__all__ = ["RouteResult", "Router", "auto_remember", "conflicts_with"]  # conflicts_with: gitmem.learn.dedup's
