"""Instincts: behaviour rules learned from the observation log, with a confidence that follows the evidence.

An instinct is a file ``instincts/<domain>/<id>.md`` in the memory repository::

    ---
    id: read-before-edit--github.com-acme-shop
    pattern: read-before-edit
    trigger: when editing an existing file
    confidence: 0.6
    domain: editing
    source: observation
    scope: project
    project: github.com-acme-shop
    deprecated: false
    observed_at: '2026-11-30T13:20:00Z'
    last_seen: '2026-11-30T15:02:11Z'
    evidence_count: 9
    sessions: 3
    schema_version: 1
    ---
    ## Action
    Read the file before editing it.

    ## Evidence
    - 2026-11-30 session 5f3c…: 3 of 3 edits were preceded by a read of the same file

Detectors (:data:`gitmem.learn.patterns.DETECTORS`) run over one session's tool calls at a time. A session in which a
detector fires *creates* the project's instinct at :data:`NEW` or *confirms* it (+:data:`STEP`, capped at
:data:`CAP`); an instinct not seen for ``decay_days`` loses :data:`STEP` per period and is deprecated below
:data:`FLOOR`. The same pattern at ≥ :data:`PROMOTE_AT` in :data:`PROMOTE_PROJECTS` or more projects is promoted to
a global instinct. Every change is one commit whose message carries the evidence counts; when each session was
learned from is kept in ``local/instincts-state.json``, so its calls are never counted twice and a session resumed
later is learned from for its new calls only.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from gitmem.errors import DocumentError, NotFoundError, ValidationError
from gitmem.files.atomic import atomic_write, read_text_inside
from gitmem.learn.patterns import BY_PATTERN, DETECTORS, Detection, Detector, detect, read_observations, sessions_from
from gitmem.redact.engine import redact
from gitmem.store import document as docs
from gitmem.store.layout import Issue
from gitmem.store.local import read_json, sessions_path
from gitmem.store.memories import MemoryRepo
from gitmem.text.counted import counted

INSTINCTS_DIR = "instincts"
NEW = 0.5
STEP = 0.05
CAP = 0.9
FLOOR = 0.55
PROMOTE_AT = 0.8
PROMOTE_PROJECTS = 2
DECAY_DAYS = 14
SCHEMA_VERSION = 1
STATE_FILE = "instincts-state.json"
MAX_STATE_SESSIONS = 5000

_KEY_ORDER = ("id", "pattern", "trigger", "confidence", "domain", "source", "scope", "project", "deprecated",
              "deprecated_reason", "observed_at", "last_seen", "last_decay", "evidence_count", "sessions",
              "schema_version")


def clamp(value: float) -> float:
    """Confidence rounded to two decimals, within [0, CAP]."""
    return round(min(CAP, max(0.0, value)), 2)


def confirm(confidence: float) -> float:
    """The confidence after one more confirming session: +STEP, never above CAP."""
    return clamp(confidence + STEP)


def weaken(confidence: float) -> float:
    """The confidence after one period unobserved: −STEP, never below 0."""
    return clamp(confidence - STEP)


def is_deprecated(confidence: float) -> bool:
    return confidence < FLOOR - 1e-9


# -- the document ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Instinct:
    id: str
    pattern: str
    trigger: str
    action: str
    domain: str
    confidence: float = NEW
    source: str = "observation"
    scope: str = "project"
    project: str = ""
    deprecated: bool = False
    deprecated_reason: str = ""
    observed_at: datetime = field(default_factory=docs.utcnow)
    last_seen: datetime = field(default_factory=docs.utcnow)
    last_decay: datetime | None = None
    evidence_count: int = 0
    sessions: int = 0
    evidence: tuple[str, ...] = ()
    schema_version: int = SCHEMA_VERSION

    @property
    def path(self) -> str:
        return f"{INSTINCTS_DIR}/{docs.file_stem(self.domain)}/{docs.file_stem(self.id)}.md"

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {k: getattr(self, k) for k in _KEY_ORDER if hasattr(self, k)}
        for key in ("observed_at", "last_seen", "last_decay"):
            value = data.get(key)
            data[key] = docs.format_time(value) if isinstance(value, datetime) else None
        data["action"] = self.action
        data["evidence"] = list(self.evidence)
        data["path"] = self.path
        return data


def dumps(instinct: Instinct) -> str:
    meta: dict[str, Any] = {}
    for key in _KEY_ORDER:
        value = getattr(instinct, key)
        if key in ("deprecated_reason", "last_decay") and not value:
            continue
        if isinstance(value, datetime):
            value = docs.format_time(value)
        meta[key] = value
    head = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=1000)
    body = f"## Action\n{instinct.action}\n"
    if instinct.evidence:
        body += "\n## Evidence\n" + "".join(f"- {line}\n" for line in instinct.evidence)
    return redact(f"---\n{head}---\n{body}").text


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """What is wrong with a frontmatter, on one line, with its line numbers in the file (the frontmatter starts on
    the file's second line)."""
    if not isinstance(exc, yaml.MarkedYAMLError):
        return str(exc).splitlines()[0]
    parts = []
    for what, mark in ((exc.context, exc.context_mark), (exc.problem, exc.problem_mark)):
        if what:
            parts.append(f"{what} (line {mark.line + 2})" if mark is not None else what)
    return ": ".join(parts) or str(exc).splitlines()[0]


def _number(meta: Mapping[str, Any], key: str, default: float, path: str, *, whole: bool = False) -> float:
    """The number ``meta[key]`` (``default`` when absent): from 0 to 1 (a confidence), or with ``whole`` a whole
    number of at least 0 (a count). Any other value is refused naming the file and the key: turned into some number,
    it would be written back over what the file meant."""
    value = meta.get(key)
    if value is None:
        return default
    try:
        number = -1.0 if isinstance(value, bool) else float(value)
    except (TypeError, ValueError, OverflowError):
        number = -1.0
    if not (0 <= number <= (math.inf if whole else 1)) or (whole and not number.is_integer()):
        allowed = "a whole number, 0 or more" if whole else "a number from 0 to 1"
        raise DocumentError(f"{path}: {key} must be {allowed}, not {value!r}", "fix it or restore it from git history")
    return number


def _count(meta: Mapping[str, Any], key: str, path: str) -> int:
    return int(_number(meta, key, 0, path, whole=True))


def loads(text: str, path: str = "<instinct>") -> Instinct:
    """Parse an instinct file. Raises :class:`DocumentError` naming ``path`` and what is wrong: no frontmatter,
    broken YAML, a missing id or domain, a field with a value it cannot hold."""
    if not text.startswith("---\n") or "\n---\n" not in text[3:]:
        raise DocumentError(f"{path}: no YAML frontmatter", "restore the file from git history")
    head, _, body = text[4:].partition("\n---\n")
    try:
        meta = yaml.safe_load(head)
    except yaml.YAMLError as exc:
        raise DocumentError(f"{path}: frontmatter is not valid YAML: {_yaml_problem(exc)}",
                            "fix it or restore it from git history") from None
    if not isinstance(meta, dict) or not meta.get("id") or not meta.get("domain"):
        raise DocumentError(f"{path}: frontmatter lacks id or domain", "fix it or restore it from git history")
    if _count(meta, "schema_version", path) > SCHEMA_VERSION:
        raise DocumentError(f"{path}: written by a newer gitmem", "upgrade gitmem")
    action, evidence = "", []
    section = ""
    for line in body.splitlines():
        if line.startswith("## "):
            section = line[3:].strip().lower()
        elif section == "action" and line.strip():
            action = f"{action} {line.strip()}".strip()
        elif section == "evidence" and line.startswith("- "):
            evidence.append(line[2:].strip())

    def when(key: str) -> datetime | None:
        try:
            return docs.parse_timestamp(meta[key], key) if meta.get(key) else None
        except ValidationError as exc:
            raise DocumentError(f"{path}: {exc.message}", exc.hint) from None

    return Instinct(
        id=str(meta["id"]), pattern=str(meta.get("pattern") or meta["id"]), trigger=str(meta.get("trigger", "")),
        action=action, domain=str(meta["domain"]), confidence=_number(meta, "confidence", NEW, path),
        source=str(meta.get("source", "observation")), scope=str(meta.get("scope", "project")),
        project=str(meta.get("project") or ""), deprecated=bool(meta.get("deprecated", False)),
        deprecated_reason=str(meta.get("deprecated_reason") or ""),
        observed_at=when("observed_at") or docs.utcnow(), last_seen=when("last_seen") or docs.utcnow(),
        last_decay=when("last_decay"), evidence_count=_count(meta, "evidence_count", path),
        sessions=_count(meta, "sessions", path), evidence=tuple(evidence),
    )


def instinct_id(pattern: str, project: str) -> str:
    if not project:
        return pattern
    return f"{pattern}--{docs.slugify(project, 60, keep_dots=True) or 'project'}"


def read_file(repo_path: Path, rel: str) -> Instinct:
    """The instinct in the file ``rel`` of the repository. Raises :class:`DocumentError` naming the file and what
    stops it being read (a symbolic link, which is never followed, is one)."""
    return loads(read_text_inside(repo_path, rel), rel)


def instinct_files(repo_path: Path) -> Iterator[tuple[str, Instinct | DocumentError]]:
    """Every instinct file (``instincts/<domain>/<name>.md``) as (repository path, instinct or the error that stops
    it being read), by path. A folder that is a symbolic link is not looked into (``doctor`` reports the link)."""
    root = repo_path / INSTINCTS_DIR
    folders = sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink()) if root.is_dir() else []
    for path in (path for folder in folders for path in sorted(folder.glob("*.md"))):
        rel = path.relative_to(repo_path).as_posix()
        try:
            yield rel, read_file(repo_path, rel)
        except DocumentError as exc:
            yield rel, exc


