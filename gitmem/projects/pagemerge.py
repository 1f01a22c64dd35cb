"""Three-way merge of project pages (``projects/<id>.md``): pure functions over :class:`~.memory.ProjectFile`.

``gitmem sync`` calls :func:`merge_page_file` for a project page both machines changed. A line merge (``merge3``)
is the wrong tool here: the learner on each machine writes its new notes at the top of Notes, so two sessions in
the same project always "change the same lines", and every such sync ended in a conflict file. The page is
merged the way the learner itself merges notes, parsed and written back with :mod:`gitmem.projects.memory`'s own
``parse``/``render``:

- **sections**, and the **lines** of each section, are a union: what either side added stays (once: identical
  lines, and in Notes two lines the learner takes for the same note, whatever their date, are one, the newer
  date kept); what one side removed is removed when the other side left it as it was (a section removed on one
  side and edited on the other keeps the edit);
- **order**: ours, with each line only theirs has placed after the line it follows in theirs (and after ours'
  own additions at that spot), so base order is kept and new notes stay on top, ours' before theirs';
- a ``- (none …)`` placeholder goes when the merged section has another bullet;
- **frontmatter**, field by field as memories are: ``scanned_at`` the newer; ``project``, ``name``, ``root``,
  ``schema_version``, unknown keys and the title three-way, the side with the newer scan winning when both
  changed a field (ties broken by content, so both machines pick the same).

The result never depends on a line merge conflict, so a readable page never conflicts. A side that is not a
readable page (not UTF-8, or text the parser would drop) is left to the caller's whole-file rule.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Hashable, Mapping
from pathlib import Path
from typing import TypeVar

from gitmem.files.atomic import read_inside
from gitmem.projects.memory import PROJECTS_DIR, ProjectFile, parse, project_path, render
from gitmem.projects.toolnotes import note_key
from gitmem.text.threeway import three_way

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

NOTES = "Notes"
_PLACEHOLDER = re.compile(r"\s*- \(none[^()]*\)\s*")
#: what a sync names the other side's version of a file it could not merge (:mod:`gitmem.sync.sidecars`)
SIDE_SUFFIX = re.compile(r"\.conflict-[0-9a-f]{6}")


class _Missing:
    """A frontmatter key a side does not have (``None`` is a value a key can hold)."""

    def __repr__(self) -> str:
        return "MISSING"


_MISSING = _Missing()


def merge_ordered(base: Mapping[K, V] | None, ours: Mapping[K, V], theirs: Mapping[K, V],
                  resolve: Callable[[K, V | None, V, V], V]) -> dict[K, V]:
    """Three-way union of two ordered mappings (lines, sections, frontmatter entries) against ``base`` (None: no
    common ancestor). A key either side has stays, unless it is in ``base`` and one side removed it while the
    other left its value as it was; ``resolve(key, base value or None, ours, theirs)`` gives the value of a key
    both sides have. Ours' order, with each key only theirs has after the key it follows in theirs."""
    def union(_ours: list[tuple[K, V]], _theirs: list[tuple[K, V]]) -> list[tuple[K, V]]:
        return list(_union(base, ours, theirs, resolve).items())

    # as items, so that an order changed on one side counts as that side's change
    mine: list[tuple[K, V]] = list(ours.items())
    other: list[tuple[K, V]] = list(theirs.items())
    common: list[tuple[K, V]] | None = list(base.items()) if base is not None else None
    merged = three_way(common, base is not None, mine, other, union)
    return dict(merged)


