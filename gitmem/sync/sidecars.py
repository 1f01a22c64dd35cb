"""Versions a sync keeps beside a file it could not merge: ``<path>.conflict-<6 hex of the content>``.

Only a file that is neither a readable memory, a wiki page nor a project page gets one (``gitmem.toml``,
``README.md``, a broken file): :func:`gitmem.sync.merge.merge_file` keeps the larger version at ``path`` and the
other here. Nothing reads these files as memories, so they are listed for ``gitmem status`` and ``gitmem doctor``
(:func:`conflict_files`, :func:`doctor_issues`) until someone copies what is needed and deletes them. A project
page's version that an older gitmem left this way is merged back by the next write of that page
(:func:`gitmem.projects.pagemerge.fold_conflict_versions`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from gitmem.projects.pagemerge import SIDE_SUFFIX
from gitmem.store.layout import Issue, walk_committed


def sidecar_path(path: str, content: bytes) -> str:
    """Where the version ``content`` of ``path`` is kept when a merge cannot combine it."""
    return f"{path}.conflict-{hashlib.sha1(content).hexdigest()[:6]}"


def original_path(sidecar: str) -> str:
    """The file a kept version belongs to (``projects/x.md`` for ``projects/x.md.conflict-5bca9a``)."""
    match = SIDE_SUFFIX.search(sidecar)
    return sidecar[:match.start()] if match and match.end() == len(sidecar) else sidecar


def conflict_files(root: Path) -> list[str]:
    """Every kept version in the work tree of the memory repository at ``root``, relative and sorted."""
    found: list[str] = []
    for base, _dirs, files in walk_committed(root):  # no symbolic link followed (doctor lists those on its own)
        found.extend((base / name).relative_to(root).as_posix() for name in files
                     if original_path(name) != name)
    return sorted(found)


def doctor_issues(root: Path) -> list[Issue]:
    """One warning per kept version: what it is and how to settle it."""
    from gitmem.projects.pagemerge import is_page_path

    issues: list[Issue] = []
    for rel in conflict_files(root):
        original = original_path(rel)
        if is_page_path(original):
            how = (f"the next session in this project (or gitmem project scan --force there) merges it back into "
                   f"{original} and deletes it when it is a readable page; otherwise copy what you need into "
                   f"{original} and git rm this file")
        else:
            how = f"copy what you need into {original}, then git rm this file"
        issues.append(Issue("warning", rel, f"another machine's version of {original}, kept by a sync that could not "
                                            f"merge the two; nothing reads it: {how}"))
    return issues