def list_instincts(repo_path: Path, *, deprecated: bool = True,
                   warnings: list[DocumentError] | None = None) -> list[Instinct]:
    """Every readable instinct file, most confident first. An unreadable one is left out and, when ``warnings``
    is given, its error appended there, so that a command can say which file it skipped."""
    found: list[Instinct] = []
    for _rel, item in instinct_files(repo_path):
        if isinstance(item, DocumentError):
            if warnings is not None:
                warnings.append(item)
        elif deprecated or not item.deprecated:
            found.append(item)
    found.sort(key=lambda i: (-i.confidence, -i.evidence_count, i.id))
    return found


def get_instinct(repo_path: Path, instinct: str) -> Instinct:
    unreadable: list[DocumentError] = []
    for item in list_instincts(repo_path, warnings=unreadable):
        if item.id == instinct:
            return item
    also = f"; {counted(len(unreadable), 'instinct file')} cannot be read (gitmem doctor names them)" \
        if unreadable else ""
    raise NotFoundError(f"no instinct with id '{instinct}'", f"list them with: gitmem instincts list{also}")


def doctor_issues(repo_path: Path) -> list[Issue]:
    """``doctor``'s findings about the instinct files: an error for each one that cannot be read (what is wrong
    with it), then how many are readable. A file that is a symbolic link is left to ``doctor``'s own check."""
    issues: list[Issue] = []
    count = 0
    for rel, item in instinct_files(repo_path):
        if isinstance(item, Instinct):
            count += 1
        elif not (repo_path / rel).is_symlink():
            issues.append(Issue("error", rel, f"{item.message} ({item.hint})" if item.hint else item.message))
    if count or issues:
        issues.append(Issue("ok", f"{INSTINCTS_DIR}/", f"{counted(count, 'instinct')} readable"))
    return issues