def _union(base: Mapping[K, V] | None, ours: Mapping[K, V], theirs: Mapping[K, V],
           resolve: Callable[[K, V | None, V, V], V]) -> dict[K, V]:
    """:func:`merge_ordered` when both sides changed ``base``."""
    old: Mapping[K, V] = base if base is not None else {}
    kept: dict[K, V] = {}
    for key in (*ours, *theirs):
        if key in kept:
            continue
        if key in ours and key in theirs:
            kept[key] = resolve(key, old.get(key), ours[key], theirs[key])
            continue
        value = ours[key] if key in ours else theirs[key]
        if key in old and value == old[key]:
            continue  # removed on the other side and left as it was on this one
        kept[key] = value  # added here, or removed there but edited here: the edit stays
    order = [key for key in ours if key in kept]
    placed = set(order)
    own = {key for key in order if key not in old and key not in theirs}
    previous: K | None = None
    for key in theirs:
        if key in kept and key not in placed:
            at = order.index(previous) + 1 if previous is not None else 0
            while at < len(order) and order[at] in own:  # ours' additions at the same spot come first
                at += 1
            order.insert(at, key)
            placed.add(key)
        if key in placed:
            previous = key
    return {key: kept[key] for key in order}


# -- sections --------------------------------------------------------------------------------------------
def _plain_key(line: str) -> str:
    return line.rstrip()


def _note_line_key(line: str) -> str:
    """In Notes, the learner's own identity of a note (date and error counts left out); other lines as they are."""
    stripped = line.strip()
    return "- " + note_key(stripped[2:]) if stripped.startswith("- ") else line.rstrip()


def _lines(text: str, key: Callable[[str], str]) -> dict[tuple[str, int], str]:
    """The section's lines keyed by (key, occurrence): a line repeated on purpose (a blank line between
    paragraphs) is matched occurrence by occurrence rather than collapsed."""
    seen: Counter[str] = Counter()
    keyed: dict[tuple[str, int], str] = {}
    for line in text.splitlines():
        k = key(line)
        keyed[(k, seen[k])] = line
        seen[k] += 1
    return keyed


def _pick_line(_key: object, base: str | None, ours: str, theirs: str) -> str:
    # two texts of one key: in Notes the same note with other dates, and ISO dates sort, so max is the newer
    return three_way(base, base is not None, ours, theirs, max)


def merge_section(name: str, base: str | None, ours: str, theirs: str) -> str:
    """One section's content merged line by line (see the module docstring); ``base`` None when the section is
    new on both sides."""
    key = _note_line_key if name == NOTES else _plain_key

    def by_line(mine: str, other: str) -> str:
        merged = merge_ordered(_lines(base, key) if base is not None else None, _lines(mine, key),
                               _lines(other, key), _pick_line)
        lines = list(merged.values())
        if any(ln.lstrip().startswith("- ") and not _PLACEHOLDER.fullmatch(ln) for ln in lines):
            lines = [ln for ln in lines if not _PLACEHOLDER.fullmatch(ln)]  # "(none yet)" next to real items
        return "\n".join(lines).strip("\n")

    return three_way(base, base is not None, ours, theirs, by_line)


# -- frontmatter -----------------------------------------------------------------------------------------
def _entries(lines: list[str]) -> dict[tuple[str, int], str]:
    """Unknown frontmatter lines as entries keyed by (key, occurrence); indented lines belong to the key above."""
    groups: list[list[str]] = []
    for line in lines:
        if groups and line[:1] in (" ", "\t"):
            groups[-1].append(line)
        else:
            groups.append([line])
    seen: Counter[str] = Counter()
    keyed: dict[tuple[str, int], str] = {}
    for group in groups:
        name, sep, _value = group[0].partition(":")
        k = name.strip() if sep else group[0]
        keyed[(k, seen[k])] = "\n".join(group)
        seen[k] += 1
    return keyed


def _rank(page: ProjectFile) -> tuple[str, str]:
    return str(page.meta.get("scanned_at", "")), render(page)


