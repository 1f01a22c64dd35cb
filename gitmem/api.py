"""The repository object :func:`gitmem.open` returns: the store's verbs plus ``search`` and ``recall``."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.config import Config
from gitmem.errors import RepoNotFoundError, ValidationError
from gitmem.store.memories import MemoryRepo

if TYPE_CHECKING:
    from gitmem.recall import RecallResult
    from gitmem.search.hit import Hit
    from gitmem.search.index import Index
    from gitmem.store.document import Memory
    from gitmem.store.layout import Issue
    from gitmem.wiki.store import Wiki
    from gitmem.writer.store import Writer


class Repository(MemoryRepo):
    """A memory repository: ``remember``/``get``/``list``/``forget``/``restore``/``log``/``import_records``
    from :class:`~gitmem.store.memories.MemoryRepo`, and ``search``/``recall``/``reindex``."""

    _index: Index | None = None

    def index(self, *, embedder: str = "auto") -> Index:
        """The search index (opened once per object, refreshed from git on every search)."""
        from gitmem.search.index import open_index

        if self._index is None or embedder != "auto":
            index = open_index(self, embedder=embedder)
            if embedder != "auto":
                return index
            self._index = index
        return self._index

    def search(self, query: str, k: int = 10, *, related_only: bool = True, **filters: Any) -> list[Hit]:
        """The ``k`` best memories for ``query``; filters: ``type``, ``category``, ``tags``, ``project``,
        ``include_deprecated``, ``mode`` (``hybrid``, ``bm25``, ``vector``), ``now``. Only memories related to it:
        ones that share a word with it, or whose vector is near enough by the model's measured floor
        (``related_only=False``: the nearest ``k`` whatever they are; see :meth:`Index.search`)."""
        import inspect

        from gitmem.search.index import Index

        allowed = set(inspect.signature(Index.search).parameters) - {"self", "query", "k", "related_only"}
        unknown = sorted(set(filters) - allowed)
        if unknown:  # a TypeError naming Index.search, before
            raise ValidationError(f"unknown filter(s) {', '.join(unknown)}", f"allowed: {', '.join(sorted(allowed))}")
        return self.index().search(query, k=k, related_only=related_only, **filters)

    def recall(self, *, cwd: str | Path | None = None, query: str | None = None, budget: int | None = None,
               k: int | None = None, now: datetime | None = None, record_usage: bool = True,
               paths: Iterable[str] = (), embed_missing: bool = True) -> RecallResult:
        """The context block a session in ``cwd`` would get (see :func:`gitmem.recall.recall`); ``paths`` are
        files the session is likely to touch (hot paths, open files); ``embed_missing=False`` embeds only the
        query (the hooks: the warm-up embeds the rest)."""
        from gitmem.recall import recall

        return recall(self, cwd=Path(cwd or Path.cwd()).resolve(), query=query, budget=budget, k=k, now=now,
                      record_usage=record_usage, paths=paths, embed_missing=embed_missing)

    def doctor(self) -> builtins.list[Issue]:
        """:meth:`MemoryRepo.doctor`'s findings, a warning for each file under ``memories/`` that is not read as a
        memory, an error for each wiki page, writer note and instinct file that cannot be read, the versions a sync
        kept beside a file it could not merge (:mod:`gitmem.sync.sidecars`), then secrets already in history
        (:mod:`gitmem.leaks`)."""
        from gitmem.leaks import history_issues
        from gitmem.learn import instincts
        from gitmem.sync.sidecars import doctor_issues
        from gitmem.wiki import store as wiki
        from gitmem.writer import store as writer

        return [*super().doctor(), *self._strays(), *wiki.doctor_issues(self.path),
                *writer.doctor_issues(self.path), *instincts.doctor_issues(self.path), *doctor_issues(self.path),
                *history_issues(self.git, extra_patterns=self.config.redaction.extra_patterns)]

    def _strays(self) -> builtins.list[Issue]:
        """A warning for each file under ``memories/`` that the store does not read
        (:func:`gitmem.store.document.memory_file`: one folder deep, ``.md``), with where it would be read. Left
        alone: hidden files and folders (``.gitkeep``), symbolic links (:func:`~gitmem.store.layout.check_layout`
        reports them) and the versions a sync kept (:func:`~gitmem.sync.sidecars.doctor_issues` does)."""
        import os

        from gitmem.store.document import MEMORIES_DIR, memory_file
        from gitmem.store.layout import Issue
        from gitmem.sync.sidecars import original_path

        issues: builtins.list[Issue] = []
        for folder, dirs, files in os.walk(self.path / MEMORIES_DIR):  # links to folders are not followed
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(files):
                path = Path(folder) / name
                rel = path.relative_to(self.path).as_posix()
                if name.startswith(".") or memory_file(rel) or original_path(name) != name or path.is_symlink():
                    continue
                parts = rel.split("/")
                where = "directly in memories/" if len(parts) == 2 else \
                    f"in a sub-folder of {'/'.join(parts[:2])}/" if len(parts) > 3 else "not a .md file"
                target = f"{MEMORIES_DIR}/{parts[1] if len(parts) > 2 else 'global'}/" \
                    f"{name if name.endswith('.md') else name.rsplit('.', 1)[0] + '.md'}"
                issues.append(Issue("warning", rel, f"{where}: gitmem reads memories/global/<id>.md and "
                                    "memories/<project>/<id>.md only, so list, show, search and recall never see it "
                                    f"(a memory: git -C {self.path} mv {rel} {target}; anything else: move it out "
                                    "of memories/)"))
        return issues

    def move(self, memory_id: str, project: str) -> Memory:
        """Give a memory to ``project`` (project scope) or, with ``project=""``, make it global; one commit that
        moves its file. Raises :class:`~gitmem.errors.ValidationError` when it is there already."""
        from gitmem.errors import ValidationError
        from gitmem.store.document import check_name
        from gitmem.text.records import replace

        memory = self.get(memory_id)
        project = check_name(project, "project") if project else ""  # "bad/x" as remember --project refuses it
        scope = "project" if project else "global"
        if memory.project == project and memory.scope == scope:
            where = f"project {project}" if project else "global"
            raise ValidationError(f"memory '{memory.id}' is already {where}", "nothing to move")
        moved = replace(memory, project=project, scope=scope)
        target = f"project {project}" if project else "global"
        return self.save(moved, subject=f"move: {memory.title} to {target}")

    def reindex(self, progress: Callable[[int], object] | None = None) -> Any:
        """Rebuild the index and the embedding cache from the repository."""
        return self.index().rebuild(progress=progress)

    def embed_pages(self, progress: Callable[[int], object] | None = None,
                    total: Callable[[int], object] | None = None) -> tuple[int, int]:
        """Embed the wiki pages and writer notes that have no vector yet (every project's wiki, every work's
        notes) with the model the memories use; returns (pages embedded, vectors computed: pages and chunks).
        ``total`` hears how many pages of each folder are to embed, ``progress`` each batch done."""
        from gitmem.store.wikipage import WIKI_DIR
        from gitmem.writer.entities import WRITER_DIR

        folders = [(open_folder, name) for top, open_folder in ((WIKI_DIR, self.wiki), (WRITER_DIR, self.writer))
                   if (self.path / top).is_dir()
                   for name in sorted(p.name for p in (self.path / top).iterdir() if p.is_dir())]
        if not folders or (embedder := self.index().embedder) is None:  # no wiki, no writer: no model to load
            return 0, 0
        pages = texts = 0
        for open_folder, name in folders:
            done, read = open_folder(name).embed(embedder, progress, total)
            pages, texts = pages + done, texts + read
        return pages, texts

    def wiki(self, project: str) -> Wiki:
        """The wiki of ``project`` (``wiki/<project>/``): ingest, add, read, query, lint, delete, log."""
        from gitmem.wiki.store import Wiki

        return Wiki(self, project)

    def project_changed(self, project: str, source: str) -> str:
        """The project memory changed: regenerate the ``environment.md`` page of its wiki, if it has one."""
        from gitmem.wiki.store import bridge_project

        return bridge_project(self, project, source)

    def writer(self, work: str) -> Writer:
        """The writer memory of ``work`` (``writer/<work>/``): characters, relationships, scenes, world rules."""
        from gitmem.writer.store import Writer

        return Writer(self, work)


def open_repository(config: Config) -> Repository:
    """Open the memory repository named by ``config`` (raises if it does not exist yet)."""
    if not (config.repo / ".git").is_dir():
        raise RepoNotFoundError.at(config.repo)
    return Repository(config)
