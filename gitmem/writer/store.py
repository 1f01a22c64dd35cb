"""A work's writer memory in the memory repository (``writer/<work>/``): add, update, list, show, search and
check a line; every change one commit through the store's lock, with secrets redacted.

Used only through explicit commands (``gitmem writer ...``): the coding hooks never write it; the warm-up they
start embeds its notes (:meth:`gitmem.api.Repository.embed_pages`)."""

from __future__ import annotations

import builtins
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.errors import DocumentError, NotFoundError, ValidationError
from gitmem.files.atomic import read_text_inside
from gitmem.redact.engine import redact
from gitmem.store import document as docs
from gitmem.text.counted import counted
from gitmem.writer import entities as we

if TYPE_CHECKING:
    from gitmem.embeddings.runtime import Embedder
    from gitmem.store.layout import Issue
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
        #: the files the last :meth:`list` could not read, each error naming its file and what is wrong
        self.warnings: builtins.list[DocumentError] = []

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
            try:
                entity = self._read(kind, path)
            except DocumentError:
                if path.stem in (name, slug):  # the file of that very name: say what is wrong with it
                    raise
                continue  # another file, unreadable: it cannot be matched by its title (list and doctor name it)
            if path.stem in (name, slug) or entity.title.lower() == name.lower() or (
                    pair is not None and {str(entity.fields.get(k) or "").lower() for k in ("a", "b")} == pair):
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

    def _read(self, kind: str, path: Path) -> we.Entity:
        """The entity in ``path``. Raises :class:`DocumentError` naming the file and what stops it being read."""
        return read_file(self.repo.path, path.relative_to(self.repo.path).as_posix(), kind)

    def show(self, kind: str, name: str) -> we.Entity:
        found = self._find(kind, name)
        if found is None:
            raise NotFoundError(f"no {kind} '{name}' in work {self.work}",
                                f"list them with: gitmem writer {kind} list --work {self.work}")
        return found[1]

    def list(self, kind: str) -> builtins.list[we.Entity]:
        """Every readable entity of ``kind``, by file name; the files that cannot be read are in :attr:`warnings`."""
        folder = self.repo.path / self.rel / we.FOLDERS[we.check_kind(kind)]
        found: builtins.list[we.Entity] = []
        self.warnings = []
        for path in sorted(folder.glob("*.md")) if folder.is_dir() else []:
            try:
                found.append(self._read(kind, path))
            except DocumentError as exc:
                self.warnings.append(exc)
        return found

    def save(self, what: str, title: str, *, notes: str | None = None, update: bool = False,
             **fields: Any) -> tuple[we.Entity, str]:
        """Add (``update=False``, refused when it exists) or update an entity; (entity, commit SHA)."""
        values = we.clean_fields(we.check_kind(what), {k: self._scrub(v) for k, v in fields.items()})
        title = self._scrub(" ".join(title.split()))
        notes = self._scrub(notes) if notes is not None else None
        now = docs.format_time(docs.utcnow())
        with self.repo.git.locked():
            self._characters_exist(what, values)
            if not update:  # before the lookup, which cannot match a file it cannot read by the title inside it
                name = we.entity_name(what, title, values)
                rel = self._rel(what, name)
                _refuse_unreadable(self.repo.path, rel, what, f"adding {what} '{title}'")
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
                if os.path.lexists(self.repo.path / rel):  # readable (see above), and holding another title
                    other = read_file(self.repo.path, rel, what)
                    raise ValidationError(f"{rel} already holds the {what} '{other.title}'",
                                          f"change it with: gitmem writer {what} update, or choose another name")
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


def read_file(repo_path: Path, rel: str, kind: str) -> we.Entity:
    """The entity of ``kind`` in the file ``rel`` of the repository. Raises :class:`DocumentError` naming the file and
    what stops it being read: broken YAML, an invalid field, not UTF-8, a symbolic link (never followed)."""
    text = read_text_inside(repo_path, rel)
    return we.loads(text, kind, rel.rsplit("/", 1)[-1].removesuffix(".md"), rel)


def _refuse_unreadable(repo_path: Path, rel: str, kind: str, doing: str) -> None:
    """Refuse ``doing`` (a write of the file ``rel``) when that file exists but cannot be read: the write would
    replace what it holds without having read it."""
    if not os.path.lexists(repo_path / rel):
        return
    try:
        read_file(repo_path, rel, kind)
    except DocumentError as exc:
        why = exc.message.removeprefix(f"{rel}: ")
        raise DocumentError(f"{rel} cannot be read ({why}), and {doing} would replace it, losing what it holds; "
                            "nothing was written",
                            f"fix the file by hand, or restore its last good version (git -C {repo_path} log -- "
                            f"{rel} lists them), then run the command again") from None


def doctor_issues(repo_path: Path) -> builtins.list[Issue]:
    """``doctor``'s findings about writer memory: an error for each note under ``writer/<work>/<kind folder>/``
    that cannot be read (what is wrong with it), then how many are readable. A file that is a symbolic link is left
    to ``doctor``'s own check of links."""
    from gitmem.store.layout import Issue

    root = repo_path / we.WRITER_DIR
    issues: builtins.list[Issue] = []
    count = 0
    works = sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink()) if root.is_dir() else []
    for work in works:
        for kind, folder_name in we.FOLDERS.items():
            folder = work / folder_name
            if not folder.is_dir() or folder.is_symlink():
                continue
            for path in sorted(folder.glob("*.md")):
                if path.is_symlink():
                    continue
                try:
                    read_file(repo_path, path.relative_to(repo_path).as_posix(), kind)
                    count += 1
                except DocumentError as exc:
                    issues.append(Issue("error", path.relative_to(repo_path).as_posix(),
                                        f"{exc.message} ({exc.hint})" if exc.hint else exc.message))
    if works:
        issues.append(Issue("ok", f"{we.WRITER_DIR}/", f"{counted(count, 'writer note')} readable"))
    return issues


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
