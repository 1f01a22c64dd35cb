"""The user's standing instructions ("directives") as memories: the tag that marks them, the id that makes the
same instruction in the same project one memory, the priority a memory's importance gives, and the block a session
start shows them in, and the commit of those a session stated (:func:`commit_pending`). Read and listed by the
session start's inputs (:mod:`gitmem.agents.claude.inputs`), written by the hooks, their session-end learner and the
router."""

from __future__ import annotations

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs every tool call's hook process
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from gitmem.store.memory import Memory

#: the tag every directive memory carries
DIRECTIVE_TAG = "directive"


def directive_id(project: str, key: str) -> str:
    """The memory id of a directive: the same instruction in the same project always gets the same id."""
    import hashlib

    return "directive-" + hashlib.sha1(f"{project}\n{key}".encode()).hexdigest()[:12]


def priority(memory: Memory) -> str:
    """A directive's priority: ``high`` at importance 5, else ``normal``."""
    return "high" if memory.importance >= 5 else "normal"


def render_directives(directives: list[tuple[str, str]]) -> str:
    """``(priority, text)`` pairs as the session start's block of standing instructions, high ones marked."""
    if not directives:
        return ""
    lines = ["## Standing instructions from the user (follow them)"]
    lines += [f"- {'[high] ' if priority == 'high' else ''}{' '.join(text.split())}" for priority, text in directives]
    return "\n".join(lines) + "\n"


def commit_pending(repo: Any, local_dir: str, session_ids: Iterable[str]) -> dict[str, str]:
    """Commit the directives each of ``session_ids`` stated and has not committed yet (``pending`` in its entry of
    ``local/sessions.json``), one commit a session with a ``Gitmem-Session`` trailer, and clear them; returns each
    session that had some with its commit (``""`` when every instruction was stored already at the same or a higher
    priority: no new commit)."""
    from gitmem.store import document as docs
    from gitmem.store import local
    from gitmem.text.records import replace

    def keep_stronger(old: docs.Memory, new: docs.Memory) -> docs.Memory | None:
        if not old.deprecated and old.importance >= new.importance:
            return None  # already known at this priority: no new commit
        return replace(new, created=old.created)

    made: dict[str, str] = {}
    for session_id in dict.fromkeys(session_ids):
        entry = local.get_session(local_dir, session_id)
        pending = [p for p in entry.get("pending", []) if isinstance(p, dict) and p.get("text")]
        if not pending:
            continue
        memories = []
        for item in pending:
            project = str(item.get("project", ""))
            level = str(item.get("priority", "normal"))
            memories.append(docs.make_memory(
                str(item["text"]), id=directive_id(project, str(item.get("key", ""))), type="feedback",
                category=str(item.get("category", "constraint")), importance=5 if level == "high" else 4,
                tags=[DIRECTIVE_TAG], project=project, source="hook", source_ref=session_id,
                description=f"directive ({level} priority) stated by the user",
            ))
        count = len(memories)
        sha, _written = repo.commit_batch(
            memories, subject=f"session: {count} directive{'s' if count != 1 else ''} from the user", op="extract",
            source=f"hook:{session_id}", trailers={"Gitmem-Session": session_id},
            body="\n".join(f"- {' '.join(str(p['text']).split())[:100]}" for p in pending), merge=keep_stronger,
        )
        done = {(p.get("project"), p.get("key")) for p in pending}

        def clear(entry: dict[str, Any], done: set[Any] = done, sha: str = sha) -> None:
            entry["pending"] = [p for p in entry.get("pending", [])
                                if isinstance(p, dict) and (p.get("project"), p.get("key")) not in done]
            if sha:
                entry["commits"] = [*entry.get("commits", []), sha][-20:]

        local.update_session(local_dir, session_id, clear)
        made[session_id] = sha
    return made
