"""Three-way merge of wiki pages for ``gitmem sync`` (pure functions, called by :func:`gitmem.sync.merge.merge_file`).

Field by field, like memories: ``tags`` and ``sources`` as sets (what one side added is kept, what one side removed
stays removed unless the other side touched it), ``created`` the older, ``updated`` the newer, ``title``,
``category`` and ``confidence`` three-way with the newer page winning a two-sided change. The body merges line by
line with ``merge3``; when both sides changed the same lines, nothing is dropped: the page keeps the newer body
and gets the other side's body as a visible ``## Conflicting version`` section, with ``conflicted: true`` in the
frontmatter until someone edits it away. Generated pages (``index.md``, ``environment.md``) take the newer side:
the next wiki write regenerates them anyway.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gitmem.errors import DocumentError
from gitmem.store import wikipage as wp
from gitmem.sync.merge import merge_text
from gitmem.text.threeway import three_way

CONFLICT_HEADING = "Conflicting version (kept by sync)"


def _set_merge(base: tuple[str, ...] | None, ours: tuple[str, ...], theirs: tuple[str, ...]) -> tuple[str, ...]:
    def union(o: tuple[str, ...], t: tuple[str, ...]) -> tuple[str, ...]:
        removed = {item for item in base or () if item not in o or item not in t}
        return tuple(item for item in dict.fromkeys((*o, *t)) if item not in removed)

    return three_way(base, base is not None, ours, theirs, union)


def _pick(name: str, base: wp.WikiPage | None, ours: wp.WikiPage, theirs: wp.WikiPage, winner: wp.WikiPage) -> Any:
    return three_way(getattr(base, name, None), base is not None, getattr(ours, name), getattr(theirs, name),
                     lambda _o, _t: getattr(winner, name))


def merge_pages(base: wp.WikiPage | None, ours: wp.WikiPage, theirs: wp.WikiPage) -> tuple[wp.WikiPage, bool]:
    """The merged page and whether the bodies truly conflicted (then both bodies are in it)."""
    winner, loser = (ours, theirs) if (ours.updated, wp.dumps(ours)) >= (theirs.updated, wp.dumps(theirs)) \
        else (theirs, ours)
    values = {name: _pick(name, base, ours, theirs, winner) for name in ("title", "category", "confidence")}
    values["tags"] = _set_merge(base.tags if base else None, ours.tags, theirs.tags)
    values["sources"] = _set_merge(base.sources if base else None, ours.sources, theirs.sources)
    values["created"] = min(ours.created, theirs.created)
    values["updated"] = max(ours.updated, theirs.updated)
    values["conflicted"] = ours.conflicted or theirs.conflicted
    body = merge_text(base.body if base is not None else None, ours.body, theirs.body)
    conflict = body is None
    if body is None:
        body = f"{winner.body}\n\n{wp.section(loser.body, CONFLICT_HEADING)}"
        values["conflicted"] = True
    extra = {**loser.extra, **winner.extra}
    return replace(ours, body=body, extra=extra, **values), conflict


def merge_page_file(path: str, base: bytes | None, ours: bytes, theirs: bytes) -> tuple[bytes, str] | None:
    """The merged content of a wiki page changed on both sides and a conflict note ("" when none); None when a
    side is not a readable page (the caller then falls back to a plain text merge)."""
    name = path.rsplit("/", 1)[-1][:-3]

    def parse(data: bytes | None) -> wp.WikiPage | None:
        if data is None:
            return None
        try:
            return wp.loads(data.decode("utf-8"), name, path)
        except (UnicodeDecodeError, DocumentError):
            return None

    o, t = parse(ours), parse(theirs)
    if o is None or t is None:
        return None
    if name in wp.RESERVED_PAGES and (o.generated or t.generated):
        newer = o if (o.updated, ours) >= (t.updated, theirs) else t
        return wp.dumps(newer).encode(), ""
    merged, conflict = merge_pages(parse(base), o, t)
    note = f"{path}: both sides changed the same lines; both versions are in the page" if conflict else ""
    return wp.dumps(merged).encode(), note
