"""Memory lifecycle: expiry, garbage collection, compaction, the index file and the digest.

- **TTL** (``[lifecycle] ttl_<type>`` days, 0 = never): a *raw* memory (captured by gitmem: source ``capture``,
  ``hook`` or ``commit``, not stated with ``remember``), of importance ≤ 3, not a directive, that was neither
  updated nor recalled for its type's TTL is deprecated by ``gc``. A memory whose ``expires`` passed is too.
- **gc**: a memory unused for ``gc_unused_days`` (last update or last recall, from the local usage counters of
  :mod:`gitmem.recall`) with importance ≤ ``gc_max_importance`` is deprecated. One commit for all of them.
- **compact**: a tag with more than :data:`TAG_LIMIT` active memories in one project, or a category whose texts
  are over :data:`TOKEN_LIMIT` tokens, becomes extractive summary memories (its members as bullets with their
  why and how, most important first, at most :data:`MAX_SUMMARY_BYTES` each: as many summaries as it takes),
  each superseding the members whose text it holds, in one commit. A member no summary has room for stays
  active. A summary lasts as long as its most lasting member: no TTL takes it unless one would take each member.
- **index file** ``MEMORY.md``: the active memories, most important first, at most :data:`MEMORY_MD_LINES` lines.
- **digest**: what was added, changed, deprecated and learned over a period, from the git history alone.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from gitmem.errors import ValidationError
from gitmem.store import document as docs
from gitmem.store.document import CATEGORY_ORDER, Memory
from gitmem.store.memories import MemoryRepo
from gitmem.store.memory import SUMMARY_TAG, compacted_into
from gitmem.store.usage import read_usage
from gitmem.text.counted import counted
from gitmem.text.records import replace
from gitmem.text.tokens import count_tokens

TAG_LIMIT = 10
TOKEN_LIMIT = 3000
MEMORY_MD_LINES = 160
MEMORY_MD = "MEMORY.md"
RAW_SOURCES = ("capture", "hook", "commit")
PROTECTED_TAGS = ("directive",)
MAX_SUMMARY_BYTES = 12 * 1024


def ttl_days(repo: MemoryRepo, memory_type: str) -> int:
    return int(getattr(repo.config.lifecycle, f"ttl_{memory_type}", 0) or 0)


def last_activity(memory: Memory, usage: dict[str, dict[str, Any]]) -> datetime:
    """The later of the memory's last update and its last recall."""
    last = memory.updated
    used = usage.get(memory.id, {}).get("last_used")
    if isinstance(used, str):
        with contextlib.suppress(ValidationError):
            last = max(last, docs.parse_timestamp(used, "last_used"))
    return last


def _protected(memory: Memory) -> bool:
    return any(t in memory.tags for t in PROTECTED_TAGS)


def _compaction_summary(memory: Memory) -> bool:
    return SUMMARY_TAG in memory.tags and memory.source_ref.startswith("compact:")


@dataclass
class GcResult:
    deprecated: list[tuple[Memory, str]] = field(default_factory=list)
    commit: str = ""
    index_commit: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"commit": self.commit, "deprecated": [{"id": m.id, "reason": r} for m, r in self.deprecated]}

    def lines(self) -> list[str]:
        out = [f"- {m.id}: {r}" for m, r in self.deprecated]
        return out + ([f"committed {self.commit[:8]}"] if self.commit else []) or ["nothing to collect"]


def gc_reason(repo: MemoryRepo, memory: Memory, usage: dict[str, dict[str, Any]], now: datetime,
              members: list[Memory] | None = None) -> str:
    """Why ``gc`` would deprecate this memory ("" when it stays). ``members``: for a summary made by ``compact``,
    the memories it superseded; the TTL then applies to it only when it applied to each of them."""
    if memory.deprecated or _protected(memory):
        return ""
    if memory.expires is not None and memory.expires <= now:
        return f"expired on {memory.expires:%Y-%m-%d}"
    idle = (now - last_activity(memory, usage)).days
    settings = repo.config.lifecycle
    if settings.gc_unused_days and idle >= settings.gc_unused_days and memory.importance <= settings.gc_max_importance:
        return f"unused for {idle} days with importance {memory.importance}"
    ttl = ttl_days(repo, memory.type)
    if members and _lasting(members, memory.type)[0] not in RAW_SOURCES:
        ttl = 0
    if ttl and memory.source in RAW_SOURCES and memory.importance <= 3 and idle >= ttl:
        return f"past the {ttl}-day TTL of {memory.type} memories ({idle} days unused)"
    return ""


