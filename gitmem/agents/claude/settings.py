"""Installing gitmem's hooks into Claude Code's ``settings.json`` and taking them out again.

The merge touches only gitmem's own hook entries (recognised by their command: ``gitmem-hook``,
``-m gitmem.agents.claude.entry`` or ``gitmem hook``): every other key, every other tool's hook and the order of the
groups stay as they were. Installing twice changes nothing. The file is edited where gitmem's entries stand, in the
file's own indentation, so every other byte (and a comment, in the JSON-with-comments files of other agents) stays.
Before the first change the file's bytes are copied to ``settings.json.gitmem-backup``, which no later install or
uninstall overwrites. Uninstalling gives those bytes back when nothing but gitmem's entries changed since; else it
removes exactly gitmem's entries, and the groups, events and ``hooks`` table that only held them; a file that held
nothing but gitmem's entries (gitmem created it) is removed. Claude Code's own memory settings are never touched.

The same reading, editing and backup rules serve the MCP installers of the other agents
(:mod:`gitmem.serve.agents`).
"""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitmem.agents.claude import events
from gitmem.errors import GitmemError
from gitmem.files.atomic import atomic_write
from gitmem.text.jsonedit import (
    JSON,
    Dialect,
    Editor,
    JsonDoc,
    Unkeepable,
    parse,
    same_json,
)

#: (Claude Code event, ``gitmem hook`` event, matcher or None for events without matchers, timeout in seconds),
#: from the one table of hook events
HOOK_EVENTS: tuple[tuple[str, str, str | None, int], ...] = tuple(
    (claude, name, matcher, timeout) for name, claude, matcher, timeout, *_ in events.TABLE)
SCOPES = ("user", "project", "local")
BACKUP_SUFFIX = ".gitmem-backup"
_OURS = re.compile(r"(?:^|[\s/\\\"'])gitmem-hook(?:\.exe)?[\"']?(?:\s|$)|"
                   r"\bgitmem\.(?:hookmain|agents\.claude\.entry)\b|"
                   r"(?:^|[\s/\\\"'])gitmem(?:\.exe)?[\"']?\s+(?:--repo\s+\S+\s+)?hook\s")


class SettingsError(GitmemError):
    """Claude Code's settings file cannot be read or has an unexpected shape."""


@dataclass
class Change:
    """What an install or uninstall did (or, with ``dry_run``, would do) to one settings file."""

    path: Path
    changed: bool
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    backup: Path | None = None
    text: str = ""
    #: uninstall wrote the pre-install bytes back (and removed the backup that held them)
    restored: bool = False
    #: uninstall removed the file: it held nothing but gitmem's entries and gitmem had created it
    file_removed: bool = False


def settings_path(scope: str, *, home: Path, cwd: Path) -> Path:
    """``~/.claude/settings.json`` (user), ``.claude/settings.json`` (project) or ``.claude/settings.local.json``."""
    if scope == "user":
        return home / ".claude" / "settings.json"
    if scope == "project":
        return cwd / ".claude" / "settings.json"
    if scope == "local":
        return cwd / ".claude" / "settings.local.json"
    raise GitmemError(f"unknown scope {scope!r}", f"use one of: {', '.join(SCOPES)}")


def is_gitmem_command(command: Any) -> bool:
    return isinstance(command, str) and bool(_OURS.search(command))


def _is_ours(hook: Any) -> bool:
    return isinstance(hook, dict) and is_gitmem_command(hook.get("command"))


def load_json(path: Path, dialect: Dialect = JSON) -> tuple[JsonDoc | None, bytes | None]:
    """The JSON object in the file at ``path`` (None when the file is missing or blank) and the file's bytes (None
    when it is missing)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        raise SettingsError(f"cannot read {path}: {exc.strerror}", "check its permissions") from None
    if not raw.strip():
        return None, raw
    try:
        doc = parse(raw.decode("utf-8"), dialect)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise SettingsError(f"{path} is not valid JSON ({exc})",
                            "fix the file first; gitmem did not change it") from None
    if not isinstance(doc.root.value, dict):
        raise SettingsError(f"{path} does not hold a JSON object", "fix the file first; gitmem did not change it")
    return doc, raw


def read_json(path: Path, dialect: Dialect = JSON) -> tuple[dict[str, Any], bytes | None]:
    """The JSON object in the file at ``path`` (``{}`` when it is missing or blank) and its bytes."""
    doc, raw = load_json(path, dialect)
    return (doc.root.value if doc is not None else {}), raw


def json_text(doc: JsonDoc | None, new: dict[str, Any], path: Path, by_hand: str) -> str:
    """The text of the file read as ``doc`` (None: missing or blank) changed to hold ``new``, as few bytes changed
    as possible. A change that would drop one of the file's comments is refused, saying what to do ``by_hand``."""
    if doc is None:
        return json.dumps(new, ensure_ascii=False, indent=2) + "\n"
    editor = Editor(doc)
    try:
        editor.change(doc.root, new)
        text = editor.result()
        if same_json(parse(text, doc.dialect).root.value, new):  # the edit is checked, not trusted
            return text
    except (Unkeepable, ValueError, RecursionError):
        pass
    if doc.comments:
        raise SettingsError(f"{path} has comments that gitmem cannot keep while changing it", by_hand)
    return editor.rewrite(new)


