"""A work's writer memory in the memory repository (``writer/<work>/``): add, update, list, show, search and
check a line; every change one commit through the store's lock, with secrets redacted.

Used only through explicit commands (``gitmem writer ...``): the coding hooks never write it; the warm-up they
start embeds its notes (:meth:`gitmem.api.Repository.embed_pages`)."""

from __future__ import annotations

import builtins
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.errors import DocumentError, NotFoundError, ValidationError
from gitmem.redact.engine import redact
from gitmem.store import document as docs
from gitmem.writer import entities as we

if TYPE_CHECKING:
    from gitmem.embeddings.runtime import Embedder
    from gitmem.store.memories import MemoryRepo
    from gitmem.wiki.search import Doc, PageIndex, SearchHit
    from gitmem.writer.voice import LineCheck


class Writer:
    """The writer memory of one work."""

    def __init__(self, repo: MemoryRepo, work: str) -> None:
        self.repo = repo
        self.work = docs.name_slug(docs.check_name(work, "work"), 80)
        if not self.work:
            raise ValidationError(f"work {work!r} has no letters or digits", "give a work such as 'the-long-night'")
        self.rel = f"{we.WRITER_DIR}/{self.work}"

    def _rel(self, kind: str, name: str) -> str:
        rel = f"{self.rel}/{we.FOLDERS[kind]}/{name}.md"
        if (self.repo.path / rel).resolve().parent != (self.repo.path / self.rel / we.FOLDERS[kind]).resolve():
            raise ValidationError(f"{kind} name {name!r} leaves the work's folder", "use a plain name")
        return rel

    def _scrub(self, value: Any) -> Any:
        if isinstance(value, str):
            return redact(value, extra_patterns=self.repo.config.redaction.extra_patterns).text
        if isinstance(value, list):
            return [self._scrub(v) for v in value]
        return value

    def _find(self, kind: str, name: str) -> tuple[str, we.Entity] | None:
        """The entity of ``kind`` whose file name or title is ``name``; a relationship ``A & B`` also by its two
        characters in either order (one relationship a pair: ``B & A`` made a second one)."""
        docs.check_name(name, f"{we.check_kind(kind)} name")
        pair = {n.strip().lower() for n in name.split(" & ", 1)} if kind == "relationship" and " & " in name else None
        folder = self.repo.path / self.rel / we.FOLDERS[kind]
        slug = docs.name_slug(name, 80)
        candidates = [folder / f"{slug}.md"] if kind in ("character", "world") else []
        candidates += sorted(folder.glob("*.md")) if folder.is_dir() else []
        for path in candidates:
            if not path.is_file():
                continue
            entity = self._load(kind, path)
            if entity is not None and (path.stem in (name, slug) or entity.title.lower() == name.lower() or (
                    pair is not None and {str(entity.fields.get(k) or "").lower() for k in ("a", "b")} == pair)):
                return path.relative_to(self.repo.path).as_posix(), entity
        return None

    def _characters_exist(self, kind: str, values: dict[str, Any]) -> None:
        """Refuse a relationship or scene naming a character the work does not have: a typo would otherwise become
        a character of its own that no line of dialogue can be checked against."""
        named = [values.get("a"), values.get("b")] if kind == "relationship" else \
            list(values.get("characters") or []) if kind == "scene" else []
        unknown = [str(n) for n in named if n and self._find("character", str(n)) is None]
        if unknown:
            raise ValidationError(f"no character {', '.join(repr(n) for n in unknown)} in work {self.work}",
                                  f"add it first (gitmem writer character add NAME --work {self.work}) or check the "
                                  f"spelling (gitmem writer character list --work {self.work})")

    def _load(self, kind: str, path: Path) -> we.Entity | None:
        try:
            return we.loads(path.read_text("utf-8"), kind, path.stem, path.relative_to(self.repo.path).as_posix())
        except (OSError, UnicodeDecodeError, DocumentError):
            return None

    def show(self, kind: str, name: str) -> we.Entity:
        found = self._find(kind, name)
        if found is None:
            raise NotFoundError(f"no {kind} '{name}' in work {self.work}",
                                f"list them with: gitmem writer {kind} list --work {self.work}")
        return found[1]

    def list(self, kind: str) -> builtins.list[we.Entity]:
        folder = self.repo.path / self.rel / we.FOLDERS[we.check_kind(kind)]
        found = [self._load(kind, p) for p in sorted(folder.glob("*.md"))] if folder.is_dir() else []
        return [e for e in found if e is not None]

    def save(self, what: str, title: str, *, notes: str | None = None, update: bool = False,
             **fields: Any) -> tuple[we.Entity, str]:
        """Add (``update=False``, refused when it exists) or update an entity; (entity, commit SHA)."""
        values = we.clean_fields(we.check_kind(what), {k: self._scrub(v) for k, v in fields.items()})
        title = self._scrub(" ".join(title.split()))
        notes = self._scrub(notes) if notes is not None else None
        now = docs.format_time(docs.utcnow())
        with self.repo.git.locked():
            self._characters_exist(what, values)
            found = self._find(what, title)
            if found is not None and not update:
                raise ValidationError(f"{what} '{title}' already exists in {self.work}",
                                      f"change it with: gitmem writer {what} update")
            if found is None and update:
                raise NotFoundError(f"no {what} '{title}' in work {self.work}",
                                    f"add it with: gitmem writer {what} add")
            if found is not None:
                rel, old = found
                entity = replace(we.merged(old, values, notes), updated=now)
            else:
                name = we.entity_name(what, title, values)
                rel = self._rel(what, name)
                entity = we.Entity(what, name, title, values, (notes or "").strip("\n"), now, now)
            sha = self.repo.commit({rel: we.dumps(entity).encode()},
                                   f"writer: {'update' if found else 'add'} {what} {entity.title}"[:100],
                                   "update" if found else "add", "cli",
                                   extra={"Gitmem-Writer": f"{self.work}/{what}/{entity.name}"})
        return entity, sha

    def search(self, query: str, *, k: int = 10, kind: str | None = None) -> builtins.list[SearchHit]:
        """Search over every entity of the work (English and Chinese): by keywords, and with the embedding model
        also by meaning for the notes that have vectors (:meth:`embed`); no note is embedded here, only the query."""
        if not isinstance(query, str) or not query.strip():  # as gitmem search says: no query is a mistake
            raise ValidationError("the query is empty", 'say what to look for, e.g. gitmem writer search "Lin Mei"')
        index = self._index()
        return index.search(query, k=k, category=we.check_kind(kind) if kind else None,
                            embedder=index.model(self.repo))

    def embed(self, embedder: Embedder, progress: Callable[[int], object] | None = None,
              total: Callable[[int], object] | None = None) -> tuple[int, int]:
        """Embed the notes that have no vector for ``embedder`` yet (:meth:`gitmem.wiki.search.PageIndex.embed`)."""
        return self._index().embed(embedder, progress, total)

    def _index(self) -> PageIndex:
        from gitmem.wiki.search import PageIndex

        return PageIndex(self.repo.path, self.rel, f"writer/{self.work}", _index_doc, recursive=True,
                         derived=self.repo.config.derived_dir)

    def check_line(self, character: str, line: str) -> LineCheck:
        """How ``line`` fits the voice of ``character`` (see :mod:`gitmem.writer.voice`)."""
        from gitmem.writer.voice import check_line

        if not line.strip():
            raise ValidationError("the line is empty", "give the line to check in quotes")
        return check_line(line, self.show("character", character).fields)


def _index_doc(path: Path, key: str) -> Doc | None:
    from gitmem.wiki.search import Doc

    kind = next((k for k, folder in we.FOLDERS.items() if f"/{folder}/" in key), "")
    if not kind:
        return None
    try:
        entity = we.loads(path.read_text("utf-8"), kind, path.stem, key)
    except (OSError, UnicodeDecodeError, DocumentError):
        return None
    return Doc(key, entity.name, entity.title, entity.text(), kind, tuple(entity.fields.get("mood") or ()),
               {"kind": kind})
