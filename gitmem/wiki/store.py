"""A project's wiki in the memory repository: ``wiki/<project-id>/<page>.md``, every change one commit.

:class:`Wiki` is the one implementation behind ``gitmem wiki`` (and any later MCP or HTTP surface): ``ingest``
(same title → the text becomes a new timestamped section of the existing page, never a second page), ``add``,
``edit`` (the whole page as edited by hand), ``read``, ``list``, ``delete``, ``log``, ``query`` and ``lint``.
Writes take the repository's writer lock, read the page inside it (so two processes ingesting the same title both
end up in one page), redact secrets, and commit the page together with the regenerated ``index.md`` (table of
contents by category) and ``environment.md`` (bridged from the project memory ``projects/<id>.md``) in one commit
with ``Gitmem-Op``/``Gitmem-Page`` trailers.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from gitmem.errors import DocumentError, GitmemError, NotFoundError, ValidationError
from gitmem.git.messages import LogEntry
from gitmem.redact.engine import redact, redact_value
from gitmem.store import document as docs
from gitmem.store import wikipage as wp
from gitmem.text.counted import counted

if TYPE_CHECKING:
    from gitmem.embeddings.runtime import Embedder
    from gitmem.store.layout import Issue
    from gitmem.store.memories import MemoryRepo
    from gitmem.wiki.lint import Finding
    from gitmem.wiki.search import Doc, PageIndex, SearchHit


@dataclass(frozen=True)
class WriteResult:
    """What a write did: the page, its path, the commit ("" when nothing changed), whether an existing page took
    the text as a new section, and the kinds of secrets redacted."""

    page: str
    path: str
    commit: str
    merged: bool
    redacted: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"page": self.page, "path": self.path, "commit": self.commit, "merged": self.merged,
                "redacted": list(self.redacted)}


class Wiki:
    """The wiki of one project in a memory repository."""

    def __init__(self, repo: MemoryRepo, project: str) -> None:
        self.repo = repo
        self.project = docs.check_name(project, "project")
        self.rel = f"{wp.WIKI_DIR}/{self.project}"
        self.dir = repo.path / self.rel
        #: the files the last :meth:`pages` could not read: page name → the error naming the file and what is wrong
        self.unreadable: dict[str, DocumentError] = {}

    # -- reading ---------------------------------------------------------------------------------------
    def _file(self, name: str) -> Path:
        path = (self.dir / f"{name}.md").resolve()
        if path.parent != self.dir.resolve():  # belt and braces: names are checked before they get here
            raise ValidationError(f"page name {name!r} leaves the wiki folder", "use a plain page name")
        return path

    def exists(self, name: str) -> bool:
        return self._file(name).is_file()

    def read(self, name: str) -> wp.WikiPage:
        """The page called ``name`` (a slug, or a title that slugs to it)."""
        slug = wp.check_page_name(name)
        path = self._file(slug)
        try:
            text = path.read_bytes().decode("utf-8")
        except FileNotFoundError:
            raise NotFoundError(f"no wiki page '{slug}' in project {self.project}",
                                f"list pages with: gitmem wiki list --project {self.project}") from None
        except UnicodeDecodeError:
            raise DocumentError(f"{self.rel}/{slug}.md: not UTF-8 text", "restore it from git") from None
        return wp.loads(text, slug, f"{self.rel}/{slug}.md")

    def pages(self, *, generated: bool = False) -> builtins.list[wp.WikiPage]:
        """Every readable page, by name; generated pages (index, environment) only with ``generated``. The files that
        cannot be read are left out and kept in :attr:`unreadable`, so that a command can say which it skipped."""
        found: list[wp.WikiPage] = []
        self.unreadable = {}
        if not self.dir.is_dir():
            return found
        for path in sorted(self.dir.glob("*.md")):
            try:
                page = read_page(path, f"{self.rel}/{path.name}")
            except DocumentError as exc:
                self.unreadable[path.stem] = exc
                continue
            if generated or not (page.generated and page.name in wp.RESERVED_PAGES):
                found.append(page)
        return found

    def log(self, name: str | None = None, limit: int | None = None) -> builtins.list[LogEntry]:
        """The audit trail of one page, or of the whole wiki (newest first), read from git."""
        path = f"{self.rel}/{wp.check_page_name(name)}.md" if name else self.rel
        return self.repo.git.log(paths=[path], limit=limit)

    # -- writing ---------------------------------------------------------------------------------------
    def _scrub(self, text: str, kinds: builtins.list[str]) -> str:
        result = redact(text, extra_patterns=self.repo.config.redaction.extra_patterns)
        kinds.extend(k for k in result.kinds if k not in kinds)
        return result.text

    def _scrub_values(self, value: Any, kinds: builtins.list[str]) -> Any:
        """Tags or sources (a list, or a comma-separated string) redacted one by one, before they are normalised:
        left to the commit's redaction of the written file, a secret became an unquoted ``[REDACTED:kind]``, a YAML
        list, and the page no longer read."""
        if isinstance(value, str):
            return self._scrub(value, kinds)
        if isinstance(value, (list, tuple)):
            return [self._scrub(v, kinds) if isinstance(v, str) else v for v in value]
        return value

    def _scrub_meta(self, meta: dict[str, Any], kinds: builtins.list[str]) -> dict[str, Any]:
        """An edited page's frontmatter values as written, every string redacted (tags before they are
        lower-cased, keys gitmem does not know included)."""
        clean, found = redact_value(meta, extra_patterns=self.repo.config.redaction.extra_patterns)
        kinds.extend(k for k in found if k not in kinds)
        return dict(clean)

    def _commit(self, changes: dict[str, bytes | None], subject: str, op: str, source: str, names: builtins.list[str],
                body: str = "") -> str:
        for path, content in changes.items():
            if content is not None:
                self._reads_back(path, content)
        changes.update(self._generated(changes))
        return self.repo.commit(changes, subject[:100], op, source,
                                extra={"Gitmem-Page": [f"{self.project}/{n}" for n in names]}, body=body)

    def _reads_back(self, path: str, content: bytes) -> None:
        """Refuse a page that the commit's redaction would leave unreadable (a secret the page's own redaction did
        not reach, in a place where ``[REDACTED:kind]`` breaks the YAML): a commit never makes a page gitmem
        cannot read."""
        text = content.decode("utf-8")
        scrubbed = redact(text, extra_patterns=self.repo.config.redaction.extra_patterns)
        if not scrubbed.kinds:
            return
        try:
            wp.loads(scrubbed.text, path.rpartition("/")[2].removesuffix(".md"), path)
        except DocumentError as exc:
            raise ValidationError(f"{path} holds a secret ({', '.join(scrubbed.kinds)}) where redacting it would "
                                  f"break the page ({exc.message.removeprefix(path + ': ')})",
                                  "remove the secret from the page's fields and try again") from None

    def ingest(self, title: str, text: str, *, category: str | None = None, tags: Any = (),
               confidence: str | None = None, sources: Any = (), source: str = "cli", name: str | None = None
               ) -> WriteResult:
        """Add ``text`` to the page for ``title``: a new page, or a new timestamped section of the page with the
        same name (tags and sources are merged; category and confidence change only when given). Text the page
        already holds word for word is not added again."""
        slug = _writable(title, name)
        kinds: list[str] = []
        body = self._scrub(docs.check_text(text, "page text"), kinds)
        clean_title = self._scrub(title, kinds)
        tags, sources = self._scrub_values(tags, kinds), self._scrub_values(sources, kinds)
        now = docs.utcnow()
        heading = now.strftime("%Y-%m-%d %H:%M:%S UTC")
        with self.repo.git.locked():
            merged = self.exists(slug)
            if merged:
                old = page = self.read(slug)
                if " ".join(body.split()) not in " ".join(old.body.split()):
                    page = replace(page, body=f"{old.body}\n\n{wp.section(body, heading)}".strip("\n"))
                page = replace(
                    page, category=wp.check_category(category, page.category),
                    confidence=wp.check_confidence(confidence, page.confidence),
                    tags=docs.normalise_tags([*page.tags, *docs.normalise_tags(tags)]),
                    sources=tuple(dict.fromkeys([*page.sources, *wp.strings(sources, "sources")]))[-wp.MAX_SOURCES:])
                if page != old:
                    page = replace(page, updated=now)
            else:
                page = wp.make_page(slug, clean_title, wp.section(body, heading), category=category, tags=tags,
                                    confidence=confidence, sources=sources, created=now)
            path = wp.page_path(self.project, slug)
            content = wp.dumps(page).encode()
            sha = "" if merged and content == self._file(slug).read_bytes() else self._commit(
                {path: content}, f"wiki: {'update' if merged else 'add'} {page.title}",
                "update" if merged else "ingest", source, [slug], body=f"{self.project} · {page.category}")
        return WriteResult(slug, path, sha, merged, tuple(kinds))

    def add(self, title: str, text: str, *, category: str | None = None, tags: Any = (),
            confidence: str | None = None, sources: Any = (), source: str = "cli", name: str | None = None
            ) -> WriteResult:
        """Create a page with ``text`` as its body, as written (refused when the page exists: use ``ingest``)."""
        slug = _writable(title, name)
        kinds: list[str] = []
        page = wp.make_page(slug, self._scrub(title, kinds), self._scrub(docs.check_text(text, "page text"), kinds),
                            category=category, tags=self._scrub_values(tags, kinds), confidence=confidence,
                            sources=self._scrub_values(sources, kinds))
        with self.repo.git.locked():
            if self.exists(slug):
                raise ValidationError(f"wiki page '{slug}' already exists",
                                      "add to it with: gitmem wiki ingest --title ..., or delete it first")
            path = wp.page_path(self.project, slug)
            sha = self._commit({path: wp.dumps(page).encode()}, f"wiki: add {page.title}", "add", source, [slug])
        return WriteResult(slug, path, sha, False, tuple(kinds))

    def edit(self, name: str, text: str, *, source: str = "cli") -> WriteResult:
        """Replace the page ``name`` with ``text``, the whole page file as edited (frontmatter and body: what
        ``gitmem wiki edit`` opens): validated, secrets redacted, ``updated`` set to now. ``conflicted`` follows the
        body: set while it holds the ``## Conflicting version`` section a sync left, cleared once that is gone.
        The page keeps its name (its file); the generated pages are refused. No commit when nothing changed."""
        slug = wp.check_page_name(name)
        if slug in wp.RESERVED_PAGES:
            raise ValidationError(f"wiki page '{slug}' is generated: every wiki write replaces it",
                                  "edit the pages it lists, or the project memory (gitmem project) for environment")
        path = wp.page_path(self.project, slug)
        if not text.lstrip("\ufeff").startswith("---"):
            # read as a page without frontmatter, it lost its title, tags, category and dates without a word
            raise ValidationError(f"the edited page '{slug}' has no frontmatter (the --- block with its title, "
                                  "category and tags)", "edit it again and keep the --- block at the top")
        kinds: list[str] = []
        edited = wp.loads(text, slug, path, scrub=lambda meta: self._scrub_meta(meta, kinds))
        body = self._scrub(edited.body, kinds).strip("\n")
        if not body.strip():
            raise ValidationError(f"wiki page '{slug}' would be empty",
                                  f"to remove it: gitmem wiki delete {slug} --project {self.project} --reason ...")
        page = replace(edited, title=" ".join(self._scrub(edited.title, kinds).split()), body=body,
                       conflicted=wp.holds_conflict(body))
        with self.repo.git.locked():
            old = self.read(slug)
            if wp.dumps(replace(page, updated=old.updated)) == wp.dumps(old):
                return WriteResult(slug, path, "", True, tuple(kinds))
            page = replace(page, updated=docs.utcnow())
            sha = self._commit({path: wp.dumps(page).encode()}, f"wiki: edit {page.title}", "update", source, [slug],
                               body=f"{self.project} · {page.category}")
        return WriteResult(slug, path, sha, True, tuple(kinds))

    def delete(self, name: str, reason: str, *, source: str = "cli") -> str:
        """Delete a page (a commit with the reason; git history keeps every version)."""
        reason = " ".join((reason or "").split())
        if not reason:
            raise ValidationError("a reason is required to delete a page", 'pass --reason "why"')
        slug = _writable("", name)
        with self.repo.git.locked():
            page = self.read(slug)
            return self._commit({wp.page_path(self.project, slug): None}, f"wiki: delete {page.title}", "deprecate",
                                source, [slug], body=f"Reason: {reason}")

    def regenerate(self, *, source: str = "cli") -> str:
        """Rebuild ``index.md`` (from every page) and ``environment.md``, and nothing else; the commit SHA, ""
        when both were up to date."""
        with self.repo.git.locked():
            changes = self._generated({}, full=True)
            if not changes:
                return ""
            # the subject names the generated pages that changed ("… environment" after a project scan)
            which = " and ".join(sorted(path.rsplit("/", 1)[-1][:-3] for path in changes))
            return self._commit(changes, f"wiki: regenerate {self.project} {which}", "update", source, [])

    # -- generated pages -------------------------------------------------------------------------------
    def _generated(self, changes: dict[str, bytes | None], *, full: bool = False) -> dict[str, bytes | None]:
        """The index and environment pages as they should be once ``changes`` are written (only those that
        differ from the files on disk). A write updates the index's lines of the pages it changes (reading one
        file, not every page); ``full`` reads every page (``regenerate``, ``lint --fix``)."""
        entries = None if full else {e.name: e for e in index_entries(self.repo.path, self.project)}
        if not entries:
            entries = {p.name: IndexEntry(p.category, p.name, p.title, f"{p.updated:%Y-%m-%d}")
                       for p in self.pages()}
        for path, data in changes.items():
            name = path.rsplit("/", 1)[-1][:-3]
            if not path.startswith(self.rel + "/") or name in wp.RESERVED_PAGES:
                continue
            if data is None:
                entries.pop(name, None)
            else:
                page = wp.loads(data.decode("utf-8"), name)
                entries[name] = IndexEntry(page.category, name, page.title, f"{page.updated:%Y-%m-%d}")
        out: dict[str, bytes | None] = {}
        env = self._environment_body()
        if env:
            self._put_generated(out, wp.ENVIRONMENT_PAGE, "Environment", env, "environment",
                                [f"projects/{self.project}.md"])
            old = entries.get(wp.ENVIRONMENT_PAGE)
            entries[wp.ENVIRONMENT_PAGE] = IndexEntry("environment", wp.ENVIRONMENT_PAGE, "Environment",
                                                      old.updated if old and wp.ENVIRONMENT_PAGE not in out
                                                      else f"{docs.utcnow():%Y-%m-%d}")
        else:
            entries.pop(wp.ENVIRONMENT_PAGE, None)
        if entries:
            self._put_generated(out, wp.INDEX_PAGE, "Index", render_index(self.project, entries.values()),
                                "reference", [])
        return out

    def _put_generated(self, out: dict[str, bytes | None], name: str, title: str, body: str, category: str,
                       sources: builtins.list[str]) -> None:
        path = self._file(name)
        try:
            old: wp.WikiPage | None = wp.loads(path.read_text("utf-8"), name)
        except (OSError, UnicodeDecodeError, DocumentError):
            old = None
        if old is not None and old.body == body.strip("\n") and old.generated:
            return
        page = replace(wp.make_page(name, title, body, category=category, confidence="high", sources=sources,
                                    created=old.created if old else None), generated=True, updated=docs.utcnow())
        out[wp.page_path(self.project, name)] = wp.dumps(page).encode()

    def _environment_body(self) -> str:
        """Stack, frameworks, commands and notes (ports, environment variables) of ``projects/<id>.md``."""
        from gitmem.projects import memory as projects

        pf = projects.read(self.repo.path, self.project)
        if pf is None:
            return ""
        parts = [f"Bridged from the project memory (`projects/{projects.safe_name(self.project)}.md`); "
                 "regenerated when it changes. Edit that file, not this page."]
        for name in ("Tech stack", "Frameworks", "Commands", "Notes"):
            content = pf.sections.get(name, "").strip()
            if content and "(none yet)" not in content:
                parts.append(wp.section(content, name))
        return "\n\n".join(parts) if len(parts) > 1 else ""

    # -- search and checks -----------------------------------------------------------------------------
    def query(self, text: str, *, k: int = 10, category: str | None = None, tags: tuple[str, ...] = ()
              ) -> builtins.list[SearchHit]:
        """Search over the pages (English and Chinese), best first: by keywords, and with the embedding model also
        by meaning for the pages that have vectors (:meth:`embed`: ``gitmem reindex``, the warm-up); no page is
        embedded here, only the query."""
        if category is not None and category not in wp.CATEGORIES:
            raise ValidationError(f"unknown category {category!r}", f"use one of: {', '.join(wp.CATEGORIES)}")
        if not isinstance(text, str) or not text.strip():  # as gitmem search says: no query is a mistake
            raise ValidationError("the query is empty", 'say what to look for, e.g. gitmem wiki query "deploy"')
        index = self._index()
        return index.search(text, k=k, category=category, tags=tags, embedder=index.model(self.repo))

    def embed(self, embedder: Embedder, progress: Callable[[int], object] | None = None,
              total: Callable[[int], object] | None = None) -> tuple[int, int]:
        """Embed the pages that have no vector for ``embedder`` yet (:meth:`gitmem.wiki.search.PageIndex.embed`)."""
        return self._index().embed(embedder, progress, total)

    def _index(self) -> PageIndex:
        from gitmem.wiki.search import PageIndex

        return PageIndex(self.repo.path, self.rel, f"wiki/{self.project}", _index_doc,
                         derived=self.repo.config.derived_dir)

    def lint(self, *, stale_days: int | None = None, max_page_size: int | None = None) -> builtins.list[Finding]:
        """Problems of the wiki (see :mod:`gitmem.wiki.lint`), thresholds from the configuration by default."""
        from gitmem.wiki.lint import lint

        settings = self.repo.config.wiki
        return lint(self, stale_days=settings.stale_days if stale_days is None else stale_days,
                    max_page_size=settings.max_page_size if max_page_size is None else max_page_size)


def read_page(path: Path, rel: str) -> wp.WikiPage:
    """The page in the file ``path`` (``rel`` in the repository). Raises :class:`DocumentError` naming the file and
    what stops it being read: broken YAML, an invalid field, not UTF-8, an error of the file system."""
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise DocumentError(f"{rel}: not UTF-8 text", "re-save it as UTF-8 or restore it with git") from None
    except OSError as exc:
        raise DocumentError(f"{rel}: cannot be read ({exc.strerror or exc})", "check its permissions") from None
    return wp.loads(text, path.stem, rel)


def doctor_issues(repo_path: Path) -> builtins.list[Issue]:
    """``doctor``'s findings about the wikis: an error for each page file (``wiki/<project>/<page>.md``) that cannot
    be read, saying what is wrong with it, then how many pages are readable. Files that are symbolic links are left
    to ``doctor``'s own check of links."""
    from gitmem.store.layout import Issue

    root = repo_path / wp.WIKI_DIR
    folders = sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink()) if root.is_dir() else []
    issues: list[Issue] = []
    count = 0
    for path in (path for folder in folders for path in sorted(folder.glob("*.md")) if not path.is_symlink()):
        rel = path.relative_to(repo_path).as_posix()
        try:
            read_page(path, rel)
            count += 1
        except DocumentError as exc:
            issues.append(Issue("error", rel, f"{exc.message} ({exc.hint})" if exc.hint else exc.message))
    if folders:
        issues.append(Issue("ok", f"{wp.WIKI_DIR}/", f"{counted(count, 'wiki page')} readable"))
    return issues


