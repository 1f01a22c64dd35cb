"""What recall needs to know of the code repository an agent works in (its root, origin URL, branch and latest commit
subjects), read without loading dulwich until a repository is found. Reading a code repository's commits for
extraction is :mod:`gitmem.git.coderepo`'s."""

from __future__ import annotations

from gitmem.text.records import Record

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the session start's project detection imports this module
if TYPE_CHECKING:
    from pathlib import Path


class CodeRepoInfo(Record):
    """What recall needs from the code repository the agent works in."""

    root: Path
    remote: str
    branch: str
    subjects: tuple[str, ...]


def code_repo_info(start: Path, subjects: int = 3) -> CodeRepoInfo | None:
    """The git repository containing ``start`` (its root, origin URL, branch, last commit subjects), or None."""
    from dulwich.errors import NotGitRepository
    from dulwich.repo import Repo

    from gitmem.git.reader import HEAD

    start = start.resolve()
    root = next((d for d in (start, *start.parents) if (d / ".git").exists()), None)
    if root is None:
        return None
    try:
        with Repo(str(root)) as repo:
            try:
                url: bytes = repo.get_config().get((b"remote", b"origin"), b"url")
            except KeyError:
                url = b""
            try:
                branch_ref: bytes = repo.refs.get_symrefs().get(HEAD) or b""
            except Exception:
                branch_ref = b""
            titles: list[str] = []
            try:
                head = repo.refs[HEAD]
                for entry in repo.get_walker(include=[head], max_entries=subjects):
                    titles.append(entry.commit.message.decode("utf-8", "replace").split("\n", 1)[0].strip())
            except KeyError:
                pass
    except (NotGitRepository, OSError):
        return None
    return CodeRepoInfo(root=root, remote=url.decode("utf-8", "replace"),
                        branch=branch_ref.decode().removeprefix("refs/heads/"), subjects=tuple(titles))