def merge_pages(base: ProjectFile | None, ours: ProjectFile, theirs: ProjectFile) -> ProjectFile:
    """Two versions of a project page merged against their common ancestor (None when both created it)."""
    winner = ours if _rank(ours) >= _rank(theirs) else theirs
    has_base = base is not None

    def newer_scan(o: object, t: object) -> object:
        if o is _MISSING or t is _MISSING:
            return t if o is _MISSING else o
        return max(o, t, key=str)

    def winners(name: str) -> Callable[[object, object], object]:
        return newer_scan if name == "scanned_at" else lambda _o, _t: winner.meta.get(name, _MISSING)

    def winners_entry(_key: object, b: str | None, o: str, t: str) -> str:
        return three_way(b, b is not None, o, t, lambda x, y: x if winner is ours else y)

    meta: dict[str, object] = {}
    for name in dict.fromkeys([*ours.meta, *theirs.meta]):
        value = three_way(base.meta.get(name, _MISSING) if base is not None else _MISSING, has_base,
                          ours.meta.get(name, _MISSING), theirs.meta.get(name, _MISSING), winners(name))
        if value is not _MISSING:
            meta[name] = value
    extra = merge_ordered(_entries(base.extra_meta) if base is not None else None, _entries(ours.extra_meta),
                          _entries(theirs.extra_meta), winners_entry)
    title = three_way(base.title if base is not None else None, has_base, ours.title, theirs.title,
                      lambda _o, _t: winner.title)
    sections = merge_ordered(base.sections if base is not None else None, ours.sections, theirs.sections,
                             merge_section)
    return ProjectFile(meta=meta, extra_meta=[ln for entry in extra.values() for ln in entry.split("\n")],
                       title=title, sections=sections)


# -- files -----------------------------------------------------------------------------------------------
def is_page_path(path: str) -> bool:
    """True for ``projects/<id>.md`` (the project pages, not anything beside them)."""
    return path.startswith(PROJECTS_DIR + "/") and path.endswith(".md") and path.count("/") == 1


def read_page(data: bytes | None) -> ProjectFile | None:
    """The page in ``data``; None when there is none, it is not UTF-8, or ``parse`` would drop some of its text
    (lines before the first section, say): such a file is not merged section by section, nothing may be lost."""
    if data is None:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    page = parse(text)
    body = text
    if text.startswith("---\n"):  # the frontmatter as parse reads it: every line of it is kept, as a value or verbatim
        end = text.find("\n---", 3)
        body = text[end + 4:] if end >= 0 else text
    written = {line.strip() for line in render(page).splitlines()}
    if any(line.strip() and line.strip() not in written for line in body.splitlines()):
        return None
    return page


def merge_page_file(path: str, base: bytes | None, ours: bytes, theirs: bytes) -> bytes | None:
    """The merged content of a project page both sides changed; None when ``path`` is not a project page or a
    side is not a readable one (the caller then applies its whole-file rule)."""
    if not is_page_path(path):
        return None
    o, t = read_page(ours), read_page(theirs)
    if o is None or t is None:
        return None
    return render(merge_pages(read_page(base), o, t)).encode("utf-8")


def fold_conflict_versions(repo_path: Path, project: str,
                           page: ProjectFile | None) -> tuple[ProjectFile | None, dict[str, bytes | None]]:
    """``page`` with the versions an older sync left beside it (``projects/<id>.md.conflict-<hex>``, written
    before project pages merged section by section) merged back in, and those files to delete in the same
    commit. A version that is not a readable page is left where it is (``gitmem doctor`` lists it)."""
    folder = repo_path / PROJECTS_DIR
    if folder.is_symlink() or not folder.is_dir():
        return page, {}
    prefix = project_path(project).rsplit("/", 1)[-1]
    gone: dict[str, bytes | None] = {}
    for path in sorted(folder.glob(f"{prefix}.conflict-*")):
        if not SIDE_SUFFIX.fullmatch(path.name[len(prefix):]) or path.is_symlink():
            continue
        rel = f"{PROJECTS_DIR}/{path.name}"
        try:
            other = read_page(read_inside(repo_path, rel))
        except OSError:
            continue
        if other is not None:
            page = other if page is None else merge_pages(None, page, other)  # no common ancestor: the union
            gone[rel] = None
    return page, gone
