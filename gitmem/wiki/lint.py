"""``gitmem wiki lint``: what makes a wiki less trustworthy, one finding per problem.

Kinds:

- ``unreadable``: a page file that cannot be read (broken YAML frontmatter, an invalid field, not UTF-8): every
  other command leaves it out, so it is reported first, with what is wrong;
- ``conflicted``: ``gitmem sync`` kept both sides' lines of a region both changed (``conflicted: true``);
- ``orphan``: a page no other page links to (``[[name]]``); the generated index does not count, and session logs
  are chronological records that nobody is expected to link;
- ``stale``: not updated for ``stale_days`` (default 30);
- ``broken-link``: a ``[[name]]`` to a page that does not exist (one finding per page and target);
- ``oversized``: a file larger than ``max_page_size`` bytes (default 10 KB): split it;
- ``low-confidence``: ``confidence: low``: verify it or delete it;
- ``contradiction``: two pages state different values for the same key (``Test command: pytest -q`` on one page,
  ``test command: make test`` on another; also ``KEY=value`` settings). One finding per key, on the first page.

Facts are ``key: value`` lines (bullets and bold allowed, ``：`` too) with a key of at most five words, and
``NAME=value`` assignments of upper-case variables, outside code blocks. Generated pages are never reported, but
the environment page's facts do count against hand-written ones (a page that disagrees with the project memory
is worth a look). ``--fix`` only regenerates what gitmem generates (index, environment): it never removes text.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from gitmem.store import document as docs
from gitmem.store import wikipage as wp
from gitmem.text import scripts

if TYPE_CHECKING:
    from gitmem.wiki.store import Wiki

KINDS = ("unreadable", "conflicted", "orphan", "stale", "broken-link", "oversized", "low-confidence",
         "contradiction")
_FACT = re.compile(r"^\s*(?:[-*+]\s+|\d+\.\s+)?(?:\*\*|__)?([^\W\d][\w '/-]{0,48}?)(?:\*\*|__)?\s*(?:[:：]|\s=)"
                   r"(?:\*\*|__)?\s+(\S.{0,200}?)\s*$")
_FACT_CJK = re.compile(rf"^\s*(?:[-*+]\s+)?(?:\*\*)?([{scripts.HAN}]{{2,12}})(?:\*\*)?\s*[:：]\s*(\S.{{0,200}}?)\s*$")
#: labels of prose, not of facts ("Note: ...", "Why: ...")
_LABELS = frozenset((
    "note", "notes", "example", "examples", "e.g", "why", "how", "what", "when", "where", "who", "warning", "caution",
    "tip", "tips", "todo", "see", "see also", "reason", "summary", "result", "results", "problem", "fix", "cause",
    "root cause", "question", "answer", "update", "context", "status", "outcome", "outcomes", "asked",
    "files touched", "commands run", "directives", "tl;dr", "nb", "important", "step", "steps", "注意", "原因", "例如",
    "总结", "问题", "结果", "备注",
))
_ASSIGN = re.compile(r"(?<![\w$])`?([A-Z][A-Z0-9_]{2,40})=([^\s`]{1,200})`?")


@dataclass(frozen=True)
class Finding:
    """One problem: its kind, the page it is on, and what exactly is wrong."""

    kind: str
    page: str
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "page": self.page, "detail": self.detail}


def _norm_key(key: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", key).lower().replace("_", " ").split())


def _norm_value(value: str) -> str:
    value = unicodedata.normalize("NFKC", value).strip().strip("`*_").rstrip(".。;；,，").strip().strip("`\"'")
    return " ".join(value.split()).lower()


def facts(body: str) -> dict[str, str]:
    """``key → value`` statements of a page body (see the module docstring); the last statement of a key wins."""
    found: dict[str, str] = {}
    for line in wp.strip_code(body).splitlines():
        if line.lstrip().startswith(("#", ">", "|")) or "[[" in line:
            continue
        match = _FACT.match(line) or _FACT_CJK.match(line)
        if match and len(match.group(1).split()) <= 5 and not match.group(2).startswith(("//", "http")):
            key, value = _norm_key(match.group(1)), _norm_value(match.group(2))
            if value and key not in _LABELS and len(value.split()) <= 8:
                found[key] = value
        for name, value in _ASSIGN.findall(line):
            found[name] = _norm_value(value)
    return found


def lint(wiki: Wiki, *, stale_days: int = 30, max_page_size: int = 10240) -> list[Finding]:
    """Every finding of the wiki, in the order of :data:`KINDS`, then by page."""
    every = wiki.pages(generated=True)
    pages = [p for p in every if not (p.generated and p.name in wp.RESERVED_PAGES)]
    names = {p.name for p in every} | set(wiki.unreadable)  # a link to an unreadable page is not a broken link
    findings: list[Finding] = [
        Finding("unreadable", name, exc.message.removeprefix(f"{wiki.rel}/{name}.md: ")
                + (f" ({exc.hint})" if exc.hint else ""))
        for name, exc in wiki.unreadable.items()]
    findings += [
        Finding("conflicted", page.name, f"both sides of a sync changed the same lines; the other side's are under "
                f"'## {wp.CONFLICT_HEADING}': settle it with gitmem wiki edit {page.name} --project {wiki.project} "
                "(keep what holds, remove that section)")
        for page in pages if page.conflicted]
    inbound: dict[str, int] = {p.name: 0 for p in pages}
    for page in pages:
        for target in page.links:
            if target in inbound and target != page.name:
                inbound[target] += 1
    for page in pages:
        if not inbound[page.name] and page.category != "session-log":
            findings.append(Finding("orphan", page.name, "no other page links to it; link it with "
                                    f"[[{page.name}]] from a related page"))
    cutoff = docs.utcnow() - timedelta(days=stale_days)
    for page in pages:
        if page.updated < cutoff:
            days = (docs.utcnow() - page.updated).days
            findings.append(Finding("stale", page.name, f"not updated for {days} days (limit {stale_days}); "
                                    "check it still holds and ingest a correction"))
    for page in pages:
        for target in page.links:
            if target not in names:
                findings.append(Finding("broken-link", page.name, f"[[{target}]] names no page"))
    for page in pages:
        size = wiki._file(page.name).stat().st_size
        if size > max_page_size:
            findings.append(Finding("oversized", page.name, f"{size} bytes (limit {max_page_size}); split it into "
                                    "linked pages"))
    for page in pages:
        if page.confidence == "low":
            findings.append(Finding("low-confidence", page.name, "confidence: low; verify it or delete it"))
    findings += _contradictions(every)
    return findings


def _contradictions(pages: list[wp.WikiPage]) -> list[Finding]:
    first: dict[str, tuple[str, str]] = {}
    reported: set[str] = set()
    out: list[Finding] = []
    for page in pages:
        for key, value in facts(page.body).items():
            if key not in first:
                first[key] = (page.name, value)
                continue
            other, seen = first[key]
            if other != page.name and seen != value and key not in reported:
                reported.add(key)
                here, there = (page.name, other) if other in wp.RESERVED_PAGES else (other, page.name)
                shown = (seen, value) if here == other else (value, seen)
                out.append(Finding("contradiction", here, f"'{key}' is '{shown[0]}' here but '{shown[1]}' on "
                                   f"[[{there}]]; correct one of them"))
    return out
