"""The Claude Code hook events gitmem handles: one table that everything else reads.

The settings installer (:mod:`gitmem.agents.claude.settings`), the plugin's ``hooks/hooks.json`` (written by
``python scripts/hook_events.py``, checked by ``tests/agents/claude/test_hooks.py``), the hook entry
(:mod:`gitmem.agents.claude.entry`: names and deadlines), the handlers (:mod:`gitmem.agents.claude.handlers`) and the
table in ``docs/hooks.md`` all come from :data:`TABLE`. Adding an event is one row here and one handler function.

Plain data on purpose: every tool call's hook process imports this module, so it imports nothing.
"""

from __future__ import annotations

#: one row per event: (gitmem's event name, Claude Code's ``hook_event_name``, matcher or None for events
#: without matchers, timeout in seconds written into the settings, deadline in seconds after which the hook
#: process exits 0 by itself, handler function in :mod:`gitmem.agents.claude.handlers`, what gitmem does)
TABLE: tuple[tuple[str, str, str | None, int, float, str, str], ...] = (
    ("session-start", "SessionStart", None, 30, 20.0, "session_start",
     "inject Essentials, Relevant memories, project summary, the wiki overview (the wiki breadcrumb after a "
     "compaction), how many more exist"),
    ("user-prompt-submit", "UserPromptSubmit", None, 10, 10.0, "prompt_with_notepad",
     "inject the memories the prompt needs and the notepad's priority notes; detect directives and corrections"),
    ("pre-tool-use", "PreToolUse", "Bash", 10, 10.0, "pre_tool_use", "observe the command"),
    ("post-tool-use", "PostToolUse", "*", 10, 10.0, "post_tool_use", "observe input and output, count hot paths"),
    ("pre-compact", "PreCompact", None, 30, 20.0, "pre_compact",
     "`systemMessage` with the high-priority directives and the wiki breadcrumb"),
    ("stop", "Stop", None, 30, 20.0, "stop", "commit the session's new directives"),
    ("session-end", "SessionEnd", None, 10, 5.0, "session_end",
     "the same, note the session's end, and write the wiki's session-log page (3 s budget; see "
     "`docs/surfaces.md`)"),
)

#: gitmem event → Claude Code's ``hook_event_name``
CLAUDE_NAMES: dict[str, str] = {row[0]: row[1] for row in TABLE}
#: gitmem event → seconds after which its hook process gives up and exits 0 (``GITMEM_HOOK_DEADLINE`` overrides)
DEADLINES: dict[str, float] = {row[0]: row[4] for row in TABLE}
#: gitmem event → name of its handler function in :mod:`gitmem.agents.claude.handlers`
HANDLERS: dict[str, str] = {row[0]: row[5] for row in TABLE}
_BY_CLAUDE_NAME = {claude.lower(): name for name, claude in CLAUDE_NAMES.items()}


def event_name(name: str) -> str | None:
    """``session-start``, ``SessionStart`` or ``session_start`` → ``session-start``; None for unknown events."""
    key = name.strip().replace("_", "-").lower()
    if key in CLAUDE_NAMES:
        return key
    return _BY_CLAUDE_NAME.get(key.replace("-", ""))


def markdown_table() -> str:
    """The events as the Markdown table of ``docs/hooks.md``."""
    lines = ["| event | matcher | timeout (s) | deadline (s) | what gitmem does |", "|---|---|---|---|---|"]
    for _name, claude, matcher, timeout, deadline, _handler, summary in TABLE:
        shown = f"`{matcher}`" if matcher else ""
        lines.append(f"| `{claude}` | {shown} | {timeout} | {deadline:g} | {summary} |")
    return "\n".join(lines) + "\n"
