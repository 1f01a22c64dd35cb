"""Optional semantic analysis: a model command reads a summary of a session's tool calls and proposes instincts.

Off until configured, and then bounded. The settings live in ``<repo>/local/learning.toml`` (machine-local, never
committed: a pulled memory repository can never spend this machine's model quota)::

    semantic_command = ["claude", "-p", "--model", "claude-haiku-4-5"]   # argv; the prompt arrives on stdin
    semantic_timeout = 45        # seconds; the command is killed after that
    semantic_daily_budget = 20   # calls a day (UTC), counted in local/semantic-budget.json
    decay_days = 14              # days unobserved before an instinct loses 0.05 (also used without a model)

The command gets a prompt plus a privacy-reduced summary (tool names, commands cut to 120 characters, file base
names only, whether each call failed) and must print JSON: a list, or ``{"instincts": [...]}``, or Claude Code's
``--output-format json`` envelope ``{"result": "<json text>"}``; fenced code blocks are accepted. Each item needs
``pattern`` (a slug), ``trigger``, ``action`` and ``domain``; anything else, or any invalid item, is reported and
nothing is written. Accepted findings create or confirm instincts with ``source: semantic`` exactly like the
statistical detectors (new 0.5, +0.05 a session, cap 0.9).
"""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from gitmem.errors import ConfigError
from gitmem.files.atomic import atomic_write
from gitmem.learn.instincts import (
    DECAY_DAYS,
    Change,
    apply_finding,
    commit_changes,
    instinct_id,
    list_instincts,
    rejected,
)
from gitmem.learn.patterns import Call, read_observations, sessions_from
from gitmem.store import document as docs
from gitmem.store.memories import MemoryRepo
from gitmem.text.counted import counted

SETTINGS_FILE = "learning.toml"
BUDGET_FILE = "semantic-budget.json"
MAX_SUMMARY_CHARS = 6000
MAX_FINDINGS = 10
_SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{2,59}$")
PROMPT = """You analyse how a coding agent worked in one session and name recurring behaviours worth keeping as
rules. Answer with JSON only: {"instincts": [{"pattern": "kebab-case-id", "trigger": "when ...", "action": "Do ...",
"domain": "one-word-area"}]}. At most 5; an empty list when nothing recurs.

Session tool calls (in order):
"""


@dataclass(frozen=True)
class LearningSettings:
    semantic_command: tuple[str, ...] = ()
    semantic_timeout: float = 45.0
    semantic_daily_budget: int = 20
    decay_days: float = DECAY_DAYS

    @property
    def enabled(self) -> bool:
        return bool(self.semantic_command)


def load_settings(repo_path: Path) -> LearningSettings:
    """``local/learning.toml`` (defaults when absent; a broken file is a :class:`ConfigError` naming it)."""
    path = repo_path / "local" / SETTINGS_FILE
    if not path.is_file():
        return LearningSettings()
    try:
        data = tomllib.loads(path.read_text("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}", "fix the file or delete it") from None
    allowed = {"semantic_command", "semantic_timeout", "semantic_daily_budget", "decay_days"}
    unknown = set(data) - allowed
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) {', '.join(sorted(unknown))}",
                          f"allowed: {', '.join(sorted(allowed))}")
    command = data.get("semantic_command", [])
    if isinstance(command, str):
        command = command.split()
    if not isinstance(command, list) or not all(isinstance(c, str) and c for c in command):
        raise ConfigError(f"{path}: semantic_command must be a list of strings", 'e.g. ["claude", "-p"]')
    numbers: dict[str, float] = {}
    for key, default in (("semantic_timeout", 45.0), ("semantic_daily_budget", 20), ("decay_days", DECAY_DAYS)):
        value = data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise ConfigError(f"{path}: {key} must be a non-negative number", f"the default is {default}")
        numbers[key] = float(value)
    return LearningSettings(tuple(command), numbers["semantic_timeout"], int(numbers["semantic_daily_budget"]),
                            numbers["decay_days"])


def summarise_session(calls: list[Call]) -> str:
    """One line a call: tool, base name or command (120 characters), failure; no full paths, no output text."""
    lines: list[str] = []
    for call in calls:
        what = call.command[:120] if call.command else call.path.rsplit("/", 1)[-1]
        lines.append(f"- {call.tool} {what}{'  [failed]' if call.failed else ''}".rstrip())
    text = "\n".join(lines)
    return text[:MAX_SUMMARY_CHARS]


