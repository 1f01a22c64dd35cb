"""Creating a memory repository with its on-disk layout, and checking that layout later."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from gitmem.config import REPO_CONFIG_NAME, read_toml
from gitmem.errors import ConfigError, GitmemError, RepoError
from gitmem.git.messages import format_message
from gitmem.git.store import GitStore
from gitmem.store.base import is_memory_repo
from gitmem.store.document import SCHEMA_VERSION

#: seconds the first push to an empty remote may take at init
PUSH_TIMEOUT = 60.0
#: the folders of the work tree that git ignores: derived state and machine-local records
UNTRACKED = (".cache", "local")

GITIGNORE = """\
# Derived state: rebuilt from git at any time (search index, embedding vectors).
.cache/
# Private to this machine, never committed or pushed (observations, usage counters, session caches, logs).
local/
"""

REPO_CONFIG = f"""\
# Settings that travel with the memories. Every key is optional; the values shown are the defaults.
# Machine-specific settings (repo path, embedding model, author) belong in ~/.config/gitmem/config.toml.
schema_version = {SCHEMA_VERSION}

# [ranking]
# w_sim = 0.5          # weight of the BM25/vector similarity
# w_imp = 0.3          # weight of importance/5
# w_rec = 0.2          # weight of exp(-decay_lambda * days since updated)
# decay_lambda = 0.02

# [recall]
# budget = 2000        # tokens injected at session start
# max_budget = 3000    # hard cap
# top_k = 5

# [lifecycle]
# ttl_feedback = 90    # days; 0 = never expires
# ttl_project = 60
# ttl_reference = 90
# gc_unused_days = 90
# gc_max_importance = 2
"""

README = """\
# Memory repository

This repository is a long-term memory managed by gitmem. Every memory is a Markdown file with YAML
frontmatter; every change is a commit whose trailers (`Gitmem-Op`, `Gitmem-Source`, `Gitmem-Id`) say what
happened and where it came from.

```
memories/global/<id>.md        applies everywhere
memories/<project-id>/<id>.md  one project
instincts/<domain>/<id>.md     learned behaviour rules
projects/<project-id>.md       project memory
wiki/<project-id>/<page>.md    project wiki (index.md and environment.md are generated)
writer/<work>/...              writer memory: characters, relationships, scenes, world rules
gitmem.toml                    settings that travel with the memories
```

