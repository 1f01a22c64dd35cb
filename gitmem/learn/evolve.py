"""Evolve: turn the confident instincts into rules an agent reads.

1. keep active instincts with confidence ≥ :data:`KEEP_AT`;
2. merge near-duplicates: Jaccard similarity of the English keyword tokens of trigger + action ≥
   :data:`MERGE_AT`, grouped with union-find; each group keeps its most confident member (then the most
   evidence, then the id), so the same pattern learned in several projects becomes one rule;
3. group by domain; every domain with ≥ :data:`MIN_DOMAIN` rules gets ``evolved/<domain>.md``;
4. rewrite ``rules/auto-evolved.md`` whole.

Everything is written in one commit (``Gitmem-Op: evolve``) whose message lists what changed. The files depend
only on the instincts (no timestamps), so a second run with nothing new writes the same bytes and commits nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitmem.learn.instincts import Instinct, list_instincts
from gitmem.redact.engine import redact
from gitmem.store.document import file_stem
from gitmem.store.memories import MemoryRepo
from gitmem.text.counted import counted

KEEP_AT = 0.7
MERGE_AT = 0.5
MIN_DOMAIN = 2
EVOLVED_DIR = "evolved"
RULES_FILE = "rules/auto-evolved.md"
_STOP = frozenset((
    "a", "an", "and", "the", "to", "of", "in", "on", "for", "with", "by", "be", "is", "are", "it", "its", "this",
    "that", "when", "after", "before", "from", "or", "not", "do", "does", "did", "any", "all", "one", "each", "so",
    "as", "at", "into", "than", "then", "them", "they", "their", "there", "what", "which", "who", "how", "your",
    "you", "we", "our", "about", "more", "most", "some", "such", "only", "own", "same", "too", "very", "can", "will",
    "just", "should",
))
_WORD = re.compile(r"[a-z][a-z0-9]+")


def keywords(item: Instinct) -> frozenset[str]:
    """English keyword tokens of trigger + action (lower case, stop words and one-letter words dropped, a
    trailing plural/verb ``s`` folded)."""
    words = _WORD.findall(f"{item.trigger} {item.action}".lower())
    return frozenset(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w
                     for w in words if w not in _STOP)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def merge_groups(items: list[Instinct], threshold: float = MERGE_AT) -> list[list[Instinct]]:
    """Union-find over pairs with keyword Jaccard ≥ ``threshold``; groups ordered best member first."""
    parent = list(range(len(items)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    keys = [keywords(i) for i in items]
    for i in range(len(items)):
        for j in range(i + 1, len(items)):
            if jaccard(keys[i], keys[j]) >= threshold:
                parent[find(i)] = find(j)
    groups: dict[int, list[Instinct]] = {}
    for index, item in enumerate(items):
        groups.setdefault(find(index), []).append(item)
    ordered = [sorted(g, key=_rank) for g in groups.values()]
    return sorted(ordered, key=lambda g: _rank(g[0]))


def _rank(item: Instinct) -> tuple[float, int, str]:
    return (-item.confidence, -item.evidence_count, item.id)


@dataclass
class EvolveResult:
    rules: list[Instinct] = field(default_factory=list)
    merged: dict[str, list[str]] = field(default_factory=dict)
    domains: dict[str, list[str]] = field(default_factory=dict)
    changes: list[str] = field(default_factory=list)
    commit: str = ""
    rules_text: str = ""
    #: the repository's own redaction patterns: :meth:`to_dict` redacts with them, as the written files are
    extra_patterns: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """What ``gitmem evolve --json`` prints. The actions are redacted as the rules file is: an instinct's file
        may have been edited by hand, and the output lands in terminals, logs and agents' context."""
        return {"commit": self.commit, "changes": self.changes, "domains": self.domains, "merged": self.merged,
                "rules": [{"id": r.id, "domain": r.domain, "confidence": r.confidence,
                           "action": redact(r.action, extra_patterns=self.extra_patterns).text}
                          for r in self.rules]}


def _rule_line(item: Instinct, group: list[Instinct]) -> str:
    """One rule of the rules file Claude Code loads in every project: a rule learned in some projects only says
    which (it was given as everyone's), and the line holds no count that every confirming session would change
    (the copy in ``~/.claude/rules`` and a commit each time); ``evolved/<domain>.md`` keeps the figures."""
    trigger = item.trigger[:1].upper() + item.trigger[1:] if item.trigger else "Always"
    projects = sorted({g.project for g in group if g.project})
    where = f" (in {', '.join(projects)} only)" if projects and all(g.scope == "project" for g in group) else ""
    return f"- {trigger}: {item.action}{where}"


def render_domain(domain: str, rules: list[tuple[Instinct, list[Instinct]]]) -> str:
    lines = [f"# Evolved skill: {domain}", "",
             f"Generated by `gitmem evolve` from {counted(sum(len(g) for _, g in rules), 'instinct')}; do not edit by "
             "hand (edit or forget the instincts instead).", ""]
    for item, group in rules:
        lines.append(f"## {item.pattern}")
        lines.append("")
        lines.append(f"**When:** {item.trigger}")
        lines.append(f"**Do:** {item.action}")
        lines.append(f"**Confidence:** {item.confidence:.2f} from {counted(item.evidence_count, 'observation')} in "
                     f"{counted(item.sessions, 'session')}")
        if len(group) > 1:
            lines.append(f"**Merged:** {', '.join(g.id for g in group[1:])}")
        lines.append("")
    return "\n".join(lines)


