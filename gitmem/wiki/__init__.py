"""The project wiki: ``wiki/<project-id>/*.md`` in the memory repository, a curated knowledge base per project.

Owns the page format (:mod:`.page`), the library behind every ``gitmem wiki`` command (:mod:`.store`), keyword
search over pages (:mod:`.search`, also used by :mod:`gitmem.writer`), ``lint`` (:mod:`.lint`), the sync merge of
pages (:mod:`.merge`, called by :mod:`gitmem.sync.merge`) and what the session hooks ask of the wiki
(:mod:`.lifecycle`).

May import: the memory store and its git layer (commits, lock), :mod:`gitmem.store.document` (names, times, tags),
:mod:`gitmem.redact`, :mod:`gitmem.search.scoring` (CJK-aware analysis), :mod:`gitmem.sync.merge` (``merge_text``),
:mod:`gitmem.store.local`/:mod:`gitmem.learn.patterns` (the session log), :mod:`gitmem.projects` (``environment.md``).
Never imported by the per-tool-call hook path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gitmem.wiki.page import WikiPage
    from gitmem.wiki.store import Wiki, WriteResult

__all__ = ["Wiki", "WikiPage", "WriteResult"]


def __getattr__(name: str) -> Any:
    # resolved lazily: importing gitmem.wiki (e.g. for gitmem.wiki.page in a merge) loads no YAML or git
    if name in ("Wiki", "WriteResult"):
        from gitmem.wiki import store

        return getattr(store, name)
    if name == "WikiPage":
        from gitmem.wiki.page import WikiPage

        return WikiPage
    raise AttributeError(name)