def gc(repo: MemoryRepo, *, now: datetime | None = None, dry_run: bool = False) -> GcResult:
    now = now or docs.utcnow()
    usage = read_usage(repo.path)
    result = GcResult()
    memories = repo.list()
    # compaction once wrote every summary with source "capture", whatever its members were: such a summary is
    # judged by what it holds, so the TTL does not take a summary of memories that would never have expired
    held: dict[str, list[Memory]] = {}
    if any(_compaction_summary(m) and m.source in RAW_SOURCES for m in memories):
        for old in repo.list(deprecated=True):
            if old.deprecated and old.superseded_by:
                held.setdefault(old.superseded_by, []).append(old)
    for memory in memories:
        reason = gc_reason(repo, memory, usage, now, held.get(memory.id) if _compaction_summary(memory) else None)
        if reason:
            result.deprecated.append((memory, reason))
    if dry_run or not result.deprecated:
        return result
    changed = [replace(m, deprecated=True, deprecated_reason=f"gc: {r}", updated=now) for m, r in result.deprecated]
    result.commit, _ = repo.commit_batch(
        changed, subject=f"gc: {counted(len(changed), 'memory')} deprecated", op="deprecate", source="gc",
        body="\n".join(f"- {m.id}: {r}" for m, r in result.deprecated))
    result.index_commit = write_memory_md(repo)[0]
    return result


# -- compaction -----------------------------------------------------------------------------------------
@dataclass
class Cluster:
    """Memories compaction folds together: one tag (or one category) of one project. A cluster too big for one
    summary of :data:`MAX_SUMMARY_BYTES` is summarised in several (``parts``); a member that fits in none, or
    would be alone in its summary, stays active as it is (``kept``)."""

    key: str
    project: str
    members: list[Memory]
    parts: list[tuple[Memory, list[Memory]]] = field(default_factory=list)
    """each summary with the members whose text it holds: the memories it supersedes"""
    kept: list[Memory] = field(default_factory=list)
    """members left active"""

    @property
    def summary(self) -> Memory | None:
        """The first summary (None when nothing was summarised)."""
        return self.parts[0][0] if self.parts else None


@dataclass
class CompactResult:
    clusters: list[Cluster] = field(default_factory=list)
    commit: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"commit": self.commit, "clusters": [
            {"key": c.key, "project": c.project, "members": [m.id for m in c.members],
             "summary": c.summary.id if c.summary else None,
             "summaries": [{"id": s.id, "members": [m.id for m in folded]} for s, folded in c.parts],
             "kept": [m.id for m in c.kept]} for c in self.clusters]}

    def lines(self) -> list[str]:
        out: list[str] = []
        for c in self.clusters:
            out.append(f"{c.key} ({c.project or 'global'}): "
                       + ", ".join(f"{counted(len(folded), 'memory')} -> {s.id}" for s, folded in c.parts))
            if c.kept:
                out.append(f"  kept active (no room to share a summary): {', '.join(m.id for m in c.kept)}")
        return out + ([f"committed {self.commit[:8]}"] if self.commit else []) or ["nothing to compact"]


def _priority(memory: Memory) -> tuple[int, int, float, str]:
    rank = CATEGORY_ORDER.index(memory.category) if memory.category in CATEGORY_ORDER else len(CATEGORY_ORDER)
    return (-memory.importance, rank, -memory.updated.timestamp(), memory.id)


