"""Editing a stored document in $EDITOR (``gitmem edit``, ``gitmem wiki edit``): a draft file, the editor, the text
it left. Whatever the command then refuses stays in the draft, which ``--draft`` takes up again; beside the draft,
``<draft>.base`` keeps the document as the draft started from it, so a draft taken up later is not saved over a
change made since (a move, another edit, a sync)."""

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
            discard(path)
        raise GitmemError(f"cannot start the editor '{editor}': {exc.strerror}", "set $EDITOR") from None
    if code != 0:
        raise GitmemError(f"the editor '{editor}' exited with status {code}", f"your draft is kept at {path}")


def _base(draft: Path) -> Path:
    return draft.with_name(draft.name + ".base")


def edit_draft(original: str, draft_path: Path | None) -> tuple[str, Path] | None:
    """The text the editor left and its draft, starting from ``original`` (or from the kept ``draft_path``); None
    when nothing changed (the draft is then removed). Raises :class:`GitmemError` when ``original`` is no longer
    what a kept draft started from. The caller calls :func:`check_unchanged` before saving and :func:`discard`
    once the text is saved."""
    if draft_path is None:
        # the draft's name never comes from the document: an id may hold any character, "/" included
        fd, name = tempfile.mkstemp(prefix="gitmem-edit-", suffix=".md")
        draft = Path(name)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(original)
        # readable by its owner only, as mkstemp made the draft: it holds the whole memory
        base = os.open(_base(draft), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(base, "w", encoding="utf-8") as fh:
            fh.write(original)
    else:
        draft = draft_path
        check_unchanged(draft, original)
    run_editor(draft, fresh=draft_path is None)
    edited = draft.read_bytes().decode("utf-8", "replace")
    if edited == original:
        discard(draft)
        return None
    return edited, draft


def check_unchanged(draft: Path, current: str) -> None:
    """Refuse to go on when the stored document (``current``) changed since ``draft`` started from it (a draft
    kept before that check existed has no base: nothing to compare)."""
    try:
        base = _base(draft).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return
    if base != current:
        raise GitmemError("not saved: it changed after this draft was made (saving would undo that change)",
                          f"your draft is kept at {draft}; edit again and carry your changes over")


def discard(draft: Path) -> None:
    """Remove a draft and its base."""
    draft.unlink(missing_ok=True)
    _base(draft).unlink(missing_ok=True)


def again(command: list[str], draft: Path) -> str:
    """The advice for a draft the command refused: fix it, then run ``command`` on it."""
    return f"fix it, then go on with: {shlex.join([*command, '--draft', str(draft)])}"