# -- the file: backup, write, and what uninstall gives back ------------------------------------------------------
def backup_path(path: Path) -> Path:
    """Where the bytes of ``path`` from before gitmem's first change are kept."""
    return path.with_name(path.name + BACKUP_SUFFIX)


def _mode(path: Path) -> int | None:
    try:
        return path.stat().st_mode & 0o777
    except OSError:
        return None


def write_settings(path: Path, text: str, original: bytes | None) -> Path | None:
    """Write ``text`` to ``path``. The first time gitmem changes an existing file, its bytes are copied to the
    backup first; an existing backup is never overwritten (it holds what uninstall gives back). Returns the
    backup written now, if any."""
    path.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    mode = _mode(path) if original is not None else None
    if original is not None and not os.path.lexists(backup_path(path)):
        backup = backup_path(path)
        atomic_write(backup, original, mode=mode)  # the same permissions: ~/.claude.json holds account data
    atomic_write(path, text.encode("utf-8"), mode=mode)
    return backup


def take_out(path: Path, raw: bytes, text: str, data: Any, comments: list[str],
              read_backup: Callable[[bytes], tuple[Any, list[str]]], bare: Callable[[Any], tuple[Any, bool]], *,
              dry_run: bool) -> tuple[str, Path | None, str]:
    """Finish an uninstall whose edited file is ``text`` (holding ``data`` and ``comments``, gitmem's entries out).

    ``bare(data)`` gives the data without gitmem's entries and without the tables they live in when those are
    empty (an install fills a ``"hooks": {}`` the user had, its uninstall drops it), and whether gitmem's entries
    were there. The pre-install bytes in the backup are written back when the backup holds none of gitmem's
    entries and the same data and comments as ``text`` (nothing else changed since the install), and the backup
    goes (the file holds its bytes again). A file left with nothing that held nothing before either (no backup:
    gitmem created it) is removed. Else ``text`` is written. Returns (the file's text, "" when removed; the
    backup written; ``restored``, ``removed`` or "")."""
    backup = backup_path(path)
    exists = os.path.lexists(backup)
    original = b""
    same = empty = False
    left, _ = bare(data)
    if exists:
        try:
            original = backup.read_bytes()
            before, before_comments = read_backup(original)
            pre_install, ours = bare(before)
            same = not ours and same_json(pre_install, left) and before_comments == comments
            empty = not pre_install and not before_comments
        except (OSError, ValueError, RecursionError, GitmemError):
            pass  # a backup that cannot be read or parsed: the edited text is written, the backup stays
    if same:
        if not dry_run:
            atomic_write(path, original, mode=_mode(path))
            backup.unlink()
        return original.decode("utf-8", "replace"), None, "restored"
    if not left and not comments and (not exists or empty):
        if not dry_run:
            path.unlink()
            if exists:  # it held only gitmem's entries (an older gitmem wrote it)
                backup.unlink()
        return "", None, "removed"
    return text, None if dry_run else write_settings(path, text, raw), ""


def pruned(data: Any, keys: tuple[str, ...]) -> Any:
    """``data`` without the table at ``keys``, and the tables above it, while they are empty."""
    tables = [data]
    for key in keys:
        node = tables[-1].get(key) if isinstance(tables[-1], dict) else None
        if not isinstance(node, dict):
            return data
        tables.append(node)
    for depth in range(len(keys), 0, -1):
        if tables[depth]:
            break
        del tables[depth - 1][keys[depth - 1]]
    return data


def _bare_hooks(path: Path) -> Callable[[Any], tuple[Any, bool]]:
    def bare(settings: Any) -> tuple[Any, bool]:
        result, removed = strip(settings, path)
        hooks = result.get("hooks")
        if isinstance(hooks, dict):
            for event in [event for event, groups in hooks.items() if groups == []]:
                del hooks[event]
        return pruned(result, ("hooks",)), bool(removed)
    return bare


def json_backup(dialect: Dialect) -> Callable[[bytes], tuple[Any, list[str]]]:
    def read(raw: bytes) -> tuple[Any, list[str]]:
        if not raw.strip():
            return {}, []
        doc = parse(raw.decode("utf-8"), dialect)
        if not isinstance(doc.root.value, dict):
            raise ValueError("not a JSON object")
        return doc.root.value, doc.comment_texts()
    return read


def decoded(raw: bytes | None) -> str:
    return raw.decode("utf-8", "replace") if raw is not None else ""


