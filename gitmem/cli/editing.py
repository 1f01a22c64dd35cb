"""Editing a stored document in $EDITOR (``gitmem edit``, ``gitmem wiki edit``): a draft file, the editor, the text
it left. Whatever the command then refuses stays in the draft, which ``--draft`` takes up again."""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from pathlib import Path

from gitmem.errors import GitmemError


def run_editor(path: Path, *, fresh: bool) -> None:
    """Open ``path`` in $VISUAL, $EDITOR or vi. A draft nobody could edit (``fresh``: as it was written, the editor
    did not start) is removed; one the editor left with an error is kept and named."""
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    try:
        code = subprocess.call([*shlex.split(editor), str(path)])
    except OSError as exc:
        if fresh:
            path.unlink(missing_ok=True)
        raise GitmemError(f"cannot start the editor '{editor}': {exc.strerror}", "set $EDITOR") from None
    if code != 0:
        raise GitmemError(f"the editor '{editor}' exited with status {code}", f"your draft is kept at {path}")


def edit_draft(original: str, draft_path: Path | None) -> tuple[str, Path] | None:
    """The text the editor left and its draft, starting from ``original`` (or from the kept ``draft_path``); None
    when nothing changed (the draft is then removed). The caller removes the draft once the text is saved."""
    if draft_path is None:
        # the draft's name never comes from the document: an id may hold any character, "/" included
        fd, name = tempfile.mkstemp(prefix="gitmem-edit-", suffix=".md")
        draft = Path(name)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(original)
    else:
        draft = draft_path
    run_editor(draft, fresh=draft_path is None)
    edited = draft.read_bytes().decode("utf-8", "replace")
    if edited == original:
        draft.unlink()
        return None
    return edited, draft


def again(command: list[str], draft: Path) -> str:
    """The advice for a draft the command refused: fix it, then run ``command`` on it."""
    return f"fix it, then go on with: {shlex.join([*command, '--draft', str(draft)])}"