@dataclass
class AnalysisResult:
    status: str  # off | no-session | budget | timeout | error | invalid | ok
    message: str = ""
    changes: list[Change] = field(default_factory=list)
    commit: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "message": self.message, "commit": self.commit,
                "changes": [{"kind": c.kind, "id": c.instinct.id, "confidence": c.instinct.confidence}
                            for c in self.changes]}


def _spend(repo_path: Path, budget: int, now: datetime) -> bool:
    """Count one call against today's budget; False (and nothing counted) when it is used up."""
    path = repo_path / "local" / BUDGET_FILE
    today = f"{now:%Y-%m-%d}"
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        data = {}
    calls = int(data.get("calls", 0)) if isinstance(data, dict) and data.get("date") == today else 0
    if calls >= budget:
        return False
    atomic_write(path, json.dumps({"date": today, "calls": calls + 1}).encode("utf-8"))
    return True


def parse_findings(text: str) -> list[dict[str, str]]:
    """The validated findings in a model answer; raises ValueError saying what is wrong."""
    data: Any = _load_json(text)
    if isinstance(data, dict) and isinstance(data.get("result"), str):  # claude --output-format json
        return parse_findings(data["result"])
    if isinstance(data, dict):
        data = data.get("instincts")
    if not isinstance(data, list):
        raise ValueError("expected a list of instincts or {\"instincts\": [...]}")
    findings: list[dict[str, str]] = []
    for number, item in enumerate(data[:MAX_FINDINGS], 1):
        if not isinstance(item, dict):
            raise ValueError(f"instinct {number} is not an object")
        values = {k: item.get(k) for k in ("pattern", "trigger", "action", "domain")}
        for key, value in values.items():
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"instinct {number}: '{key}' missing or not text")
        pattern, domain = values["pattern"].strip().lower(), values["domain"].strip().lower()  # type: ignore[union-attr]
        if not _SLUG.match(pattern) or not re.match(r"^[a-z][a-z0-9-]{1,29}$", domain):
            raise ValueError(f"instinct {number}: pattern/domain must be lowercase slugs")
        trigger, action = " ".join(str(values["trigger"]).split()), " ".join(str(values["action"]).split())
        if len(trigger) > 200 or len(action) > 300:
            raise ValueError(f"instinct {number}: trigger/action too long")
        findings.append({"pattern": pattern, "trigger": trigger, "action": action, "domain": domain})
    return findings


REFINE_PROMPT = """You turn sentences a developer said into memories for a coding agent. For each numbered
candidate decide whether it states a lasting decision, preference, constraint or correction (keep) or is noise
(a one-off request, a guess, chit-chat). Rewrite kept ones as one actionable statement in the sentence's language.
Answer with JSON only: {"memories": [{"i": 0, "keep": true, "text": "...", "category": "decision|preference|
constraint|correction|background", "importance": 1-5}]}.

Candidates:
"""


@dataclass(frozen=True)
class Refined:
    index: int
    keep: bool
    text: str = ""
    category: str = ""
    importance: int = 0


def parse_refinements(text: str, count: int) -> list[Refined]:
    """The validated refinements in a model answer; raises ValueError saying what is wrong."""
    data = _load_json(text)
    if isinstance(data, dict) and isinstance(data.get("result"), str):
        return parse_refinements(data["result"], count)
    items = data.get("memories") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise ValueError('expected {"memories": [...]}')
    out: list[Refined] = []
    for number, item in enumerate(items, 1):
        if not isinstance(item, dict) or not isinstance(item.get("i"), int) or not 0 <= item["i"] < count:
            raise ValueError(f"item {number}: 'i' must be a candidate number below {count}")
        if not item.get("keep", True):
            out.append(Refined(item["i"], False))
            continue
        text_value, category, importance = item.get("text"), item.get("category"), item.get("importance")
        if not isinstance(text_value, str) or not text_value.strip() or len(text_value) > 500:
            raise ValueError(f"item {number}: 'text' must be 1-500 characters")
        if category not in docs.CATEGORIES:
            raise ValueError(f"item {number}: unknown category {category!r}")
        if isinstance(importance, bool) or not isinstance(importance, int) or not 1 <= importance <= 5:
            raise ValueError(f"item {number}: importance must be 1-5")
        out.append(Refined(item["i"], True, " ".join(text_value.split()), str(category), importance))
    return out


