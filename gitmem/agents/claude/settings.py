"""Installing gitmem's hooks into Claude Code's ``settings.json`` and taking them out again.

The merge touches only gitmem's own hook entries (recognised by their command: ``gitmem-hook``,
``-m gitmem.agents.claude.entry`` or ``gitmem hook``): every other key, every other tool's hook and the order of the
groups
stay as they were. Installing twice changes nothing; before any change the previous file is copied to
``settings.json.gitmem-backup``. Uninstalling removes exactly gitmem's entries, and the groups, events and the
``hooks`` table that only held them. Claude Code's own memory settings are never touched.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitmem.agents.claude import events
from gitmem.errors import GitmemError
from gitmem.files.atomic import atomic_write

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


def _read(path: Path) -> tuple[dict[str, Any], bytes | None]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}, None
    except OSError as exc:
        raise SettingsError(f"cannot read {path}: {exc.strerror}", "check its permissions") from None
    if not raw.strip():
        return {}, raw
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise SettingsError(f"{path} is not valid JSON ({exc})",
                            "fix the file first; gitmem did not change it") from None
    if not isinstance(data, dict):
        raise SettingsError(f"{path} does not hold a JSON object", "fix the file first; gitmem did not change it")
    return data, raw


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


def _render(settings: dict[str, Any]) -> str:
    return json.dumps(settings, ensure_ascii=False, indent=2) + "\n"


def _write(path: Path, text: str, original: bytes | None) -> Path | None:
    path.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    if original is not None:
        backup = path.with_name(path.name + BACKUP_SUFFIX)
        backup.write_bytes(original)
    atomic_write(path, text.encode("utf-8"), mode=path.stat().st_mode & 0o777 if original is not None else None)
    return backup


def install(path: Path, base_command: str, *, dry_run: bool = False) -> Change:
    """Merge gitmem's hooks (commands ``<base_command> <event>``) into the settings file at ``path``."""
    settings, raw = _read(path)
    new, added, updated = merge(settings, base_command, path)
    if new == settings and raw is not None:
        return Change(path, False, text=_render(settings))
    text = _render(new)
    change = Change(path, True, added=added, updated=updated, text=text)
    if not dry_run:
        change.backup = _write(path, text, raw)
    return change


def uninstall(path: Path, *, dry_run: bool = False) -> Change:
    """Take gitmem's hooks out of the settings file at ``path`` (nothing else changes)."""
    settings, raw = _read(path)
    new, removed = strip(settings, path)
    if not removed:
        return Change(path, False, text=_render(settings) if raw is not None else "")
    text = _render(new)
    change = Change(path, True, removed=removed, text=text)
    if not dry_run:
        change.backup = _write(path, text, raw)
    return change


def installed_events(path: Path) -> list[str]:
    """The events that have a gitmem hook in the settings file (empty when it is missing or unreadable)."""
    try:
        settings, _ = _read(path)
        hooks = _hooks_table(settings, path)
    except SettingsError:
        return []
    return [event for event, groups in hooks.items()
            if any(_is_ours(h) for g in groups for h in g.get("hooks", []))]
