"""The session notepad: scratch notes for the next turns, kept in ``local/notepad/<project>.json``: on this
machine only, never committed or pushed (``local/`` is ignored by the memory repository).

Two sections: ``priority`` notes are added to the context of the next :data:`PRIORITY_TURNS` prompts (the
UserPromptSubmit hook calls :func:`prompt_context`), ``working`` notes are only listed (``gitmem notepad show``).
Notes older than :data:`MAX_AGE_HOURS` are dropped. Standard library only, folders as strings or Paths (named
with ``os.path``): the prompt hook imports this.
"""

from __future__ import annotations

import os
import time

from gitmem.store.local import NOTEPAD_DIR
from gitmem.text import quickjson  # not json: the prompt hook reads the notepad

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the prompt hook reads the notepad without importing typing
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from gitmem.store.local import Where
SECTIONS = ("priority", "working")
PRIORITY_TURNS = 3
MAX_AGE_HOURS = 24.0
MAX_NOTES = 50
MAX_CHARS = 500


def notepad_path(local: Where, project: str) -> str:
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in project).strip(".")[:100] or "global"
    return os.path.join(local, NOTEPAD_DIR, f"{safe}.json")


def _fresh(notes: Any, now: float) -> list[dict[str, Any]]:
    if not isinstance(notes, list):
        return []
    return [n for n in notes if isinstance(n, dict) and isinstance(n.get("text"), str)
            and now - float(n.get("time", 0)) < MAX_AGE_HOURS * 3600][-MAX_NOTES:]


def _update(local: Where, project: str, change: Any) -> Any:
    from gitmem.store.local import update_json  # the lock and the atomic write of local state files

    return update_json(notepad_path(local, project), change, timeout=2.0)


def prepare(text: str, extra_patterns: Sequence[str] = ()) -> tuple[str, tuple[str, ...]]:
    """The note :func:`add` stores for ``text`` (one line, every secret redacted) and the kinds of secrets redacted
    from it. Raises :class:`~gitmem.errors.ValidationError` when there is nothing to note, or more than
    :data:`MAX_CHARS` characters: priority notes go into the next prompts as they are, and a note cut short would
    lose its end without a word."""
    from gitmem.redact.engine import redact

    flat = " ".join(text.split())
    if not flat or len(flat) > MAX_CHARS:
        from gitmem.errors import ValidationError

        if not flat:
            raise ValidationError("the note is empty", 'say what to note, e.g. gitmem notepad add "..."')
        raise ValidationError(f"the note is {len(flat)} characters long; a note holds at most {MAX_CHARS}",
                              "shorten it, or keep it as a memory: gitmem remember -")
    redacted = redact(flat, extra_patterns=extra_patterns)
    return redacted.text, redacted.kinds


def add(local: Where, project: str, text: str, section: str = "working", *, now: float | None = None,
        extra_patterns: Sequence[str] = ()) -> tuple[bool, tuple[str, ...]]:
    """Add a note: (False when the same text is already in that section, the kinds of secrets redacted). The text
    is redacted first with the built-in rules and ``extra_patterns`` (the repository's ``[redaction]``); empty text
    is refused (:func:`prepare`) before anything is written."""
    if section not in SECTIONS:
        raise ValueError(f"unknown notepad section {section!r}")
    moment = time.time() if now is None else now
    note, kinds = prepare(text, extra_patterns)

    def apply(data: dict[str, Any]) -> bool:
        notes = _fresh(data.get(section), moment)
        if any(n["text"] == note for n in notes):
            data[section] = notes
            return False
        data[section] = [*notes, {"text": note, "time": moment, "shown": 0}][-MAX_NOTES:]
        return True

    return bool(_update(local, project, apply)), tuple(kinds)


def read(local: Where, project: str, *, now: float | None = None) -> dict[str, list[dict[str, Any]]]:
    """The live notes of each section."""
    try:
        with open(notepad_path(local, project), encoding="utf-8") as fh:
            data = quickjson.loads(fh.read())
    except (OSError, ValueError):
        data = {}
    moment = time.time() if now is None else now
    return {s: _fresh(data.get(s) if isinstance(data, dict) else None, moment) for s in SECTIONS}


def clear(local: Where, project: str, section: str | None = None) -> int:
    """Remove the notes of one section (or both); how many were removed."""
    def apply(data: dict[str, Any]) -> int:
        count = 0
        for name in [section] if section else list(SECTIONS):
            count += len(data.get(name) or [])
            data[name] = []
        return count

    return int(_update(local, project, apply))


def prompt_context(local: Where, project: str, *, now: float | None = None) -> str:
    """The priority notes for the prompt being submitted ("" when none); each note is shown on at most
    :data:`PRIORITY_TURNS` prompts. Reads one small file and writes only when there is something to show."""
    if not os.path.isfile(notepad_path(local, project)):
        return ""
    moment = time.time() if now is None else now
    if not any(int(n.get("shown", 0)) < PRIORITY_TURNS for n in read(local, project, now=moment)["priority"]):
        return ""

    def apply(data: dict[str, Any]) -> list[str]:
        notes = _fresh(data.get("priority"), moment)
        due = [n for n in notes if int(n.get("shown", 0)) < PRIORITY_TURNS]
        for note in due:
            note["shown"] = int(note.get("shown", 0)) + 1
        data["priority"] = notes
        return [str(n["text"]) for n in due]

    texts = _update(local, project, apply)
    if not texts:
        return ""
    return "## Notepad (priority, from earlier turns)\n" + "\n".join(f"- {t}" for t in texts) + "\n"
