"""The wiki in a coding session's life: what the hooks call (each a small function, so the hooks stay thin).

- :func:`overview` (SessionStart): page count, categories and the few page titles most relevant to the session's
  query, at most :data:`OVERVIEW_CHARS` characters. It reads only the generated ``index.md`` (one small file, no
  YAML, no search index), so it costs well under a millisecond.
- :func:`breadcrumb` (PreCompact, and SessionStart after a compaction): one line saying the wiki exists, what it
  covers and how to query it.
- :func:`capture_session_log` (SessionEnd, when ``wiki.auto_capture`` is on): a ``session-log`` page with what was
  asked, files touched, commands run, directives and outcomes, built from the local observations and the first
  prompts of the transcript (no search index, no model) and committed within a hard budget (3 s by default):
  the lock is waited for only as long as the budget allows, so a busy repository costs the page, never the agent.
"""

from __future__ import annotations

import heapq
import itertools
import re
import time
from pathlib import Path

from gitmem.text import scripts
from gitmem.text.counted import counted
from gitmem.text.lazyre import LazyPattern

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: every session start's hook process imports this module
if TYPE_CHECKING:
    from gitmem.store.memories import MemoryRepo
    from gitmem.wiki.store import IndexEntry

OVERVIEW_CHARS = 300
#: seconds session end may spend on the session log, waiting for the lock included
CAPTURE_BUDGET = 3.0
_WORDS = LazyPattern(rf"[a-z0-9]{{3,}}|[{scripts.CJK}]")
#: the wiki's folder in the memory repository (store.wikipage.WIKI_DIR, which tests/wiki/test_wiki.py checks it equals):
#: named here so that a session start in a repository without a wiki never imports the wiki's store, whose
#: imports (the git layer, documents, redaction) cost more than the rest of the overview
WIKI_DIR = "wiki"


def _index_entries(repo_path: Path, project: str) -> list[IndexEntry]:
    if not (repo_path / WIKI_DIR).is_dir():
        return []
    from gitmem.wiki.store import index_entries

    return index_entries(repo_path, project)


def _newest_first(day: str) -> str:
    return "".join(chr(0x7A - ord(c) + 0x30) if c.isdigit() else c for c in day) if day else "~"


