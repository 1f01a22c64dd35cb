"""Memory lifecycle: expiry, garbage collection, compaction, the index file and the digest.

- **TTL** (``[lifecycle] ttl_<type>`` days, 0 = never): a *raw* memory (captured by gitmem: source ``capture``,
  ``hook`` or ``commit``, not stated with ``remember``), of importance ≤ 3, not a directive, that was neither
  updated nor recalled for its type's TTL is deprecated by ``gc``. A memory whose ``expires`` passed is too.
- **gc**: a memory unused for ``gc_unused_days`` (last update or last recall, from the local usage counters of
  :mod:`gitmem.recall`) with importance ≤ ``gc_max_importance`` is deprecated. One commit for all of them.
- **compact**: a tag with more than :data:`TAG_LIMIT` active memories in one project, or a category whose texts
  are over :data:`TOKEN_LIMIT` tokens, becomes one extractive summary memory (its members as bullets, most
  important first) that supersedes them, in one commit.
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


def gc_reason(repo: MemoryRepo, memory: Memory, usage: dict[str, dict[str, Any]], now: datetime) -> str:
    """Why ``gc`` would deprecate this memory ("" when it stays)."""
    if memory.deprecated or _protected(memory):
        return ""
    if memory.expires is not None and memory.expires <= now:
        return f"expired on {memory.expires:%Y-%m-%d}"
    idle = (now - last_activity(memory, usage)).days
    settings = repo.config.lifecycle
    if settings.gc_unused_days and idle >= settings.gc_unused_days and memory.importance <= settings.gc_max_importance:
        return f"unused for {idle} days with importance {memory.importance}"
    ttl = ttl_days(repo, memory.type)
    if ttl and memory.source in RAW_SOURCES and memory.importance <= 3 and idle >= ttl:
        return f"past the {ttl}-day TTL of {memory.type} memories ({idle} days unused)"
    return ""


def gc(repo: MemoryRepo, *, now: datetime | None = None, dry_run: bool = False) -> GcResult:
    now = now or docs.utcnow()
    usage = read_usage(repo.path)
    result = GcResult()
    for memory in repo.list():
        reason = gc_reason(repo, memory, usage, now)
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
    key: str
    project: str
    members: list[Memory]
    summary: Memory | None = None


@dataclass
class CompactResult:
    clusters: list[Cluster] = field(default_factory=list)
    commit: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"commit": self.commit, "clusters": [
            {"key": c.key, "project": c.project, "members": [m.id for m in c.members],
             "summary": c.summary.id if c.summary else None} for c in self.clusters]}

    def lines(self) -> list[str]:
        out = [f"{c.key} ({c.project or 'global'}): {counted(len(c.members), 'memory')} -> "
               f"{c.summary.id if c.summary else '?'}" for c in self.clusters]
        return out + ([f"committed {self.commit[:8]}"] if self.commit else []) or ["nothing to compact"]


def _priority(memory: Memory) -> tuple[int, int, float, str]:
    rank = CATEGORY_ORDER.index(memory.category) if memory.category in CATEGORY_ORDER else len(CATEGORY_ORDER)
    return (-memory.importance, rank, -memory.updated.timestamp(), memory.id)


def find_clusters(memories: Iterable[Memory], *, tag_limit: int = TAG_LIMIT,
                  token_limit: int = TOKEN_LIMIT) -> list[Cluster]:
    """Tags with more than ``tag_limit`` memories, then categories over ``token_limit`` tokens, per project."""
    active = [m for m in memories if not m.deprecated and not _protected(m) and m.importance < 5]
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


def summarise(cluster: Cluster, taken: Iterable[str] = ()) -> Memory:
    """An extractive summary: one bullet per member (members that are summaries contribute their bullets), with
    the id :func:`summary_id` gives (not one of ``taken``)."""
    label = cluster.key.split(":", 1)[1]
    bullets: list[str] = []
    for member in cluster.members:
        lines = [line[2:] for line in member.text.splitlines() if line.startswith("- ")] \
            if SUMMARY_TAG in member.tags else [" ".join(member.text.split())]
        for line in lines:
            if line not in bullets:
                bullets.append(line)
    head = f"Summary of {counted(len(cluster.members), 'memory')} about {label}:"
    text = head
    for bullet in bullets:
        if len((text + "\n- " + bullet).encode()) > MAX_SUMMARY_BYTES:
            break
        text += "\n- " + bullet
    common = Counter(m.category for m in cluster.members).most_common(1)[0][0]
    kind = Counter(m.type for m in cluster.members).most_common(1)[0][0]
    tags = [label] if cluster.key.startswith("tag:") else []
    return docs.make_memory(text, id=summary_id(cluster, text, taken), type=kind, category=common,
                            importance=max(m.importance for m in cluster.members), tags=[*tags, SUMMARY_TAG],
                            project=cluster.project, source="capture", source_ref=f"compact:{cluster.key}",
                            name=head)


def compact(repo: MemoryRepo, *, tag_limit: int = TAG_LIMIT, token_limit: int = TOKEN_LIMIT,
            dry_run: bool = False) -> CompactResult:
    result = CompactResult(find_clusters(repo.list(), tag_limit=tag_limit, token_limit=token_limit))
    batch: list[Memory] = []
    now = docs.utcnow()
    taken = {m.id for m in repo.list(deprecated=True)} if result.clusters else set()
    for cluster in result.clusters:
        cluster.summary = summarise(cluster, taken)
        taken.add(cluster.summary.id)
        batch.append(cluster.summary)
        batch.extend(replace(m, deprecated=True, deprecated_reason=compacted_into(cluster.summary.id),
                             superseded_by=cluster.summary.id, updated=now) for m in cluster.members)
    if dry_run or not batch:
        return result
    result.commit, _ = repo.commit_batch(
        batch, subject=f"compact: {counted(len(result.clusters), 'cluster')} into "
                f"{'a summary' if len(result.clusters) == 1 else 'summaries'}", op="compact",
        source="compact",
        body="\n".join(f"- {c.key} ({c.project or 'global'}): {len(c.members)} -> {c.summary.id}"
                       for c in result.clusters if c.summary))
    write_memory_md(repo)
    return result


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