def history(repo: MemoryRepo, item: Instinct) -> list[dict[str, Any]]:
    """The instinct's confidence at every commit that touched its file, newest first."""
    rows: list[dict[str, Any]] = []
    for entry in repo.git.log(paths=[item.path]):
        raw = repo.git.read_head_file(item.path, entry.sha.encode())
        row: dict[str, Any] = {"sha": entry.sha, "time": docs.format_time(datetime.fromtimestamp(entry.time, UTC)),
                               "op": entry.op, "subject": entry.subject}
        if raw is None:
            row["removed"] = True
        else:
            try:
                old = loads(raw.decode("utf-8"), item.path)
                row.update(confidence=old.confidence, evidence_count=old.evidence_count, deprecated=old.deprecated)
            except (DocumentError, UnicodeDecodeError, ValueError):
                row["unreadable"] = True
        rows.append(row)
    return rows


# -- learning -------------------------------------------------------------------------------------------
@dataclass
class Change:
    instinct: Instinct
    kind: str  # new | confirm | revive | decay | deprecate | promote
    before: float | None = None

    def line(self) -> str:
        i = self.instinct
        was = f"{self.before:.2f} -> " if self.before is not None else ""
        return f"{self.kind} {i.id}: {was}{i.confidence:.2f} (evidence {i.evidence_count}, sessions {i.sessions})"