def _summary(entries: list[IndexEntry]) -> str:
    counts: dict[str, int] = {}
    for category, *_rest in entries:
        counts[category] = counts.get(category, 0) + 1
    return ", ".join(f"{c} {n}" for c, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def overview(repo_path: Path, project: str, query: str = "", *, limit: int = OVERVIEW_CHARS) -> str:
    """The session-start lines about the project's wiki ("" when it has none), at most ``limit`` characters."""
    entries = _index_entries(repo_path, project)
    if not entries:
        return ""
    wanted = set(_WORDS.findall(query.lower()))

    def rank(entry: IndexEntry) -> tuple[int, bool, str, str]:
        title = entry[2].lower()
        return (-sum(w in title for w in wanted), entry[0] == "session-log", _newest_first(entry[3]), entry[2])

    ranked = heapq.nsmallest(3, entries, key=rank)
    head = f"## Project wiki: {counted(len(entries), 'page')} ({_summary(entries)})"
    tail = f'query: gitmem wiki query "..." --project {project}'
    titles: list[str] = []
    for _category, _name, title, _updated in ranked[:3]:
        candidate = "Relevant: " + "; ".join([*titles, title])
        if len(head) + len(candidate) + len(tail) + 2 > limit:
            break
        titles.append(title)
    lines = [head, *(["Relevant: " + "; ".join(titles)] if titles else []), tail]
    text = "\n".join(lines)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def breadcrumb(repo_path: Path, project: str) -> str:
    """One line for after a compaction ("" when the project has no wiki)."""
    entries = _index_entries(repo_path, project)
    if not entries:
        return ""
    categories = list(dict.fromkeys(e[0] for e in entries))
    return (f"This project has a wiki of {counted(len(entries), 'page')} on {', '.join(categories[:5])}; query it "
            f'with: gitmem wiki query "..." --project {project} '
            f"(read a page: gitmem wiki read PAGE --project {project})")


def session_start_note(repo_path: Path, project: str, query: str, source: str) -> str:
    """What SessionStart adds about the wiki: the breadcrumb right after a compaction, else the overview."""
    text = breadcrumb(repo_path, project) if source == "compact" else overview(repo_path, project, query)
    return text + "\n" if text else ""


# -- the session log -------------------------------------------------------------------------------------------
def session_log_text(local: Path, session: str, transcript: str = "", reason: str = "") -> str:
    """The body of a session's log ("" when the session left nothing to record)."""
    from gitmem.learn.patterns import sessions_from
    from gitmem.store import local as observe
    from gitmem.text.directives import detect_directives

    records = [r for r in observe.read_observations(local) if r.get("session") == session]
    calls = sessions_from(records).get(session, []) if records else []
    asked = _prompts(Path(transcript)) if transcript else []
    if not calls and not asked:
        return ""
    root = next((str(r["cwd"]) for r in records if r.get("cwd")), "")

    def shown(path: str) -> str:  # paths inside the session's directory, relative to it
        return path[len(root):].lstrip("/") if root and path.startswith(root.rstrip("/") + "/") else path

    files = list(dict.fromkeys(shown(c.path) for c in calls if c.path and c.is_edit))
    read = [p for p in dict.fromkeys(shown(c.path) for c in calls if c.path) if p not in files]
    commands = list(dict.fromkeys(c.command[:160] for c in calls if c.command))
    failed = [c for c in calls if c.failed]
    directives = [d.text for text in asked for d in detect_directives(text)]
    parts: list[str] = []
    if asked:
        parts.append("### Asked\n\n" + "\n".join(f"- {' '.join(a.split())[:200]}" for a in asked))
    if files or read:
        lines = [f"- edited `{p}`" for p in files[:20]] + [f"- read `{p}`" for p in read[:10]]
        parts.append("### Files touched\n\n" + "\n".join(lines))
    if commands:
        parts.append("### Commands run\n\n" + "\n".join(f"- `{c}`" for c in commands[:20]))
    if directives:
        parts.append("### Directives\n\n" + "\n".join(f"- {d}" for d in directives[:10]))
    outcome = [f"- {len(calls)} tool calls, {len(failed)} failed"]
    commits = [c.command for c in calls if "git commit" in c.command and not c.failed]
    outcome += [f"- committed: `{c[:120]}`" for c in commits[:5]]
    if failed:
        outcome.append(f"- last failure: {failed[-1].tool} `{(failed[-1].command or failed[-1].path)[:120]}`")
    if reason:
        outcome.append(f"- session ended: {reason}")
    parts.append("### Outcomes\n\n" + "\n".join(outcome))
    return "\n\n".join(parts)


def _prompts(path: Path, limit: int = 5) -> list[str]:
    """The first ``limit`` prompts of a transcript (read lazily: a long transcript costs the first lines only)."""
    from gitmem.learn.capture import transcript_texts

    try:
        return [t for t in itertools.islice(transcript_texts(path), limit) if t.strip()]
    except OSError:
        return []


def capture_session_log(repo: MemoryRepo, *, session: str, project: str, local: Path, transcript: str = "",
                        reason: str = "", budget: float = CAPTURE_BUDGET) -> str:
    """Write the session's ``session-log`` page within ``budget`` seconds; the page name, or "" when there was
    nothing to record or no time left (the lock is waited for at most what remains of the budget)."""
    from gitmem.wiki.store import Wiki

    deadline = time.monotonic() + budget
    text = session_log_text(local, session, transcript, reason)
    remaining = deadline - time.monotonic() - 0.3  # keep time for the commit itself
    if not text or remaining <= 0:
        return ""
    day = time.strftime("%Y-%m-%d", time.gmtime())
    short = re.sub(r"[^0-9A-Za-z]", "", session)[:8] or "session"
    saved = repo.git.lock_timeout
    repo.git.lock_timeout = min(saved, remaining)
    try:
        result = Wiki(repo, project).ingest(
            f"Session {day} {short}", text, category="session-log", tags=["session-log"],
            sources=[f"session:{session}"], source=f"hook:{session}", name=f"session-{day}-{short}")
    finally:
        repo.git.lock_timeout = saved
    return result.page
