"""Reading commits of a code repository (the user's project, not the memory repository), through dulwich.

The post-commit hook and ``gitmem extract`` learn from code commits: :func:`code_commit` and :func:`code_range`
read a commit or a range with only the changed files a filter wants (binary files as ``""``), :func:`count_range`
sizes a backfill for its progress bar. :func:`code_repo_root` and :func:`hooks_dir` find the repository and where
git runs its hooks (``core.hooksPath`` respected) for ``gitmem git-hooks``. Kept apart from :mod:`gitmem.sync`:
a code repository is only ever read, never committed to or synced.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dulwich.diff_tree import tree_changes
from dulwich.objects import Commit, ObjectID
from dulwich.repo import Repo

from gitmem.errors import RepoError
from gitmem.git.remote import _blob, _tree_of, parse_rev


@dataclass(frozen=True)
class CodeCommit:
    """One commit of a code repository: message, parent count, the wanted changed files as
    path → (old text or None, new text or None), and the parents' shas."""

    sha: str
    message: str
    parents: int
    files: dict[str, tuple[str | None, str | None]]
    parent_ids: tuple[str, ...] = ()


def _text(repo: Repo, sha: bytes | None) -> str | None:
    data = _blob(repo, sha)
    if data is None:
        return None
    if b"\0" in data[:8000]:
        return ""
    return data.decode("utf-8", "replace")


def _open_code(root: Path) -> Repo:
    from dulwich.errors import NotGitRepository

    try:
        return Repo(str(root))
    except NotGitRepository:
        raise RepoError(f"{root} is not a git repository", "pass --repo DIR of a code repository") from None


def code_commit(root: Path, rev: str, want: Callable[[str], bool]) -> CodeCommit:
    """Read ``rev`` of the code repository at ``root``; only files for which ``want(path)`` holds are read."""
    with _open_code(root) as repo:
        try:
            commit = parse_rev(repo, rev)
        except (KeyError, ValueError):
            raise RepoError(f"no commit {rev!r} in {root}", "give a commit SHA or ref") from None
        return _read_commit(repo, commit, want)


def _read_commit(repo: Repo, commit: Commit, want: Callable[[str], bool]) -> CodeCommit:
    parent_tree = _tree_of(repo, commit.parents[0]) if commit.parents else None
    files: dict[str, tuple[str | None, str | None]] = {}
    for change in tree_changes(repo.object_store, ObjectID(parent_tree) if parent_tree else None, commit.tree):
        old_path = change.old.path if change.old is not None else None
        new_path = change.new.path if change.new is not None else None
        path = (new_path or old_path or b"").decode("utf-8", "replace")
        if not path or not want(path):
            continue
        old = _text(repo, change.old.sha) if change.old is not None and change.old.path is not None else None
        new = _text(repo, change.new.sha) if change.new is not None and change.new.path is not None else None
        files[path] = (old, new)
    return CodeCommit(commit.id.decode(), _message(commit), len(commit.parents), files,
                      tuple(p.decode() for p in commit.parents))


def _message(commit: Commit) -> str:
    """The commit's message in the encoding its header names (``git -c i18n.commitEncoding=latin1``), UTF-8 when
    it names none or one Python does not know."""
    encoding = (commit.encoding or b"utf-8").decode("ascii", "replace")
    raw: bytes = commit.message
    try:
        return raw.decode(encoding, "replace")
    except LookupError:
        return raw.decode("utf-8", "replace")


def _range_walker(repo: Repo, root: Path, rev_range: str, *, reverse: bool = False) -> Any:
    """A dulwich walker over ``A..B`` (or everything reachable from ``B`` given alone)."""
    start, sep, end = rev_range.partition("..")
    if not sep:
        start, end = "", rev_range
    try:
        tip = parse_rev(repo, end or "HEAD")
        stop = parse_rev(repo, start) if start else None
    except (KeyError, ValueError):
        raise RepoError(f"cannot resolve {rev_range!r} in {root}", "use A..B with commit SHAs or refs") from None
    return repo.get_walker(include=[tip.id], exclude=[stop.id] if stop else None, reverse=reverse)


