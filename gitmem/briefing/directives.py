"""The user's standing instructions ("directives") as memories: the tag that marks them, the id that makes the
same instruction in the same project one memory, the priority a memory's importance gives, and the block a session
start shows them in. Read and listed by the session start's inputs (:mod:`gitmem.agents.claude.inputs`), written by
the hooks and the router."""

from __future__ import annotations

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs every tool call's hook process
if TYPE_CHECKING:
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