@dataclass
class LearnResult:
    sessions: list[str] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    commit: str = ""
    decay_commit: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"sessions": self.sessions, "commit": self.commit, "decay_commit": self.decay_commit,
                "changes": [{"kind": c.kind, "id": c.instinct.id, "before": c.before,
                             "confidence": c.instinct.confidence, "evidence_count": c.instinct.evidence_count}
                            for c in self.changes]}


def _state_path(repo_path: Path) -> Path:
    return repo_path / "local" / STATE_FILE


def read_state(repo_path: Path) -> dict[str, Any]:
    try:
        data = json.loads(_state_path(repo_path).read_text("utf-8"))
    except (OSError, ValueError, RecursionError):
        return {"sessions": {}}
    return data if isinstance(data, dict) and isinstance(data.get("sessions"), dict) else {"sessions": {}}


def _write_state(repo_path: Path, state: dict[str, Any]) -> None:
    sessions = state["sessions"]
    if len(sessions) > MAX_STATE_SESSIONS:
        for key in sorted(sessions, key=lambda k: str(sessions[k]))[: len(sessions) - MAX_STATE_SESSIONS]:
            del sessions[key]
    atomic_write(_state_path(repo_path), json.dumps(state, sort_keys=True).encode("utf-8"))


def _stamp(call_time: str, fallback: datetime) -> datetime:
    try:
        return docs.parse_timestamp(call_time, "time") if call_time else fallback
    except ValidationError:
        return fallback


def apply_detection(existing: Instinct | None, found: Detection, project: str, when: datetime,
                    session: str) -> Change:
    """The instinct after one session in which ``found`` fired."""
    detector = BY_PATTERN[found.pattern]
    return apply_finding(existing, pattern=found.pattern, trigger=detector.trigger, action=detector.action,
                         domain=detector.domain, project=project, when=when, support=found.support,
                         line=f"{when:%Y-%m-%d} session {session[:12]}: {found.note}")


#: how the reason of an instinct the user rejected starts: such an instinct is never revived by new evidence
REJECTED = "rejected: "


def rejected(item: Instinct | None) -> bool:
    """Whether the user rejected ``item`` (:func:`reject`): what fires its pattern again leaves it deprecated."""
    return item is not None and item.deprecated and item.deprecated_reason.startswith(REJECTED)


def reject(repo: MemoryRepo, instinct: str, reason: str, *, source: str = "cli") -> Instinct:
    """Deprecate an instinct the user says is wrong, for good (one commit): unlike an instinct deprecated by decay,
    it is not revived when its pattern shows again, and ``evolve`` drops its rule. Undone by editing the file."""
    reason = " ".join((reason or "").split())
    if not reason:
        raise ValidationError("a reason is required to reject an instinct", 'pass --reason "why it is wrong"')
    with repo.git.locked():
        item = get_instinct(repo.path, instinct)
        if rejected(item):
            raise ValidationError(f"instinct '{item.id}' is already rejected ({item.deprecated_reason})",
                                  "nothing to do")
        gone = replace(item, deprecated=True, deprecated_reason=f"{REJECTED}{reason}", confidence=0.0)
        commit_changes(repo, [Change(gone, "reject", item.confidence)], f"instincts: reject {item.id}",
                       "deprecate", source)
    return gone


def apply_finding(existing: Instinct | None, *, pattern: str, trigger: str, action: str, domain: str, project: str,
                  when: datetime, support: int, line: str, source: str = "observation") -> Change:
    """Create (at NEW), confirm (+STEP up to CAP) or revive (at NEW) an instinct for one session's finding."""
    if existing is None:
        item = Instinct(
            id=instinct_id(pattern, project), pattern=pattern, trigger=trigger, action=action, domain=domain,
            confidence=NEW, source=source, scope="project" if project else "global", project=project,
            observed_at=when, last_seen=when, evidence_count=support, sessions=1, evidence=(line,))
        return Change(item, "new")
    before = existing.confidence
    revived = existing.deprecated
    item = replace(
        existing, confidence=NEW if revived else confirm(existing.confidence), deprecated=False,
        deprecated_reason="", last_seen=max(when, existing.last_seen), last_decay=None,
        evidence_count=existing.evidence_count + support, sessions=existing.sessions + 1,
        evidence=(line, *existing.evidence)[:10], trigger=trigger, action=action)
    return Change(item, "revive" if revived else "confirm", before)


