"""The code project the agent is working in: its project id and what recall should search for.

A project id comes from the normalised remote URL of the code repository, so two machines that cloned the same
project agree on it (``git@github.com:Acme/Shop.git`` and ``https://github.com/acme/shop`` both give
``github.com-acme-shop``); without a remote it is the directory name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from gitmem.git.codeinfo import code_repo_info
from gitmem.store.document import slugify

_SCP = re.compile(r"^(?:[^@/]+@)?([^:/]+):(?!//)(.+)$")
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://(?:[^@/]+@)?([^/:]+)(?::\d+)?/(.+)$", re.IGNORECASE)


def normalise_remote(url: str) -> str:
    """``host/path`` of a git remote URL, lowercased, without credentials, port or ``.git``."""
    url = url.strip()
    match = _URL.match(url) or _SCP.match(url)
    if not match:
        return url.rstrip("/").removesuffix(".git").lower()
    host, path = match.group(1), match.group(2)
    path = path.strip("/").removesuffix(".git").removesuffix("/")
    return f"{host.lower()}/{path.lower()}"


def project_id_for(remote: str, directory: Path) -> str:
    """The project id: a slug of the normalised remote, else of the directory name."""
    if remote:
        slug = slugify(normalise_remote(remote).replace("/", "-"), 100, keep_dots=True)
        if slug:
            return slug
    return slugify(directory.name, 100) or "project"


@dataclass(frozen=True)
class CodeContext:
    """The code project at a working directory."""

    project: str
    root: Path
    branch: str = ""
    subjects: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.root.name

    def query(self) -> str:
        """The recall query: project name, branch words and the last commit subjects."""
        branch = " ".join(w for w in re.split(r"[/_.-]+", self.branch) if w and w not in ("main", "master"))
        return " ".join(p for p in (self.name, branch, *self.subjects) if p)


def project_at(cwd: Path, project_override: str = "", memory_repo: Path | None = None) -> str:
    """The project id of the code project around ``cwd``: the override when set, "" outside a git repository
    or inside the memory repository itself (a memory made there belongs to no code project)."""
    if project_override:
        return project_override
    info = code_repo_info(cwd)
    if info is None:
        return ""
    if memory_repo is not None and info.root.resolve() == memory_repo.resolve():
        return ""
    return project_id_for(info.remote, info.root)


def code_context(cwd: Path, project_override: str = "") -> CodeContext:
    """What we know about the code project containing ``cwd`` (works outside git too)."""
    info = code_repo_info(cwd)
    if info is None:
        return CodeContext(project=project_override or project_id_for("", cwd), root=cwd)
    return CodeContext(
        project=project_override or project_id_for(info.remote, info.root),
        root=info.root,
        branch=info.branch,
        subjects=info.subjects,
    )
