"""Three-way merge of wiki pages for ``gitmem sync`` (pure functions, called by :func:`gitmem.sync.merge.merge_file`).

Field by field, like memories: ``tags`` and ``sources`` as sets (what one side added is kept, what one side removed
stays removed unless the other side touched it), ``created`` the older, ``updated`` the newer, ``title``,
``category`` and ``confidence`` three-way with the newer page winning a two-sided change. The body merges line by
line with ``merge3``; sections both sides added at the same place (two ``wiki ingest`` at the end of a page) are
both kept, the older first; where both sides changed the same lines, nothing is dropped: the newer page's lines
stay and the other side's lines of that region follow under a visible ``## Conflicting version`` heading (the same
page made on both sides: the whole other body), with ``conflicted: true`` in the frontmatter while the page holds
such a section (``gitmem wiki edit`` settles it). Generated pages (``index.md``, ``environment.md``) take the newer
side: the next wiki write regenerates them anyway.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gitmem.errors import DocumentError
from gitmem.store import wikipage as wp
from gitmem.sync.merge import merge_lines, merge_text
from gitmem.text.threeway import three_way


def _set_merge(base: tuple[str, ...] | None, ours: tuple[str, ...], theirs: tuple[str, ...]) -> tuple[str, ...]:
    def union(o: tuple[str, ...], t: tuple[str, ...]) -> tuple[str, ...]:
        removed = {item for item in base or () if item not in o or item not in t}
        return tuple(item for item in dict.fromkeys((*o, *t)) if item not in removed)

    return three_way(base, base is not None, ours, theirs, union)


def _pick(name: str, base: wp.WikiPage | None, ours: wp.WikiPage, theirs: wp.WikiPage, winner: wp.WikiPage) -> Any:
    return three_way(getattr(base, name, None), base is not None, getattr(ours, name), getattr(theirs, name),
                     lambda _o, _t: getattr(winner, name))


def _both(kept: str, lost: str) -> str:
    """A body that keeps ``kept`` and the whole of ``lost`` under the conflict heading."""
    return f"{kept}\n\n{wp.section(lost, wp.CONFLICT_HEADING)}"


def merge_body(base: str, ours: str, theirs: str, *, ours_first: bool, ours_win: bool) -> tuple[str, bool]:
    """Merge a page's body line by line (``merge3``): where both sides added lines at the same place and removed
    none (two sections ingested at the end of a page on two machines), both additions are kept, the older side's
    first (``ours_first``); where both changed the same lines, the winner's lines stay and the other side's
    follow under a ``## Conflicting version`` heading, that region only. Returns the body and whether it holds
    such a conflict."""
    clashed: list[bool] = []

    def resolve(removed: list[str], mine: list[str], other: list[str]) -> list[str]:
        if not removed:  # nothing removed: two insertions at one place
            first, second = (mine, other) if ours_first else (other, mine)
            gap = [""] if first and first[-1].strip() and second and second[0].strip() else []
            return [*first, *gap, *second]
        clashed.append(True)
        kept, lost = (mine, other) if ours_win else (other, mine)
        return [*kept, "", f"## {wp.CONFLICT_HEADING}", "", *lost, ""]

    body = merge_lines(base, ours, theirs, resolve)
    if body is None:  # merge3 missing: the other side's whole body, as for a page made on both sides
        kept, lost = (ours, theirs) if ours_win else (theirs, ours)
        return _both(kept, lost), True
    return body, bool(clashed)


def merge_pages(base: wp.WikiPage | None, ours: wp.WikiPage, theirs: wp.WikiPage) -> tuple[wp.WikiPage, bool]:
    """The merged page and whether the bodies truly conflicted (then both bodies are in it)."""
    winner, loser = (ours, theirs) if (ours.updated, wp.dumps(ours)) >= (theirs.updated, wp.dumps(theirs)) \
        else (theirs, ours)
    values = {name: _pick(name, base, ours, theirs, winner) for name in ("title", "category", "confidence")}
    values["tags"] = _set_merge(base.tags if base else None, ours.tags, theirs.tags)
    values["sources"] = _set_merge(base.sources if base else None, ours.sources, theirs.sources)
    values["created"] = min(ours.created, theirs.created)
    values["updated"] = max(ours.updated, theirs.updated)
    if base is None:  # the same page made on both sides: nothing in common to merge by
        merged = merge_text(None, ours.body, theirs.body)
        conflict = merged is None
        body = _both(winner.body, loser.body) if merged is None else merged
    else:
        body, conflict = merge_body(base.body, ours.body, theirs.body, ours_first=ours.updated <= theirs.updated,
                                    ours_win=winner is ours)
    # the flag follows the body: a side that settled an earlier conflict (``gitmem wiki edit``) stays settled
    values["conflicted"] = conflict or wp.holds_conflict(body)
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