def commit_changes(repo: MemoryRepo, changes: list[Change], subject: str, op: str, source: str,
            extra: Mapping[str, str | list[str]] | None = None) -> str:
    """Write the changed instincts as one commit (the caller holds the lock). Refused, before anything is written,
    when one of their files exists but cannot be read: the change was worked out without it (a new instinct at
    NEW), so writing it would lose the confidence and evidence the file holds."""
    for change in changes:
        rel = change.instinct.path
        if os.path.lexists(repo.path / rel):
            try:
                read_file(repo.path, rel)
            except DocumentError as exc:
                why = exc.message.removeprefix(f"{rel}: ")
                raise DocumentError(
                    f"{rel} cannot be read ({why}), and writing instinct {change.instinct.id} would replace it, "
                    "losing its confidence and evidence; nothing was written",
                    f"fix the file by hand, or restore its last good version (git -C {repo.path} log -- {rel} "
                    "lists them), then run the command again") from None
    files: dict[str, bytes | None] = {c.instinct.path: dumps(c.instinct).encode() for c in changes}
    evidence = sum(c.instinct.evidence_count for c in changes)
    body = "\n".join(f"- {c.line()}" for c in changes) + f"\n\nEvidence: {counted(evidence, 'observation')} in total."
    trailers: dict[str, str | list[str]] = {"Gitmem-Evidence": str(evidence), **(extra or {})}
    return repo.commit(files, subject, op, source, [c.instinct.id for c in changes], trailers, body)


def _promotions(current: dict[str, Instinct], when: datetime) -> list[Change]:
    """Global instincts for patterns at ≥ PROMOTE_AT in ≥ PROMOTE_PROJECTS projects."""
    strong: dict[str, list[Instinct]] = {}
    for item in current.values():
        if item.project and not item.deprecated and item.confidence >= PROMOTE_AT - 1e-9:
            strong.setdefault(item.pattern, []).append(item)
    changes: list[Change] = []
    for pattern, items in strong.items():
        if len({i.project for i in items}) < PROMOTE_PROJECTS:
            continue
        best = max(items, key=lambda i: (i.confidence, i.evidence_count))
        gid = instinct_id(pattern, "")
        old = current.get(gid)
        if rejected(old):  # the user rejected the global rule: the projects' own instincts do not bring it back
            continue
        confidence = best.confidence
        evidence = sum(i.evidence_count for i in items)
        line = f"{when:%Y-%m-%d} promoted: at >= {PROMOTE_AT} in {counted(len(items), 'project')}"
        if old is not None and not old.deprecated and old.confidence >= confidence and \
                old.evidence_count == evidence:
            continue
        item = replace(best, id=gid, scope="global", project="", confidence=max(confidence, old.confidence
                       if old and not old.deprecated else 0.0), evidence_count=evidence,
                       sessions=sum(i.sessions for i in items), evidence=(line,), deprecated=False,
                       observed_at=old.observed_at if old else when, last_seen=max(i.last_seen for i in items))
        changes.append(Change(item, "promote", old.confidence if old else None))
        current[gid] = item
    return changes


