"""The project wiki: ``wiki/<project-id>/*.md`` in the memory repository, a curated knowledge base per project.

Owns the library behind every ``gitmem wiki`` command (:mod:`.store`), keyword and vector search over pages
(:mod:`.search`, also used by :mod:`gitmem.writer`; what the index stores of a file: :mod:`.documents`; one hit per
page: :mod:`.hits`), ``lint`` (:mod:`.lint`) and what the session hooks ask of the wiki (:mod:`.lifecycle`). The
page format is one of the repository's documents (:mod:`gitmem.store.wikipage`) and the sync merge of pages is
sync's (:mod:`gitmem.sync.wikimerge`), so that neither reaches up here.

May import: the memory store and its git layer (commits, lock), :mod:`gitmem.store.document` (names, times, tags),
:mod:`gitmem.store.wikipage` (the page format), :mod:`gitmem.redact`, :mod:`gitmem.search.scoring` (CJK-aware
analysis, snippets), :mod:`gitmem.search.chunks` (long pages cut as memories are), :mod:`gitmem.search.pagevectors`
(the pages' vectors), :mod:`gitmem.search.index` (the model the memories' search loads),
:mod:`gitmem.store.local`/:mod:`gitmem.learn.patterns` (the session log), :mod:`gitmem.projects`
(``environment.md``, regenerated through :func:`.store.bridge_project` when the project memory changes).
Never imported by the per-tool-call hook path.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: a session start's hook process imports this package
if TYPE_CHECKING:
    from typing import Any

    from gitmem.store.wikipage import WikiPage
    from gitmem.wiki.store import Wiki, WriteResult

__all__ = ["Wiki", "WikiPage", "WriteResult"]


def __getattr__(name: str) -> Any:
    # resolved lazily: importing gitmem.wiki loads no YAML or git
    if name in ("Wiki", "WriteResult"):
        from gitmem.wiki import store

        return getattr(store, name)
    if name == "WikiPage":
        from gitmem.store.wikipage import WikiPage

        return WikiPage
    raise AttributeError(name)
