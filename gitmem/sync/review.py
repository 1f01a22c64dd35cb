"""What a review of memory changes shows: the Markdown summary of ``base..head`` that ``gitmem review`` prints and
``gitmem propose`` puts in the pull request, and the pending review (what the remote branch does not have yet)
that the web viewer shows. Reads git through :mod:`gitmem.git.remote`; writes nothing."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gitmem.errors import GitmemError
from gitmem.text.counted import counted

SECTIONS = ("Added", "Changed", "Deprecated", "Superseded", "Restored", "Removed", "Conflicts", "Instincts", "Wiki",
            "Other files")


@dataclass
class Review:
    """The memory changes of ``base..head``: how many commits, and one Markdown list item per changed file under
    its section (in the order of :data:`SECTIONS`; empty sections are kept and skipped when shown)."""

    commits: int
    sections: dict[str, list[str]] = field(default_factory=lambda: {name: [] for name in SECTIONS})

    @property
    def counts(self) -> str:
        """``2 added, 1 deprecated``, or "" without changes."""
        return ", ".join(f"{len(v)} {k.lower()}" for k, v in self.sections.items() if v)

    def markdown(self) -> str:
        """The summary as a pull-request description."""
        lines = [f"## Memory changes ({counted(self.commits, 'commit')})", "", self.counts or "no memory changes", ""]
        for name, items in self.sections.items():
            if items:
                lines += [f"### {name}", "", *items, ""]
        return "\n".join(lines).rstrip() + "\n"


def has_tracking(repo: Any, branch: str) -> bool:
    """Whether the remote has ``branch`` to compare with (fetched by the last sync)."""
    from gitmem.git.remote import remote_branches

    return branch in remote_branches(repo.git, branch)


def pending_review(repo: Any) -> Review:
    """The summary of the local changes the remote branch does not have yet (``gitmem review`` without a range);
    an error saying what to run when there is no remote branch to compare with."""
    branch = repo.config.sync.branch
    if not has_tracking(repo, branch):
        raise GitmemError(f"no remote branch origin/{branch} to compare with", "run gitmem sync, or give BASE..HEAD")
    return review(repo, f"refs/remotes/origin/{branch}", "HEAD")


def _parse_any(path: str, data: bytes | None) -> Any:
    """A memory, or the frontmatter dict of another document (instincts), or None."""
    if data is None:
        return None
    from gitmem.errors import DocumentError
    from gitmem.store import document as docs
    from gitmem.sync.merge import is_memory_path

    text = data.decode("utf-8", "replace")
    if is_memory_path(path):
        try:
            return docs.loads(text, path)
        except DocumentError:
            return None
    import frontmatter

    try:
        return dict(frontmatter.loads(text).metadata)
    except Exception:
        return None


def review_markdown(repo: Any, base: str, head: str) -> str:
    """A Markdown summary of the memory changes in ``base..head`` for a pull-request description (``repo`` is
    an open memory repository)."""
    return review(repo, base, head).markdown()


def review(repo: Any, base: str, head: str) -> Review:
    """The memory changes in ``base..head``, file by file, with where each memory came from."""
    from gitmem.git.messages import parse_trailers
    from gitmem.git.remote import changes_between, commits_between
    from gitmem.store import document as docs

    changes = changes_between(repo.git, base, head)
    commits = commits_between(repo.git, base, head)
    origin: dict[str, list[str]] = {}
    for _sha, message in commits:
        trailers = parse_trailers(message)
        for mid in trailers.get("Gitmem-Id", []):
            for source in trailers.get("Gitmem-Source", []):
                if source not in origin.setdefault(mid, []):
                    origin[mid].append(source)
    result = Review(len(commits))
    sections = result.sections

    def where(memory: docs.Memory) -> str:
        sources = origin.get(memory.id) or [f"{memory.source}:{memory.source_ref}" if memory.source_ref
                                            else memory.source]
        return "from " + ", ".join(f"`{s}`" for s in sources)

    def label(memory: docs.Memory) -> str:
        scope = f", project `{memory.project}`" if memory.project else ""
        return f"**{memory.title}** (`{memory.id}`; {memory.category}, importance {memory.importance}{scope})"

    parsed = {path: (_parse_any(path, old_data), _parse_any(path, new_data))
              for path, (old_data, new_data) in changes.items()}
    # a memory moved to another project (gitmem move) is one file gone and one come with the same id: one change,
    # not "1 added, 1 removed" (which a pull request's reviewer read as a memory lost)
    gone = {old.id: path for path, (old, new) in parsed.items()
            if isinstance(old, docs.Memory) and not isinstance(new, docs.Memory)}
    for path, (old, new) in list(parsed.items()):
        if isinstance(new, docs.Memory) and not isinstance(old, docs.Memory) and new.id in gone:
            parsed[path] = (parsed.pop(gone.pop(new.id))[0], new)
    for path, (old, new) in sorted(parsed.items()):
        old_data, new_data = changes[path]
        if isinstance(new, docs.Memory) or isinstance(old, docs.Memory):
            if not isinstance(old, docs.Memory):
                assert isinstance(new, docs.Memory)
                section = "Conflicts" if new.extra.get("conflict_of") else "Added"
                sections[section].append(f"- {label(new)}: {new.text.splitlines()[0][:200]} — {where(new)}")
            elif not isinstance(new, docs.Memory):
                sections["Removed"].append(f"- {label(old)} — {where(old)}")
            elif new.deprecated and not old.deprecated:
                key = "Superseded" if new.superseded_by else "Deprecated"
                extra = f" by `{new.superseded_by}`" if new.superseded_by else ""
                sections[key].append(f"- {label(new)}{extra}: {new.deprecated_reason} — {where(new)}")
            elif old.deprecated and not new.deprecated:
                sections["Restored"].append(f"- {label(new)} — {where(new)}")
            else:
                sections["Changed"].append(f"- {label(new)}: {_what_changed(old, new)} — {where(new)}")
        elif path.startswith("instincts/") and isinstance(new, dict):
            before = old.get("confidence") if isinstance(old, dict) else None
            after = new.get("confidence")
            move = f"confidence {before} → {after}" if before is not None else f"new, confidence {after}"
            sections["Instincts"].append(f"- `{new.get('id', path)}` ({new.get('trigger', '')}): {move}")
        elif path.startswith("wiki/"):
            from gitmem.store.wikipage import wiki_change

            sections["Wiki"].append(wiki_change(path, old_data, new_data))
        else:
            sections["Other files"].append(f"- `{path}` {'removed' if new_data is None else 'changed'}")
    return result


def _what_changed(old: Any, new: Any) -> str:
    parts: list[str] = []
    if old.text != new.text:
        parts.append("text edited")
    for name in ("category", "type", "importance", "scope", "project", "why", "how"):
        if getattr(old, name) != getattr(new, name):
            parts.append(f"{name} {getattr(old, name) or '∅'} → {getattr(new, name) or '∅'}")
    added = [t for t in new.tags if t not in old.tags]
    removed = [t for t in old.tags if t not in new.tags]
    if added or removed:
        parts.append("tags " + " ".join([*(f"+{t}" for t in added), *(f"−{t}" for t in removed)]))
    if new.conflicted and not old.conflicted:
        parts.append("conflicted (both versions kept)")
    if old.conflicted and not new.conflicted:
        parts.append("conflict resolved")
    return "; ".join(parts) or "metadata updated"