`.cache/` (search index, vectors) and `local/` (observations, usage counters) never leave this machine.
"""


@dataclass
class Issue:
    """One finding of ``doctor``: level ``error``, ``warning`` or ``ok``, the path it is about, a message. The
    message does not repeat the path (one that starts with it, as a file's parse error does, loses it)."""

    level: str
    path: str
    message: str

    def __post_init__(self) -> None:
        self.message = self.message.removeprefix(f"{self.path}: ")


@dataclass
class InitResult:
    """What :func:`init_repo` did."""

    path: Path
    action: str  # "created" | "cloned" | "exists" | "adopted"
    remote: str = ""


def _layout_files() -> dict[str, bytes]:
    return {
        REPO_CONFIG_NAME: REPO_CONFIG.encode(),
        ".gitignore": GITIGNORE.encode(),
        "README.md": README.encode(),
        "memories/global/.gitkeep": b"",
    }


def init_repo(path: Path, *, remote: str = "", author: str = "") -> InitResult:
    """Create the memory repository at ``path`` (or clone ``remote`` when it already holds one).

    An empty remote (a new ``git init --bare``, whatever its HEAD names) gets the new repository's first commit
    pushed to its ``main`` branch, so the next machine clones it. Idempotent: an existing memory repository is
    left exactly as it is, except that ``remote`` becomes its remote when it has none; one that has another remote
    is refused with the command that changes it. A failed init leaves nothing behind (no half-made clone)."""
    path = path.expanduser().resolve()
    if is_memory_repo(path):
        store = GitStore(path)
        current = store.remote_url()
        if remote and not current:
            store.set_remote(remote)
        elif remote and remote.rstrip("/") != current.rstrip("/"):
            import shlex

            from gitmem.git.remote import display_url

            raise GitmemError(f"the memory repository {path} already has the remote {display_url(current)}, "
                              f"not {display_url(remote)}",
                              f"to change it: git -C {shlex.quote(str(path))} remote set-url origin "
                              f"{shlex.quote(remote)}")
        return InitResult(path, "exists", store.remote_url())
    if path.exists() and not path.is_dir():
        raise GitmemError(f"{path} is a file", "choose a directory for the memory repository")
    is_git = (path / ".git").is_dir()
    if not is_git and path.is_dir() and any(path.iterdir()):
        raise GitmemError(f"{path} is not empty and not a git repository",
                          "choose an empty or new directory, or an empty git repository")
    if is_git and (any(p.name != ".git" for p in path.iterdir()) or GitStore(path).head()):
        # a code project's repository: gitmem's commits would land on its branch, its files beside the project's
        raise GitmemError(f"{path} is a git repository with files or commits of its own, not a memory repository",
                          "a memory repository needs a repository of its own: choose an empty or new directory "
                          "(the default is ~/.gitmem)")
    branches = GitStore.remote_branches(remote) if remote and not is_git else []
    existed = path.exists()
    try:
        return _create(path, remote, author, is_git, branches)
    except BaseException:
        if not is_git:  # everything in it is ours: the folder was new or empty
            shutil.rmtree(path, ignore_errors=True)
            if existed:
                path.mkdir(exist_ok=True)
        raise


def _create(path: Path, remote: str, author: str, is_git: bool, branches: list[str]) -> InitResult:
    if branches:
        if "main" not in branches:
            raise RepoError(f"{remote} is a git repository but not a gitmem memory repository (it has the branches "
                            f"{', '.join(branches[:5])} and no main)",
                            "point --remote at a memory repository or an empty one")
        GitStore.clone(remote, path)
        if not (path / REPO_CONFIG_NAME).is_file():
            raise RepoError(f"{remote} is a git repository but not a gitmem memory repository (no gitmem.toml)",
                            "point --remote at a memory repository or an empty one")
        return InitResult(path, "cloned", remote)
    store = GitStore(path) if is_git else GitStore.init(path)
    if remote:
        store.set_remote(remote)
    files = {name: data for name, data in _layout_files().items() if not (path / name).exists()}
    message = format_message("init: gitmem memory repository", {"Gitmem-Op": "init", "Gitmem-Source": "cli"})
    with store.locked():
        store.commit(files, message, store.author(author))
    if remote and not is_git:  # the remote is empty: make it the memory repository the next machine clones
        from gitmem.git.remote import push

        head = store.head()
        if head is not None:
            push(store, head, "main", timeout=PUSH_TIMEOUT)
    return InitResult(path, "adopted" if is_git else "created", remote)


def check_layout(store: GitStore) -> list[Issue]:
    """Findings about the repository itself (config, branch, ignore rules, stray lock)."""
    issues: list[Issue] = []
    config_file = store.path / REPO_CONFIG_NAME
    if not config_file.is_file():
        issues.append(Issue("error", REPO_CONFIG_NAME, "missing: this is not a gitmem repository (run gitmem init)"))
    else:
        try:
            read_toml(config_file)
            issues.append(Issue("ok", REPO_CONFIG_NAME, "readable"))
        except ConfigError as exc:
            issues.append(Issue("error", REPO_CONFIG_NAME, str(exc)))
    if not all(os.access(folder, os.W_OK) for folder in (store.path, store.path / ".git")):
        issues.append(Issue("warning", ".", "not writable by this user (a read-only mount, another user's clone): "
                            "searches work, with their index in your cache folder, but remember, forget and sync "
                            "fail (use a clone of your own to change it)"))
    branch = store.current_branch()
    if branch != "main":
        issues.append(Issue("warning", ".git/HEAD", f"on branch '{branch}', gitmem writes to 'main'"))
    ignore = (store.path / ".gitignore").read_text("utf-8") if (store.path / ".gitignore").is_file() else ""
    for entry in (f"{name}/" for name in UNTRACKED):
        if entry not in ignore.split():
            issues.append(Issue("error", ".gitignore", f"does not ignore {entry}: private or derived files "
                                "could be committed (add the line back)"))
    if store.head() is None:
        issues.append(Issue("error", ".git", "no commits yet (run gitmem init)"))
    else:
        try:
            store.read_head_file(REPO_CONFIG_NAME)  # the last commit and its tree can be read
        except RepoError as exc:
            issues.append(Issue("error", ".git", str(exc)))
    for link in symbolic_links(store.path):
        issues.append(Issue("error", link, "a symbolic link: gitmem never reads or writes through one "
                            f"(remove it: git -C {store.path} rm {link})"))
    if (store.git_dir / "index.lock").exists():
        issues.append(Issue("warning", ".git/index.lock", "a git lock file is present; if no git process is "
                            "running, delete it"))
    return issues


def walk_committed(root: Path) -> Iterator[tuple[Path, list[str], list[str]]]:
    """``os.walk`` of the work tree without ``.git`` and the :data:`UNTRACKED` folders (what a commit can hold):
    each folder as a Path, its sub-folders and its files; never follows a symbolic link."""
    for folder, dirs, files in os.walk(root):
        base = Path(folder)
        if base == root:
            dirs[:] = [d for d in dirs if d not in (".git", *UNTRACKED)]
        yield base, dirs, files


def symbolic_links(root: Path) -> list[str]:
    """Symbolic links in the work tree (outside ``.git``, ``.cache`` and ``local``), relative to ``root``."""
    found: list[str] = []
    for base, dirs, files in walk_committed(root):
        for name in [*dirs, *files]:
            if (base / name).is_symlink():
                found.append((base / name).relative_to(root).as_posix())
    return sorted(found)