def _writable(title: str, name: str | None) -> str:
    """The page name a write of ``title`` goes to (``name`` when given), refused when it is a generated page."""
    slug = wp.check_page_name(name) if name else wp.title_page_name(title)
    if slug in wp.RESERVED_PAGES:
        raise ValidationError(f"'{slug}' is a generated page (rebuilt by every wiki write)", "choose another title")
    return slug


_STAMP = re.compile(r"(?m)^## \d{4}-\d\d-\d\d \d\d:\d\d(?::\d\d)? UTC$")


def _index_doc(path: Path, key: str) -> Doc | None:
    from gitmem.wiki.search import Doc

    try:
        page = wp.loads(path.read_text("utf-8"), path.stem, key)
    except (OSError, UnicodeDecodeError, DocumentError):
        return None
    if page.generated and page.name == wp.INDEX_PAGE:
        return None
    body = _STAMP.sub("", page.body)  # the ingest timestamps are not worth a snippet's space
    return Doc(key, page.name, page.title, body, page.category, page.tags,
               {"updated": docs.format_time(page.updated), "confidence": page.confidence})


class IndexEntry(NamedTuple):
    """One line of the generated index: a page's category, name, title and the day it was last updated."""

    category: str
    name: str
    title: str
    updated: str


def index_entries(repo_path: Path, project: str) -> builtins.list[IndexEntry]:
    """The pages listed in the generated ``index.md`` ([] without an index). Plain string splits, not a regular
    expression: this runs at every session start and is three times faster so."""
    try:
        text = (repo_path / wp.WIKI_DIR / project / f"{wp.INDEX_PAGE}.md").read_text("utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    entries: list[IndexEntry] = []
    category = ""
    for line in text.splitlines():
        if line.startswith("## "):
            category = line[3:].strip()
        elif line.startswith("- [[") and category:
            name, _sep, rest = line[4:].partition("]] ")
            title, found, updated = rest.rpartition(" · updated ")
            entries.append(IndexEntry(category, name, title if found else rest, updated if found else ""))
    return entries


def render_index(project: str, entries: Iterable[IndexEntry]) -> str:
    """The table of contents: pages by category (in the order of :data:`~gitmem.store.wikipage.CATEGORIES`), each
    line ``- [[name]] Title · updated YYYY-MM-DD``."""
    by_category: dict[str, list[IndexEntry]] = {}
    items = sorted(entries, key=lambda e: (e.title.lower(), e.name))
    for entry in items:
        by_category.setdefault(entry.category, []).append(entry)
    lines = [f"Wiki of project `{project}`: {counted(len(items), 'page')}. Generated by gitmem from the pages' "
             "frontmatter; edits here are replaced."]
    for category in wp.CATEGORIES:
        if category in by_category:
            lines += ["", f"## {category}", ""]
            lines += [f"- [[{e.name}]] {e.title} · updated {e.updated}" for e in by_category[category]]
    return "\n".join(lines)


def conflicted_pages(repo: MemoryRepo) -> builtins.list[tuple[str, wp.WikiPage]]:
    """``(project, page)`` of every wiki page a sync left conflicted (``gitmem status``), by project and name."""
    found: list[tuple[str, wp.WikiPage]] = []
    root = repo.path / wp.WIKI_DIR
    for folder in sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else ():
        try:
            wiki = Wiki(repo, folder.name)
        except GitmemError:  # a folder whose name is no project id: no page of gitmem's
            continue
        found += [(wiki.project, page) for page in wiki.pages() if page.conflicted]
    return found


def bridge_project(repo: MemoryRepo, project: str, source: str) -> str:
    """Regenerate the ``environment.md`` page of the project's wiki after the project memory
    (:mod:`gitmem.projects.memory`) changed; the commit SHA, "" when the project has no wiki or the page did not
    change."""
    if not (repo.path / "wiki" / project).is_dir():
        return ""
    try:
        return Wiki(repo, project).regenerate(source=source)
    except GitmemError:  # a project id that is no wiki name, or a busy lock: the next wiki write catches up
        return ""
