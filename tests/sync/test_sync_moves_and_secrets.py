"""Sync merges that pair what a path-by-path merge cannot: a memory moved on one machine and changed (or moved
elsewhere) on the other ends as one file, two versions that differ only by a secret one of them still holds are
one version, and two reasons for forgetting one memory are both kept. Two real clones of a bare remote; the
results are checked in the files and in ``git log``."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from gitmem.api import Repository
from gitmem.config import Config
from gitmem.store import document as docs
from gitmem.sync import round as sync
from gitmem.text.records import replace
from tests.helpers import assert_clean, git, run_cli

AUTHOR = "Test User <test@example.com>"
#: an AWS access key id, assembled so that no scanner of this file takes it for a real one
SECRET = "AK" + "IA" + "QWERTYUIOPASDFGH"


@pytest.fixture
def machines(clones: tuple[Path, Path, Path]) -> tuple[Repository, Repository]:
    a, b, _remote = clones
    return Repository(Config(repo=a)), Repository(Config(repo=b))


def _sync(repo: Repository) -> sync.SyncResult:
    result = sync.sync(repo.git, author=AUTHOR)
    assert_clean(repo.path)
    return result


def _settle(a: Repository, b: Repository, first: str) -> list[str]:
    """Sync until both machines are equal; the conflicts the syncs reported."""
    conflicts: list[str] = []
    for repo in (a, b, a) if first == "a" else (b, a, b):
        conflicts += _sync(repo).conflicts
    assert git(a.path, "rev-parse", "HEAD") == git(b.path, "rev-parse", "HEAD")
    git(a.path, "fsck", "--strict")
    return conflicts


def _files_of(repo: Repository, memory_id: str) -> list[str]:
    """Every file of the work tree that holds ``memory_id`` (a memory has one)."""
    found = []
    for path in sorted((repo.path / docs.MEMORIES_DIR).glob("*/*.md")):
        if docs.loads(path.read_text(), str(path)).id == memory_id:
            found.append(path.relative_to(repo.path).as_posix())
    return found


def _shared(a: Repository, b: Repository, text: str) -> str:
    memory = a.remember(text)
    _sync(a)
    _sync(b)
    return memory.id


@pytest.mark.parametrize("first", ["a", "b"])
@pytest.mark.parametrize("change", ["edit", "forget"])
def test_a_memory_moved_on_one_machine_and_changed_on_the_other_is_one_file(
        machines: tuple[Repository, Repository], change: str, first: str) -> None:
    """A move is a delete and an add; path by path the other machine's change of the old path won over the
    delete, and the memory was left twice: active in the new folder, deprecated (or edited) in the old one."""
    a, b = machines
    mid = _shared(a, b, "Run the integration tests against the staging cluster")
    a.move(mid, "shop")
    if change == "edit":
        b.save(replace(b.get(mid), text="Run the integration tests against the staging cluster, never production",
                       tags=("testing",)))
    else:
        b.forget(mid, reason="staging is gone")
    conflicts = _settle(a, b, first)
    assert conflicts == []
    for repo in (a, b):
        assert _files_of(repo, mid) == [f"memories/shop/{mid}.md"]
        merged = repo.get(mid)
        assert (merged.project, merged.scope) == ("shop", "project")
        if change == "edit":
            assert merged.text.endswith("never production") and merged.tags == ("testing",)
            assert not merged.deprecated
        else:
            assert merged.deprecated and merged.deprecated_reason == "staging is gone"
        assert not merged.conflicted
    merge = git(a.path, "log", "-1", "--merges", "--format=%B")
    assert "Gitmem-Op: merge" in merge and "Gitmem-Conflict" not in merge
    moved = git(a.path, "log", "--format=%s", "--", f"memories/shop/{mid}.md")
    assert moved.startswith("merge: origin/main into main\nmove: Run the integration tests")


@pytest.mark.parametrize("first", ["a", "b"])
def test_a_memory_moved_to_two_projects_stays_one_file_where_the_newer_move_put_it(
        machines: tuple[Repository, Repository], first: str) -> None:
    a, b = machines
    mid = _shared(a, b, "Cache the product list for 60 seconds")
    a.move(mid, "shop")
    time.sleep(1.1)  # times are written to the second: B's move is the newer
    b.move(mid, "catalogue")
    conflicts = _settle(a, b, first)
    note = (f"{mid}: moved to project catalogue on one side and to project shop on the other; kept in project "
            "catalogue, the newer version's place (gitmem move changes it)")
    assert conflicts == [note]
    for repo in (a, b):
        assert _files_of(repo, mid) == [f"memories/catalogue/{mid}.md"]
        assert repo.get(mid).project == "catalogue"
    assert note in git(a.path, "log", "-1", "--merges", "--format=%B")


@pytest.mark.parametrize("first", ["a", "b"])
def test_a_memory_moved_on_both_machines_to_one_project_merges_against_the_base(
        machines: tuple[Repository, Repository], first: str) -> None:
    """Both added the same path: merged without the common version, a tag B removed came back."""
    a, b = machines
    mid = _shared(a, b, "Use pnpm in the web projects")
    b.save(replace(b.get(mid), tags=("web", "node")))
    _sync(b)
    _sync(a)
    a.move(mid, "web")
    a.save(replace(a.get(mid), importance=5))
    b.save(replace(b.get(mid), tags=("web",)))
    b.move(mid, "web")
    assert _settle(a, b, first) == []
    for repo in (a, b):
        assert _files_of(repo, mid) == [f"memories/web/{mid}.md"]
        merged = repo.get(mid)
        assert merged.tags == ("web",) and merged.importance == 5


@pytest.mark.parametrize("first", ["a", "b"])
def test_a_moved_memory_purged_on_the_other_machine_stays_moved(machines: tuple[Repository, Repository],
                                                                 first: str) -> None:
    a, b = machines
    mid = _shared(a, b, "Tag releases with the date")
    a.move(mid, "tools")
    b.forget(mid, reason="obsolete", purge=True)
    assert _settle(a, b, first) == []
    for repo in (a, b):
        assert _files_of(repo, mid) == [f"memories/tools/{mid}.md"]


@pytest.mark.parametrize("force_push", [True, False])
def test_a_secret_purged_on_one_machine_is_no_conflict_with_the_other(clones: tuple[Path, Path, Path],
                                                                       force_push: bool) -> None:
    """B committed a memory with a secret in it with git (as an older version could have); A purged it from
    history. The two versions are the same once redacted, and merged raw they conflicted: a sibling
    ``aws-key-conflict-*`` whose redacted text was the memory's. gitmem pushes no commit holding a secret (B's own
    sync refuses; B pushes it with git), merges no history A's purge rewrote (until it is force-pushed), and the
    clone that still has the old history is told to purge it."""
    a, b = Repository(Config(repo=clones[0])), Repository(Config(repo=clones[1]))
    remote_repo = clones[2]
    # a pattern of the repository's own, in the shared gitmem.toml: redacted as the built-in rules are
    config = a.path / "gitmem.toml"
    config.write_text(config.read_text() + "\n[redaction]\nextra_patterns = ['ACME-[0-9]+']\n")
    git(a.path, "commit", "-q", "-am", "redact ACME ticket numbers")
    _sync(a)
    _sync(b)
    raw = {
        "aws-key": f"The deploy user's key is {SECRET}",
        "ticket": "The outage is tracked in ACME-4711",
    }
    for memory_id, text in raw.items():
        memory = docs.make_memory(text, id=memory_id)
        (b.path / memory.path).write_text(docs.dumps(memory))
    git(b.path, "add", "-A")
    git(b.path, "commit", "-q", "-m", "add two notes")
    refused = run_cli("--repo", str(b.path), "sync")
    assert refused.code != 0 and "holds a secret" in refused.err and "purge-secrets --yes" in refused.err
    assert SECRET not in git(remote_repo, "log", "-p", "--all")
    git(b.path, "push", "-q", "origin", "main")  # as an older version did
    merged = run_cli("--repo", str(a.path), "sync", "--json")
    assert merged.code == 0, merged.err
    assert "holds a secret" in json.loads(merged.out)["warnings"][0] and "purge-secrets" in merged.err
    done = run_cli("--repo", str(a.path), "purge-secrets", "--yes")
    assert done.code == 0, done.err
    if not force_push:  # A syncs with the remote that still has the secrets: it would merge them back
        again = run_cli("--repo", str(a.path), "sync")
        assert again.code != 0 and "push --force" in again.err
        assert SECRET not in git(a.path, "log", "-p", "--all")
    git(a.path, "push", "-q", "--force", "origin", "main")  # as the documentation says
    old = run_cli("--repo", str(b.path), "sync")  # B merges the new history, still holds the old
    assert old.code != 0 and "purge-secrets --yes" in old.err
    assert SECRET not in git(remote_repo, "log", "-p", "--all")
    assert run_cli("--repo", str(b.path), "purge-secrets", "--yes").code == 0
    for repo in (b, a):
        synced = run_cli("--repo", str(repo.path), "sync")
        assert synced.code == 0, synced.err
        assert sorted(p.name for p in (repo.path / "memories" / "global").glob("*.md")) == ["aws-key.md", "ticket.md"]
        assert repo.get("aws-key").text == "The deploy user's key is [REDACTED:aws-access-key]"
        assert "ACME-4711" not in repo.get("ticket").text and not repo.get("ticket").conflicted
        assert SECRET not in (repo.path / "memories/global/aws-key.md").read_text()
        assert_clean(repo.path)
    assert "conflict" not in git(b.path, "log", "--format=%B").lower()
    assert SECRET not in git(remote_repo, "log", "-p", "--all")


@pytest.mark.parametrize("first", ["a", "b"])
def test_both_machines_forgetting_a_memory_keep_both_reasons(machines: tuple[Repository, Repository],
                                                             first: str) -> None:
    a, b = machines
    mid = _shared(a, b, "Deploy with Fabric")
    a.forget(mid, reason="we deploy with Kubernetes now")
    time.sleep(1.1)  # B's is the newer
    b.forget(mid, reason="Fabric is unmaintained.")
    assert _settle(a, b, first) == []
    for repo in (a, b):
        merged = repo.get(mid)
        assert merged.deprecated
        assert merged.deprecated_reason == "Fabric is unmaintained; we deploy with Kubernetes now"