def render_rules(rules: list[tuple[Instinct, list[Instinct]]]) -> str:
    lines = ["# Learned rules (gitmem)", "",
             "Generated by `gitmem evolve` from instincts with confidence >= "
             f"{KEEP_AT}; rewritten whole on every run, do not edit by hand.", ""]
    if not rules:
        lines.append("No rule is confident enough yet.")
    by_domain: dict[str, list[tuple[Instinct, list[Instinct]]]] = {}
    for item, group in rules:
        by_domain.setdefault(item.domain, []).append((item, group))
    for domain in sorted(by_domain):
        lines += [f"## {domain}", ""]
        lines += [_rule_line(item, group) for item, group in by_domain[domain]]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def plan(items: Iterable[Instinct], keep_at: float = KEEP_AT,
         threshold: float = MERGE_AT) -> tuple[dict[str, str], EvolveResult]:
    """The generated files (path → text) and what they contain, from the instincts alone."""
    kept = [i for i in items if not i.deprecated and i.confidence >= keep_at - 1e-9]
    result = EvolveResult()
    chosen: list[tuple[Instinct, list[Instinct]]] = []
    for group in merge_groups(kept, threshold):
        chosen.append((group[0], group))
        result.rules.append(group[0])
        if len(group) > 1:
            result.merged[group[0].id] = [g.id for g in group[1:]]
    by_domain: dict[str, list[tuple[Instinct, list[Instinct]]]] = {}
    for item, group in chosen:
        by_domain.setdefault(item.domain, []).append((item, group))
    files: dict[str, str] = {}
    for domain, rules in sorted(by_domain.items()):
        if len(rules) >= MIN_DOMAIN:
            files[f"{EVOLVED_DIR}/{file_stem(domain)}.md"] = render_domain(domain, rules)
            result.domains[domain] = [r.id for r, _ in rules]
    files[RULES_FILE] = render_rules(chosen)
    result.rules_text = files[RULES_FILE]
    return files, result


def evolve(repo: MemoryRepo, *, source: str = "cli", keep_at: float = KEEP_AT, dry_run: bool = False) -> EvolveResult:
    """Regenerate ``evolved/*.md`` and ``rules/auto-evolved.md``; one commit, or none when nothing changed."""
    with repo.git.locked():
        wanted, result = plan(list_instincts(repo.path), keep_at)
        result.extra_patterns = tuple(repo.config.redaction.extra_patterns)
        if not result.rules and not (repo.path / RULES_FILE).exists():
            return result  # nothing learned yet: no empty rules file
        wanted = {path: redact(text, extra_patterns=result.extra_patterns).text for path, text in wanted.items()}
        changes: dict[str, bytes | None] = {}
        for path, text in wanted.items():
            old = _read(repo.path / path)
            if old != text:
                changes[path] = text.encode("utf-8")
                result.changes.append(f"{'~' if old is not None else '+'} {path}")
        evolved = repo.path / EVOLVED_DIR
        for stale in sorted(evolved.glob("*.md")) if evolved.is_dir() else []:
            rel = f"{EVOLVED_DIR}/{stale.name}"
            if rel not in wanted:
                changes[rel] = None
                result.changes.append(f"- {rel}")
        if not changes or dry_run:
            return result
        body = "\n".join(result.changes) + "\n\n" + "\n".join(
            f"rule {r.id} ({r.domain}, {r.confidence:.2f}, evidence {r.evidence_count})" for r in result.rules)
        if result.merged:
            body += "\n" + "\n".join(f"merged into {k}: {', '.join(v)}" for k, v in result.merged.items())
        domains = counted(len({r.domain for r in result.rules}), "domain")
        files = counted(len(result.changes), "file")
        subject = f"evolve: {counted(len(result.rules), 'rule')} in {domains}, {files} changed"
        result.commit = repo.commit(changes, subject, "evolve", source, [r.id for r in result.rules],
                                    {"Gitmem-Evidence": str(sum(r.evidence_count for r in result.rules))}, body)
    return result


def _read(path: Path) -> str | None:
    try:
        return path.read_text("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def install_rules(repo_path: Path, rules_dir: Path, name: str = "gitmem-auto-evolved.md") -> Path | None:
    """Copy ``rules/auto-evolved.md`` into a Claude Code rules directory (e.g. ``~/.claude/rules``); returns
    the written path, or None when there is nothing to copy or it is already current."""
    text = _read(repo_path / RULES_FILE)
    if text is None:
        return None
    target = rules_dir / name
    if _read(target) == text:
        return None
    rules_dir.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{name}.tmp")
    tmp.write_text(text, "utf-8")
    tmp.replace(target)
    return target