def find_clusters(memories: Iterable[Memory], *, tag_limit: int = TAG_LIMIT, token_limit: int = TOKEN_LIMIT,
                  now: datetime | None = None) -> list[Cluster]:
    """Tags with more than ``tag_limit`` memories, then categories over ``token_limit`` tokens, per project.
    Expired memories (``expires`` at or before ``now``) are left to ``gc``: folded into a summary, their text
    would come back to recall, which no longer uses them."""
    now = now or docs.utcnow()
    active = [m for m in memories if not m.deprecated and not _protected(m) and m.importance < 5
              and (m.expires is None or m.expires > now)]
    clusters: list[Cluster] = []
    taken: set[str] = set()
    by_tag: dict[tuple[str, str], list[Memory]] = {}
    for memory in active:
        for tag in memory.tags:
            if tag not in (SUMMARY_TAG, "captured"):
                by_tag.setdefault((memory.project, tag), []).append(memory)
    for (project, tag), members in sorted(by_tag.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        members = [m for m in members if m.id not in taken]
        if len(members) > tag_limit:
            clusters.append(Cluster(f"tag:{tag}", project, sorted(members, key=_priority)))
            taken.update(m.id for m in members)
    by_category: dict[tuple[str, str], list[Memory]] = {}
    for memory in active:
        if memory.id not in taken:
            by_category.setdefault((memory.project, memory.category), []).append(memory)
    for (project, category), members in sorted(by_category.items()):
        if len(members) > 1 and sum(count_tokens(m.text) for m in members) > token_limit:
            clusters.append(Cluster(f"category:{category}", project, sorted(members, key=_priority)))
    return clusters


def summary_id(cluster: Cluster, text: str, taken: Iterable[str] = ()) -> str:
    """The id of ``cluster``'s summary: the slug of ``text`` and a suffix derived from the cluster (its key, its
    project, its members' ids), so a dry run shows the id the commit will use; the first one not in ``taken``."""
    import hashlib

    seed = "\n".join([cluster.key, cluster.project, *sorted(m.id for m in cluster.members)])
    used = set(taken)
    for attempt in range(100):
        digest = hashlib.sha1(f"{seed}\n{attempt}".encode() if attempt else seed.encode()).hexdigest()
        memory_id = docs.new_id(text, suffix=digest[:6])
        if memory_id not in used:
            break
    return memory_id


def summary_lines(member: Memory) -> list[str]:
    """What ``member`` puts in a summary, one bullet's text each: its text on one line followed by its reason and
    how to apply it, so a summary drops none of them. A summary contributes its own bullets (and any other line
    it holds besides its head, such as one added by hand), and its why and how on a line of their own."""
    lines: list[str] = []
    head = ""
    if SUMMARY_TAG in member.tags:
        head = docs.first_line(member.title, 100).rstrip(":")
        for number, line in enumerate(member.text.splitlines()):
            if line.startswith("- "):
                lines.append(" ".join(line[2:].split()))
            elif line.strip() and not (number == 0 and line.startswith("Summary of ")):
                lines.append(" ".join(line.split()))
    if not lines:
        lines, head = [" ".join(member.text.split())], ""
    notes = "; ".join(f"{label}: {' '.join(value.split())}"
                      for label, value in (("why", member.why), ("how to apply", member.how)) if value)
    if notes and head:
        lines.append(f"{head} ({notes})")
    elif notes:
        lines[-1] += f" ({notes})"
    return list(dict.fromkeys(line for line in lines if line))


def _head(count: int, label: str, part: int = 1, parts: int = 1) -> str:
    return f"Summary of {counted(count, 'memory')} about {label}" + (f" (part {part} of {parts})" if parts > 1
                                                                      else "") + ":"


def _bytes(lines: Iterable[str]) -> int:
    return sum(len(("\n- " + line).encode()) for line in lines)


def _lasting(members: list[Memory], kind: str) -> tuple[str, datetime | None]:
    """The source and the expiry of a summary of ``members`` of type ``kind``: those of the most lasting member,
    so the summary never goes before a memory whose text it holds would have gone. ``gc`` expires a memory by
    the TTL of its type only when its source is raw (:data:`RAW_SOURCES`): the summary is raw (``capture``) only
    when every member is a raw memory of ``kind`` (the same TTL would have expired each of them, and the summary,
    written now, outlives them all); otherwise ``cli``, which no TTL expires: a person ran ``gitmem compact``,
    and what a person keeps does not expire by TTL. It expires (at the latest member's time) only when every
    member does."""
    raw = all(m.source in RAW_SOURCES and m.type == kind for m in members)
    ends = [m.expires for m in members]
    return ("capture" if raw else "cli"), (max(e for e in ends if e is not None) if all(ends) else None)


def summarise(cluster: Cluster, taken: Iterable[str] = ()) -> Cluster:
    """Fill ``cluster.parts`` with extractive summaries, most important members first: one bullet per member
    (its text, why and how; members that are summaries contribute their bullets), each summary at most
    :data:`MAX_SUMMARY_BYTES`, with the ids :func:`summary_id` gives (none of ``taken``); the members no summary
    holds go to ``cluster.kept``. Returns ``cluster``.

    A cluster whose members do not fit in one summary gets as many as it needs, rather than one summary and the
    rest left as they were: the user asked for the tag to be compacted, and with the rest left active the next
    ``compact`` would fold the full summary (most important, so first) into a new one with no room for them
    either, and so on at every run. A member too long for any summary, or alone in the last one, stays as it
    is: a summary of one memory compacts nothing."""
    label = cluster.key.split(":", 1)[1]
    size = len(cluster.members)
    # room for the bullets under the longest head a part could get, so that no summary outgrows its limit
    room = MAX_SUMMARY_BYTES - len(_head(size, label, size, size).encode())
    groups: list[tuple[list[Memory], list[str]]] = []
    members: list[Memory] = []
    bullets: list[str] = []
    kept: list[Memory] = []
    for member in cluster.members:
        lines = summary_lines(member)
        new = [line for line in lines if line not in bullets]
        if _bytes(bullets) + _bytes(new) <= room:
            members.append(member)
            bullets.extend(new)
        elif _bytes(lines) <= room:
            groups.append((members, bullets))
            members, bullets = [member], list(lines)
        else:
            kept.append(member)
    groups.append((members, bullets))
    kept += [m for group, _ in groups if len(group) == 1 for m in group]
    groups = [(group, lines) for group, lines in groups if len(group) > 1]
    used = set(taken)
    cluster.parts = []
    for number, (group, lines) in enumerate(groups, 1):
        head = _head(len(group), label, number, len(groups))
        text = "\n- ".join([head, *lines])
        kind = Counter(m.type for m in group).most_common(1)[0][0]
        source, expires = _lasting(group, kind)
        part = Cluster(cluster.key, cluster.project, group)
        summary = docs.make_memory(
            text, id=summary_id(part, text, used), type=kind,
            category=Counter(m.category for m in group).most_common(1)[0][0],
            importance=max(m.importance for m in group),
            tags=[*([label] if cluster.key.startswith("tag:") else []), SUMMARY_TAG], project=cluster.project,
            source=source, source_ref=f"compact:{cluster.key}", name=head, expires=expires)
        used.add(summary.id)
        cluster.parts.append((summary, group))
    cluster.kept = sorted(kept, key=_priority)
    return cluster


def compact(repo: MemoryRepo, *, tag_limit: int = TAG_LIMIT, token_limit: int = TOKEN_LIMIT,
            dry_run: bool = False, now: datetime | None = None) -> CompactResult:
    """Fold each cluster (:func:`find_clusters`) into summaries (:func:`summarise`) in one commit: every member a
    summary holds is deprecated with ``superseded_by`` that summary; the members no summary holds stay active,
    and a cluster none of whose members fit is left alone."""
    now = now or docs.utcnow()
    found = find_clusters(repo.list(), tag_limit=tag_limit, token_limit=token_limit, now=now)
    result = CompactResult()
    batch: list[Memory] = []
    taken = {m.id for m in repo.list(deprecated=True)} if found else set()
    for cluster in found:
        summarise(cluster, taken)
        if not cluster.parts:
            continue
        result.clusters.append(cluster)
        for summary, folded in cluster.parts:
            taken.add(summary.id)
            batch.append(summary)
            batch.extend(replace(m, deprecated=True, deprecated_reason=compacted_into(summary.id),
                                 superseded_by=summary.id, updated=now) for m in folded)
    if dry_run or not batch:
        return result
    summaries = sum(len(c.parts) for c in result.clusters)
    body = [f"- {c.key} ({c.project or 'global'}): {len(folded)} -> {s.id}" for c in result.clusters
            for s, folded in c.parts]
    body += [f"- {c.key} ({c.project or 'global'}): kept {', '.join(m.id for m in c.kept)}" for c in result.clusters
             if c.kept]
    result.commit, _ = repo.commit_batch(
        batch, subject=f"compact: {counted(len(result.clusters), 'cluster')} into "
                f"{'a summary' if summaries == 1 else f'{summaries} summaries'}", op="compact",
        source="compact", body="\n".join(body))
    write_memory_md(repo)
    return result


def compacted_members(memories: Iterable[Memory]) -> dict[str, list[Memory]]:
    """Summary id → the memories :func:`compact` folded into it, among ``memories`` (deprecated ones included)."""
    held: dict[str, list[Memory]] = {}
    for memory in memories:
        if memory.deprecated and memory.superseded_by and memory.deprecated_reason == compacted_into(
                memory.superseded_by):
            held.setdefault(memory.superseded_by, []).append(memory)
    return held


def refold(summary: Memory, members: list[Memory], *, now: datetime | None = None) -> Memory | None:
    """``summary`` (written by :func:`compact`) rewritten to hold only ``members``, the others having been taken
    out of it (what a reverted commit taught): same id, its text, name, importance and expiry those of a summary
    of ``members``. None when that is not one summary of them all (fewer than two left, or no longer fitting):
    the caller then restores ``members`` as they were and retires the summary."""
    if len(members) < 2 or not summary.source_ref.startswith("compact:"):
        return None
    cluster = summarise(Cluster(summary.source_ref.removeprefix("compact:"), summary.project,
                                sorted(members, key=_priority)))
    if len(cluster.parts) != 1 or cluster.kept:
        return None
    (part, _group), = cluster.parts
    return replace(summary, text=part.text, name=part.name, importance=part.importance, expires=part.expires,
                   updated=now or docs.utcnow())


# -- the index file -------------------------------------------------------------------------------------
def render_memory_md(memories: Iterable[Memory], max_lines: int = MEMORY_MD_LINES) -> str:
    active = sorted((m for m in memories if not m.deprecated), key=_priority)
    head = ["# Memory index", "", "Generated by gitmem (`gitmem memory-index`): active memories, most important "
            "first. Do not edit.", ""]
    room = max_lines - len(head)
    rows = [f"- [{m.category} {m.importance}] {docs.first_line(m.text, 100)} ({m.project or 'global'}: {m.id})"
            for m in active]
    if len(rows) > room:
        rows = [*rows[:room - 1], f"- … {len(rows) - room + 1} more: gitmem list"]
    return "\n".join(head + rows) + "\n"


def write_memory_md(repo: MemoryRepo, *, max_lines: int = MEMORY_MD_LINES) -> tuple[str, int]:
    """Rewrite ``MEMORY.md``; returns (commit SHA or "" when unchanged, line count)."""
    text = render_memory_md(repo.list(), max_lines)
    path = repo.path / MEMORY_MD
    lines = text.count("\n")
    try:
        if path.read_text("utf-8") == text:
            return "", lines
    except OSError:
        pass
    with repo.git.locked():
        sha = repo.commit({MEMORY_MD: text.encode()}, f"index: {MEMORY_MD} with {lines} lines", "update",
                          "lifecycle")
    return sha, lines


# -- digest ---------------------------------------------------------------------------------------------
_GROUPS = {"add": "added", "ingest": "added", "extract": "added", "update": "changed", "restore": "changed",
           "merge": "changed", "compact": "changed", "deprecate": "deprecated", "purge": "deprecated",
           "evolve": "learned"}


def digest(repo: MemoryRepo, *, since: timedelta = timedelta(days=7), now: datetime | None = None) -> dict[str, Any]:
    """Counts and commit subjects per kind of change since ``now - since``."""
    now = now or datetime.now(UTC)
    start = (now - since).timestamp()
    groups: dict[str, list[str]] = {k: [] for k in ("added", "changed", "deprecated", "learned")}
    counts: Counter[str] = Counter()
    for entry in repo.git.log():
        if entry.time < start:
            break
        group = _GROUPS.get(entry.op)
        if entry.subject.startswith("instincts:") or "Gitmem-Evidence" in entry.trailers:
            group = "learned"
        if group is None:
            continue
        groups[group].append(entry.subject)
        ids = entry.trailers.get("Gitmem-Id", [])
        count = entry.trailers.get("Gitmem-Count", [])
        counts[group] += int(count[0]) if count and count[0].isdigit() else max(1, len(ids))
    lines = [f"gitmem digest, last {_period(since)}: {counts['added']} added, "
             f"{counts['changed']} changed, {counts['deprecated']} deprecated, {counts['learned']} learned"]
    for group, subjects in groups.items():
        if subjects:
            lines.append(f"\n{group} ({counted(len(subjects), 'commit')}):")
            lines += [f"  - {s}" for s in subjects[:10]]
            if len(subjects) > 10:
                lines.append(f"  - … {len(subjects) - 10} more")
    return {"since": docs.format_time(now - since), "counts": dict(counts), "commits": groups,
            "text": "\n".join(lines)}


def _period(span: timedelta) -> str:
    """``span`` in the largest unit that counts it whole: "7 days", "1 hour", "90 minutes"."""
    minutes = int(span.total_seconds() // 60)
    for unit, size in (("day", 24 * 60), ("hour", 60)):
        if minutes >= size and minutes % size == 0:
            return counted(minutes // size, unit)
    return counted(minutes, "minute")