def refine(repo_path: Path, sentences: list[tuple[str, str]], *, settings: LearningSettings | None = None,
           now: datetime | None = None) -> tuple[str, list[Refined]]:
    """Ask the configured command to refine rule candidates ``[(sentence, category)]``. Returns (status,
    refinements); any status but ``ok`` means: keep the rules' result."""
    settings = settings or load_settings(repo_path)
    if not settings.enabled or not sentences:
        return "off", []
    if not _spend(repo_path, settings.semantic_daily_budget, now or docs.utcnow()):
        return "budget", []
    listing = "\n".join(f"{i}. [{category}] {sentence[:300]}" for i, (sentence, category) in enumerate(sentences))
    try:
        proc = subprocess.run(list(settings.semantic_command), input=REFINE_PROMPT + listing, capture_output=True,
                              text=True, timeout=settings.semantic_timeout, check=False)
    except subprocess.TimeoutExpired:
        return "timeout", []
    except OSError:
        return "error", []
    if proc.returncode != 0:
        return "error", []
    try:
        return "ok", parse_refinements(proc.stdout, len(sentences))
    except (ValueError, RecursionError):
        return "invalid", []


def _load_json(text: str) -> Any:
    text = text.strip()
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
        if not fenced:
            raise
        return json.loads(fenced.group(1))


def analyze(repo: MemoryRepo, session: str, *, settings: LearningSettings | None = None,
            now: datetime | None = None, source: str = "semantic") -> AnalysisResult:
    """Run the configured command on one session; create or confirm the instincts it names (one commit)."""
    settings = settings or load_settings(repo.path)
    if not settings.enabled:
        return AnalysisResult("off", "no semantic_command in local/learning.toml")
    now = now or docs.utcnow()
    calls = sessions_from(r for r in read_observations(repo.path / "local") if r.get("session") == session)
    mine = calls.get(session, [])
    if not mine:
        return AnalysisResult("no-session", f"no observations for session {session!r}")
    if not _spend(repo.path, settings.semantic_daily_budget, now):
        return AnalysisResult("budget", f"daily budget of {settings.semantic_daily_budget} calls used up")
    try:
        proc = subprocess.run(list(settings.semantic_command), input=PROMPT + summarise_session(mine),
                              capture_output=True, text=True, timeout=settings.semantic_timeout, check=False)
    except subprocess.TimeoutExpired:
        return AnalysisResult("timeout", f"the command took longer than {settings.semantic_timeout:g} s")
    except OSError as exc:
        return AnalysisResult("error", f"cannot run {settings.semantic_command[0]!r}: {exc}")
    if proc.returncode != 0:
        return AnalysisResult("error", f"the command exited with {proc.returncode}: {proc.stderr.strip()[:200]}")
    try:
        findings = parse_findings(proc.stdout)
    except (ValueError, RecursionError) as exc:
        return AnalysisResult("invalid", f"the answer was not valid: {exc}")
    project = next((c.project for c in mine if c.project), "")
    result = AnalysisResult("ok", f"{counted(len(findings), 'instinct')} proposed")
    if not findings:
        return result
    with repo.git.locked():
        current = {i.id: i for i in list_instincts(repo.path)}
        for found in findings:
            key = instinct_id(f"sem-{found['pattern']}", project)
            if rejected(current.get(key)):  # the user said it is wrong
                continue
            change = apply_finding(current.get(key), pattern=f"sem-{found['pattern']}", trigger=found["trigger"],
                                   action=found["action"], domain=found["domain"], project=project, when=now,
                                   support=1, line=f"{now:%Y-%m-%d} session {session[:12]}: semantic analysis",
                                   source="semantic")
            current[key] = change.instinct
            result.changes.append(change)
        if not result.changes:
            return result
        result.commit = commit_changes(repo, result.changes, f"instincts: {len(result.changes)} from semantic "
                                       f"analysis of {session[:12]}", "update", source,
                                       {"Gitmem-Session": session})
    return result