def code_range(root: Path, rev_range: str, want: Callable[[str], bool]) -> list[CodeCommit]:
    """Commits of ``A..B`` (or everything reachable from ``B`` given alone), oldest first."""
    with _open_code(root) as repo:
        return [_read_commit(repo, entry.commit, want) for entry in _range_walker(repo, root, rev_range, reverse=True)]


def count_range(root: Path, rev_range: str) -> int:
    """How many commits :func:`code_range` would return (for a progress bar)."""
    with _open_code(root) as repo:
        return sum(1 for _ in _range_walker(repo, root, rev_range))


def left_behind(root: Path, tip: str, limit: int = 1000) -> list[str]:
    """Commits ``tip`` reaches that no branch, tag, remote branch or work tree's ``HEAD`` (linked work trees'
    included) reaches any more (what a rebase left behind, given the branch's tip before it, ``ORIG_HEAD``), newest
    first, at most ``limit``."""
    from itertools import islice

    with _open_code(root) as repo:
        try:
            start = parse_rev(repo, tip)
        except (KeyError, ValueError):
            raise RepoError(f"cannot resolve {tip!r} in {root}", "give the commit the branch was at") from None
        tips = set()
        for name in repo.refs.allkeys():
            if name == b"HEAD" or name.startswith((b"refs/heads/", b"refs/tags/", b"refs/remotes/")):
                try:
                    peeled = repo.get_peeled(name)
                    if isinstance(repo[peeled], Commit):
                        tips.add(peeled)
                except KeyError:
                    continue
        common = Path(repo.commondir())
        for head in [common / "HEAD", *(common / "worktrees").glob("*/HEAD")]:  # every work tree's checkout
            try:
                named = head.read_text("ascii").strip().encode()
                if len(named) in (40, 64) and isinstance(repo[named], Commit):  # detached: no branch holds it
                    tips.add(ObjectID(named))
            except (OSError, UnicodeDecodeError, KeyError, ValueError):
                continue
        if start.id in tips:
            return []
        walker = repo.get_walker(include=[start.id], exclude=sorted(tips))
        return [entry.commit.id.decode() for entry in islice(walker, limit)]


def arrived(root: Path, since: str, want: Callable[[str], bool], limit: int = 200) -> list[CodeCommit]:
    """The commits ``HEAD`` reaches that ``since`` does not (what a rebase put on the branch, the upstream's new
    commits included), newest first, at most ``limit``; [] when ``since`` cannot be resolved."""
    from itertools import islice

    with _open_code(root) as repo:
        try:
            old, head = parse_rev(repo, since), parse_rev(repo, "HEAD")
        except (KeyError, ValueError):
            return []
        walker = repo.get_walker(include=[head.id], exclude=[old.id])
        return [_read_commit(repo, entry.commit, want) for entry in islice(walker, limit)]


def rebasing(root: Path) -> bool:
    """Whether a rebase is in progress in the work tree at ``root`` (its own git dir, for a linked worktree)."""
    with _open_code(root) as repo:
        where = Path(repo.controldir())
    return (where / "rebase-merge").is_dir() or (where / "rebase-apply").is_dir()


def code_repo_root(start: Path) -> Path | None:
    """The work tree root of the git repository containing ``start``."""
    start = start.resolve()
    return next((d for d in (start, *start.parents) if (d / ".git").exists()), None)


def tracks_files_in(root: Path, folder: Path) -> bool:
    """Whether the code repository at ``root`` tracks a file in ``folder`` (a hooks folder that is the project's
    own, such as ``.husky``: a team's hooks, under version control)."""
    top, where = root.resolve(), folder.resolve()
    if not where.is_relative_to(top) or ".git" in where.relative_to(top).parts:
        return False
    prefix = where.relative_to(top).as_posix().encode() + b"/"
    with _open_code(root) as repo:
        return any(path.startswith(prefix) for path in repo.open_index())


def hooks_dir(root: Path) -> Path:
    """Where git looks for hooks in the code repository at ``root`` (``core.hooksPath`` when set)."""
    import os

    with _open_code(root) as repo:
        try:
            configured = repo.get_config_stack().get((b"core",), b"hooksPath")
        except KeyError:
            configured = b""
        common = Path(repo.commondir())
    if configured:
        path = Path(os.path.expanduser(configured.decode("utf-8", "surrogateescape")))
        return path if path.is_absolute() else root / path
    return common / "hooks"