def _hooks_table(settings: dict[str, Any], path: Path) -> dict[str, Any]:
    hooks = settings.get("hooks", {})
    if not isinstance(hooks, dict):
        raise SettingsError(f"{path}: 'hooks' is not an object", "fix the file first; gitmem did not change it")
    for event, groups in hooks.items():
        if not isinstance(groups, list) or not all(isinstance(g, dict) for g in groups):
            raise SettingsError(f"{path}: hooks.{event} is not a list of objects",
                                "fix the file first; gitmem did not change it")
        for group in groups:
            if not isinstance(group.get("hooks", []), list):
                raise SettingsError(f"{path}: a hooks.{event} entry has a 'hooks' that is not a list",
                                    "fix the file first; gitmem did not change it")
    return hooks


def merge(settings: dict[str, Any], base_command: str, path: Path = Path("settings.json")) -> tuple[
        dict[str, Any], list[str], list[str]]:
    """``settings`` with gitmem's hooks in place: (new settings, events added, events updated)."""
    result = copy.deepcopy(settings)
    hooks = _hooks_table(result, path)
    added: list[str] = []
    updated: list[str] = []
    for event, name, matcher, timeout in HOOK_EVENTS:
        hook = {"type": "command", "command": f"{base_command} {name}", "timeout": timeout}
        group: dict[str, Any] = ({"matcher": matcher} if matcher is not None else {}) | {"hooks": [hook]}
        groups: list[dict[str, Any]] = hooks.setdefault(event, [])
        found = False
        emptied: set[int] = set()
        for index, existing in enumerate(groups):
            entries = existing.get("hooks", [])
            if not any(_is_ours(h) for h in entries):
                continue
            if found:  # a duplicate from an older install: drop it
                existing["hooks"] = [h for h in entries if not _is_ours(h)]
                if not existing["hooks"]:
                    emptied.add(index)
                updated.append(event)
                continue
            found = True
            if all(_is_ours(h) for h in entries):
                if existing != group:
                    groups[index] = group
                    updated.append(event)
            else:
                position = next(i for i, h in enumerate(entries) if _is_ours(h))
                if entries[position] != hook:
                    entries[position] = hook
                    updated.append(event)
        hooks[event] = [g for i, g in enumerate(groups) if i not in emptied]
        if not found:
            hooks[event].append(group)
            added.append(event)
    result["hooks"] = hooks
    return result, added, sorted(set(updated))


def strip(settings: dict[str, Any], path: Path = Path("settings.json")) -> tuple[dict[str, Any], list[str]]:
    """``settings`` without gitmem's hooks (and without the groups/events/table that only held them)."""
    result = copy.deepcopy(settings)
    if "hooks" not in result:
        return result, []
    hooks = _hooks_table(result, path)
    removed: list[str] = []
    for event in list(hooks):
        groups = hooks[event]
        kept = []
        for group in groups:
            entries = group.get("hooks", [])
            if any(_is_ours(h) for h in entries):
                removed.append(event)
                group = {**group, "hooks": [h for h in entries if not _is_ours(h)]}
                if not group["hooks"]:
                    continue
            kept.append(group)
        if event in removed and not kept:
            del hooks[event]
        else:
            hooks[event] = kept
    if removed and not hooks:
        del result["hooks"]
    return result, sorted(set(removed))


def install(path: Path, base_command: str, *, dry_run: bool = False) -> Change:
    """Merge gitmem's hooks (commands ``<base_command> <event>``) into the settings file at ``path``."""
    doc, raw = load_json(path)
    settings = doc.root.value if doc is not None else {}
    new, added, updated = merge(settings, base_command, path)
    if same_json(new, settings) and raw is not None:
        return Change(path, False, text=decoded(raw))
    text = json_text(doc, new, path, "add gitmem's hooks by hand")
    change = Change(path, True, added=added, updated=updated, text=text)
    if not dry_run:
        change.backup = write_settings(path, text, raw)
    return change


def uninstall(path: Path, *, dry_run: bool = False) -> Change:
    """Take gitmem's hooks out of the settings file at ``path``: its pre-install bytes when nothing else changed
    since, else exactly gitmem's entries; a file gitmem created and that holds nothing else is removed."""
    doc, raw = load_json(path)
    if doc is None or raw is None:
        return Change(path, False, text=decoded(raw))
    new, removed = strip(doc.root.value, path)
    if not removed:
        return Change(path, False, text=doc.text)
    text = json_text(doc, new, path, "take gitmem's hooks out by hand")
    text, backup, outcome = take_out(path, raw, text, new, [], json_backup(JSON),  # plain JSON: no comments
                                      _bare_hooks(path), dry_run=dry_run)
    return Change(path, True, removed=removed, text=text, backup=backup, restored=outcome == "restored",
                  file_removed=outcome == "removed")


def installed_events(path: Path) -> list[str]:
    """The events that have a gitmem hook in the settings file (empty when it is missing or unreadable)."""
    try:
        settings, _ = read_json(path)
        hooks = _hooks_table(settings, path)
    except SettingsError:
        return []
    return [event for event, groups in hooks.items()
            if any(_is_ours(h) for g in groups for h in g.get("hooks", []))]