def learn(repo: MemoryRepo, *, sessions: Iterable[str] | None = None, records: Iterable[Mapping[str, Any]] | None
          = None, now: datetime | None = None, source: str = "learn", decay_days: float = DECAY_DAYS,
          detectors: Iterable[Detector] = DETECTORS, min_idle: float = 0.0) -> LearnResult:
    """Learn from the sessions of the observation log not learned from yet (or only ``sessions``), then decay
    what was not seen for ``decay_days``. One commit for what was learned, one for decay and deprecation.

    Without ``sessions``, a session whose last call is less than ``min_idle`` seconds old and that has not ended
    (``local/sessions.json``) is left for later: it may still be running."""
    now = now or docs.utcnow()
    local = repo.path / "local"
    calls_by_session = sessions_from(records if records is not None else read_observations(local))
    wanted = set(sessions) if sessions is not None else None
    known = read_json(sessions_path(local)).get("sessions", {}) if wanted is None and min_idle > 0 else {}
    result = LearnResult()
    detectors = list(detectors)
    with repo.git.locked():
        state = read_state(repo.path)
        done: dict[str, Any] = state["sessions"]
        current = {i.id: i for i in list_instincts(repo.path)}
        changes: dict[str, Change] = {}
        for session, calls in calls_by_session.items():
            if (wanted is not None and session not in wanted) or not calls:
                continue
            if session in done:  # learned already: only calls made since count (a session resumed later)
                learned = _stamp(str(done[session] or ""), now)
                calls = [c for c in calls if _stamp(c.time, learned) > learned]
                if not calls:
                    continue
            when = max((_stamp(c.time, now) for c in calls), default=now)
            ended = isinstance(known.get(session), dict) and bool(known[session].get("ended"))
            if wanted is None and not ended and (now - when).total_seconds() < min_idle:
                continue
            result.sessions.append(session)
            done[session] = docs.format_time(now)
            projects = {c.project for c in calls}
            for project in sorted(projects):
                mine = [c for c in calls if c.project == project]
                for found in detect(mine, detectors):
                    key = instinct_id(found.pattern, project)
                    if rejected(current.get(key)):  # the user said it is wrong: new evidence does not revive it
                        continue
                    change = apply_detection(current.get(key), found, project, when, session)
                    if key in changes:
                        change = Change(change.instinct, changes[key].kind, changes[key].before)
                    current[key] = change.instinct
                    changes[key] = change
        promoted = _promotions(current, now)
        for change in promoted:
            changes[change.instinct.id] = change
        if changes:
            items = list(changes.values())
            kinds = sorted({c.kind for c in items})
            op = "add" if kinds == ["new"] else "update"
            what = ", ".join(f"{sum(c.kind == k for c in items)} {k}" for k in kinds)
            label = result.sessions[0][:12] if len(result.sessions) == 1 else counted(len(result.sessions), "session")
            result.commit = commit_changes(repo, items, f"instincts: {what} from {label}", op, source,
                                    {"Gitmem-Session": result.sessions[:20]} if result.sessions else None)
            result.changes.extend(items)
        decayed = _decay(current, now, decay_days, skip=set(changes))
        if decayed:
            deprecated = [c for c in decayed if c.kind == "deprecate"]
            subject = f"instincts: {len(decayed) - len(deprecated)} weakened, {len(deprecated)} deprecated " \
                      f"(unobserved for {decay_days:g} days)"
            op = "deprecate" if deprecated else "update"
            result.decay_commit = commit_changes(repo, decayed, subject, op, source)
            result.changes.extend(decayed)
        _write_state(repo.path, state)
    return result


def _decay(current: Mapping[str, Instinct], now: datetime, decay_days: float, skip: set[str]) -> list[Change]:
    if decay_days <= 0:
        return []
    period = timedelta(days=decay_days)
    changes: list[Change] = []
    for key, item in sorted(current.items()):
        if item.deprecated or key in skip:
            continue
        since = max(item.last_seen, item.last_decay or item.last_seen)
        steps = int((now - since) / period)
        if steps <= 0:
            continue
        confidence = item.confidence
        for _ in range(steps):
            confidence = weaken(confidence)
        gone = is_deprecated(confidence)
        new = replace(item, confidence=confidence, last_decay=since + steps * period, deprecated=gone,
                      deprecated_reason=f"unobserved since {item.last_seen:%Y-%m-%d}" if gone else "")
        changes.append(Change(new, "deprecate" if gone else "decay", item.confidence))
    return changes


# -- sharing --------------------------------------------------------------------------------------------
def export_records(repo_path: Path, *, min_confidence: float = 0.0) -> list[dict[str, Any]]:
    """Instincts to share: pattern, trigger, action, domain, confidence, counts, dates. No project ids, code
    paths or session content (evidence lines are left out)."""
    out: dict[str, dict[str, Any]] = {}
    for item in list_instincts(repo_path, deprecated=False):
        if item.confidence < min_confidence:
            continue
        record = {"id": item.pattern, "trigger": item.trigger, "action": item.action, "domain": item.domain,
                  "confidence": item.confidence, "evidence_count": item.evidence_count, "sessions": item.sessions,
                  "observed_at": f"{item.observed_at:%Y-%m-%d}", "last_seen": f"{item.last_seen:%Y-%m-%d}",
                  "schema_version": SCHEMA_VERSION}
        prev = out.get(item.pattern)
        if prev is None or record["confidence"] > prev["confidence"]:
            out[item.pattern] = record
    return sorted(out.values(), key=lambda r: (-float(r["confidence"]), str(r["id"])))
