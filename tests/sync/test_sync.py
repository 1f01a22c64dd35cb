"""Sync between two clones through a bare remote made by the git CLI: merges lose nothing, both clones end equal,
``git status`` is clean and ``git fsck --strict`` passes after every step."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from gitmem.config import Config
from gitmem.errors import RepoError
from gitmem.git.remote import fetch, remote_branches
from gitmem.store import document as docs
from gitmem.store.layout import init_repo
from gitmem.store.memories import MemoryRepo
from gitmem.sync import round as sync
from gitmem.text.records import replace
from tests.helpers import GITMEM, assert_clean, git, run_cli

GITMEM_CMD = [GITMEM]

AUTHOR = "Test User <test@example.com>"


@pytest.fixture
def machines(clones: tuple[Path, Path, Path]) -> tuple[MemoryRepo, MemoryRepo, Path]:
    a, b, remote = clones
    return MemoryRepo(Config(repo=a)), MemoryRepo(Config(repo=b)), remote


def _sync(repo: MemoryRepo) -> sync.SyncResult:
    result = sync.sync(repo.git, author=AUTHOR)
    assert_clean(repo.path)
    return result


def _settle(a: MemoryRepo, b: MemoryRepo, first: str = "a") -> None:
    order = (a, b, a) if first == "a" else (b, a, b)
    for repo in order:
        _sync(repo)
    assert git(a.path, "rev-parse", "HEAD^{tree}") == git(b.path, "rev-parse", "HEAD^{tree}")
    assert git(a.path, "rev-parse", "HEAD") == git(b.path, "rev-parse", "HEAD")


def _all_readable(repo: MemoryRepo) -> dict[str, docs.Memory]:
    found: dict[str, docs.Memory] = {}
    for rel, item in repo.iter_files():
        assert isinstance(item, docs.Memory), f"{rel}: {item}"
        found[item.id] = item
    return found


def _shared(a: MemoryRepo, b: MemoryRepo, text: str, **fields: object) -> str:
    memory = a.remember(text, **fields)
    _sync(a)
    _sync(b)
    return memory.id


def test_first_sync_pushes_and_clone_fast_forwards(machines: tuple[MemoryRepo, MemoryRepo, Path]) -> None:
    a, b, remote = machines
    memory = a.remember("Use ruff for linting")
    assert _sync(a).action == "pushed"
    result = _sync(b)
    assert result.action == "fast-forward"
    assert result.changed == [memory.path]
    assert b.get(memory.id).text == "Use ruff for linting"
    assert _sync(b).action == "up-to-date"
    assert git(remote, "rev-parse", "main").strip() == git(a.path, "rev-parse", "HEAD").strip()


@pytest.mark.parametrize("first", ["a", "b"])
def test_edits_to_different_memories_merge(machines: tuple[MemoryRepo, MemoryRepo, Path], first: str) -> None:
    a, b, _remote = machines
    on_a = a.remember("Deploy on Fridays is forbidden")
    on_b = b.remember("Prefer small pull requests")
    _settle(a, b, first)
    for repo in (a, b):
        ids = set(_all_readable(repo))
        assert {on_a.id, on_b.id} <= ids
    merge = a.log(op="merge")
    assert len(merge) == 1
    assert len(git(a.path, "rev-list", "--parents", "-n", "1", merge[0].sha).split()) == 3  # two parents


@pytest.mark.parametrize("first", ["a", "b"])
def test_same_memory_different_fields(machines: tuple[MemoryRepo, MemoryRepo, Path], first: str) -> None:
    a, b, _remote = machines
    mid = _shared(a, b, "Run tests with pytest -x", tags="testing", importance=2)
    a.save(replace(a.get(mid), tags=("testing", "python"), category="constraint"))
    b.save(replace(b.get(mid), importance=4, tags=("testing", "ci"), why="CI is slow"))
    _settle(a, b, first)
    merged = a.get(mid)
    assert set(merged.tags) == {"testing", "python", "ci"}
    assert merged.importance == 4
    assert merged.category == "constraint"
    assert merged.why == "CI is slow"
    assert not merged.conflicted
    assert docs.dumps(b.get(mid)) == docs.dumps(merged)


@pytest.mark.parametrize("first", ["a", "b"])
def test_same_memory_different_lines_merge(machines: tuple[MemoryRepo, MemoryRepo, Path], first: str) -> None:
    a, b, _remote = machines
    mid = _shared(a, b, "line one\nline two\nline three\nline four\nline five")
    a.save(replace(a.get(mid), text="line ONE\nline two\nline three\nline four\nline five"))
    b.save(replace(b.get(mid), text="line one\nline two\nline three\nline four\nline FIVE"))
    _settle(a, b, first)
    merged = a.get(mid)
    assert merged.text == "line ONE\nline two\nline three\nline four\nline FIVE"
    assert not merged.conflicted


@pytest.mark.parametrize("first", ["a", "b"])
def test_same_lines_conflict_keeps_both_versions(machines: tuple[MemoryRepo, MemoryRepo, Path],
                                                 first: str) -> None:
    a, b, _remote = machines
    mid = _shared(a, b, "Use PostgreSQL 14")
    a.save(replace(a.get(mid), text="Use PostgreSQL 16"))
    b.save(replace(b.get(mid), text="Use SQLite for tests, PostgreSQL 15 in production"))
    _settle(a, b, first)
    for repo in (a, b):
        found = _all_readable(repo)
        texts = {m.text for m in found.values()}
        assert {"Use PostgreSQL 16", "Use SQLite for tests, PostgreSQL 15 in production"} <= texts
        main = found[mid]
        assert main.conflicted
        versions = main.extra["conflict_with"]
        assert len(versions) == 1 and found[versions[0]].extra["conflict_of"] == mid
    git(a.path, "fsck", "--strict")


@pytest.mark.parametrize("first", ["a", "b"])
def test_deprecate_vs_edit(machines: tuple[MemoryRepo, MemoryRepo, Path], first: str) -> None:
    a, b, _remote = machines
    mid = _shared(a, b, "Use black for formatting")
    a.forget(mid, reason="we switched to ruff format")
    b.save(replace(b.get(mid), text="Use black for formatting, line length 100"))
    _settle(a, b, first)
    merged = a.get(mid)
    assert merged.deprecated and merged.deprecated_reason == "we switched to ruff format"
    assert merged.text == "Use black for formatting, line length 100"


@pytest.mark.parametrize("first", ["a", "b"])
def test_delete_vs_edit_keeps_the_edit(machines: tuple[MemoryRepo, MemoryRepo, Path], first: str) -> None:
    a, b, _remote = machines
    mid = _shared(a, b, "Cache pip downloads in CI")
    a.forget(mid, reason="obsolete", purge=True)
    b.save(replace(b.get(mid), text="Cache pip and npm downloads in CI"))
    _settle(a, b, first)
    assert a.get(mid).text == "Cache pip and npm downloads in CI"


@pytest.mark.parametrize("first", ["a", "b"])
def test_both_add_the_same_id(machines: tuple[MemoryRepo, MemoryRepo, Path], first: str) -> None:
    a, b, _remote = machines
    a.remember("Imported rule", id="rule-1", tags="x")
    b.remember("Imported rule", id="rule-1", tags="y")
    _settle(a, b, first)
    assert set(a.get("rule-1").tags) == {"x", "y"}


def test_every_version_of_every_memory_stays_readable(machines: tuple[MemoryRepo, MemoryRepo, Path]) -> None:
    a, b, _remote = machines
    mid = _shared(a, b, "Shared rule")
    for i in range(3):
        a.remember(f"a rule {i}")
        b.remember(f"b rule {i}")
    a.save(replace(a.get(mid), text="Shared rule from A"))
    b.save(replace(b.get(mid), text="Shared rule from B"))
    _settle(a, b)
    for repo in (a, b):
        found = _all_readable(repo)
        assert len(found) == 1 + 6 + 1
    # every blob of every memory in the history parses
    for rev in git(a.path, "rev-list", "--all").split():
        for line in git(a.path, "ls-tree", "-r", rev, "memories").splitlines():
            sha, path = line.split()[2], line.split("\t")[1]
            if path.endswith(".md"):
                docs.loads(git(a.path, "cat-file", "-p", sha), path)


def test_a_remote_that_never_answers_ends_the_sync_at_its_limit(tmp_path: Path) -> None:
    """A server that takes the connection and says nothing held ``gitmem sync`` for good (11 minutes, and every
    sync waiting behind it): a network step has a limit, 300 s unless --timeout says otherwise."""
    import socket
    import time

    from gitmem.cli.sync import NETWORK_TIMEOUT

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(4)
    try:
        init_repo(tmp_path / "m")
        repo = MemoryRepo(Config(repo=tmp_path / "m"))
        repo.git.set_remote(f"git://127.0.0.1:{silent.getsockname()[1]}/memories.git")
        started = time.monotonic()
        result = run_cli("--repo", str(repo.path), "sync", "--timeout", "2")
        assert time.monotonic() - started < 30
        assert result.code == 1 and "no answer within 2 s" in result.err and result.err.count("\n") == 1
    finally:
        silent.close()
    assert 0 < NETWORK_TIMEOUT <= 600 and f"default: {NETWORK_TIMEOUT:g}" in run_cli("sync", "--help").out


def test_unreachable_remote_is_one_line_and_leaves_work_alone(tmp_path: Path) -> None:
    init_repo(tmp_path / "m")
    repo = MemoryRepo(Config(repo=tmp_path / "m"))
    repo.git.set_remote(str(tmp_path / "nowhere.git"))
    memory = repo.remember("Local work")
    head = repo.git.head()
    with pytest.raises(RepoError) as err:
        sync.sync(repo.git, author=AUTHOR)
    assert "\n" not in str(err.value) and "nowhere.git" in str(err.value)
    assert repo.git.head() == head and repo.get(memory.id)
    assert_clean(repo.path)
    result = run_cli("--repo", str(repo.path), "sync")
    assert result.code == 1 and result.err.count("\n") == 1 and "cannot fetch" in result.err


def test_syncs_started_at_once_take_turns(machines: tuple[MemoryRepo, MemoryRepo, Path]) -> None:
    """Syncs of one repository at once (a manual one beside the hooks' automatic ones) fetched into the same refs
    and packs outside any lock, and failed with dulwich's lock files or a pack checksum mismatch, and advice about
    the URL and credentials. A sync now waits for the one running, then runs."""
    import time

    a, b, _remote = machines
    a.remember("A fact from machine a")
    b.import_records([{"text": f"Fact {i} from machine b"} for i in range(50)])
    assert run_cli("--repo", str(b.path), "sync").code == 0
    with a.git.syncing(60):  # another sync, running
        waiting = subprocess.Popen([*GITMEM_CMD, "--repo", str(a.path), "sync"], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE)
        time.sleep(3)
        assert waiting.poll() is None  # it waits: it has not fetched, merged or pushed
        assert len(a.list()) == 1
    assert waiting.wait(timeout=120) == 0, waiting.stderr.read().decode() if waiting.stderr else ""
    assert len(a.list()) == 51
    with a.git.syncing(60):  # a bounded sync that cannot wait long enough says why, in one line
        late = run_cli("--repo", str(a.path), "sync", "--timeout", "1")
    assert late.code != 0 and "another gitmem sync" in late.err and len(late.err.strip().splitlines()) == 1
    procs = [subprocess.Popen([*GITMEM_CMD, "--repo", str(a.path), "sync"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for _ in range(4)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    assert_clean(a.path)
    git(a.path, "fsck", "--strict")


def test_no_remote(repo: MemoryRepo) -> None:
    with pytest.raises(RepoError, match="no remote"):
        sync.sync(repo.git, author=AUTHOR)
    assert sync.auto_sync(repo) is None


def test_uncommitted_edit_is_never_overwritten(machines: tuple[MemoryRepo, MemoryRepo, Path]) -> None:
    a, b, _remote = machines
    mid = _shared(a, b, "Original")
    a.save(replace(a.get(mid), text="Changed on A"))
    _sync(a)
    path = b.path / b.get(mid).path
    path.write_text(path.read_text() + "\nhand edit\n")
    head = b.git.head()
    with pytest.raises(RepoError, match="uncommitted"):
        sync.sync(b.git, author=AUTHOR)
    assert b.git.head() == head and "hand edit" in path.read_text()


def test_status_counts_ahead_behind_and_pending(machines: tuple[MemoryRepo, MemoryRepo, Path]) -> None:
    a, b, _remote = machines
    a.remember("one")
    a.remember("two")
    assert sync.status(a.git).ahead == 2
    _sync(a)
    fetch(b.git)
    info = sync.status(b.git)
    assert (info.ahead, info.behind) == (0, 2)
    (b.path / "memories" / "global" / "stray.md").write_text("x")
    assert sync.status(b.git).pending == ("memories/global/stray.md",)


def test_auto_sync_is_bounded_and_quiet(machines: tuple[MemoryRepo, MemoryRepo, Path], tmp_path: Path) -> None:
    a, b, _remote = machines
    a.remember("pushed at session end")
    pushed = sync.auto_sync(a, timeout=10, pull=False)
    assert pushed is not None and pushed.pushed
    pulled = sync.auto_sync(b, timeout=10)
    assert pulled is not None and pulled.action == "fast-forward"
    b.git.set_remote(str(tmp_path / "gone.git"))
    assert sync.auto_sync(b, timeout=5) is None


def test_acceptance_two_machines_cli(machines: tuple[MemoryRepo, MemoryRepo, Path]) -> None:
    """A and B each add a memory and edit one shared memory's body differently; sync on A, B, A."""
    a, b, _remote = machines
    mid = _shared(a, b, "Build with make; the release target signs the artefacts")
    new_a = a.remember("Machine A: use the fast SSD for caches")
    new_b = b.remember("Machine B: the GPU box runs the benchmarks")
    a.save(replace(a.get(mid), text="Build with make; the release target signs and uploads the artefacts"))
    b.save(replace(b.get(mid), text="Build with just; the release target signs the artefacts"))
    outputs = []
    for repo in (a, b, a):
        result = run_cli("--repo", str(repo.path), "sync", "--json")
        assert result.code == 0, result.err
        outputs.append(json.loads(result.out))
        assert_clean(repo.path)
    assert [o["action"] for o in outputs] == ["pushed", "merged", "fast-forward"]
    assert outputs[1]["conflicted_ids"] == [mid]
    for repo in (a, b):
        found = _all_readable(repo)
        assert {new_a.id, new_b.id, mid} <= set(found)
        texts = {m.text for m in found.values()}
        assert "Build with make; the release target signs and uploads the artefacts" in texts
        assert "Build with just; the release target signs the artefacts" in texts
        status = run_cli("--repo", str(repo.path), "status", "--json")
        data = json.loads(status.out)
        assert [c["id"] for c in data["conflicts"]] == [mid] and len(data["conflicts"][0]["versions"]) == 1
        assert data["ahead"] == data["behind"] == 0 and data["pending"] == []
        text = run_cli("--repo", str(repo.path), "status").out
        assert "1 conflicted memory (settle with" in text and mid in text
    assert git(a.path, "rev-parse", "HEAD^{tree}") == git(b.path, "rev-parse", "HEAD^{tree}")

    # settle it on B with A's text, sync back: the conflict is gone everywhere
    version = json.loads(run_cli("--repo", str(b.path), "status", "--json").out)["conflicts"][0]["versions"][0]
    version_text = b.get(version).text
    done = run_cli("--repo", str(b.path), "resolve", mid, "--take", version)
    assert done.code == 0, done.err
    assert_clean(b.path)
    resolved = b.get(mid)
    assert not resolved.conflicted and resolved.text == version_text and "conflict_with" not in resolved.extra
    assert b.log(op="resolve")
    assert "1 other version removed (history keeps them)" in git(b.path, "log", "-1", "--format=%B")
    for repo in (b, a):
        assert run_cli("--repo", str(repo.path), "sync").code == 0
    assert json.loads(run_cli("--repo", str(a.path), "status", "--json").out)["conflicts"] == []
    assert a.get(mid).text == version_text


def test_resolve_refuses_unconflicted(repo: MemoryRepo) -> None:
    memory = repo.remember("fine")
    result = run_cli("--repo", str(repo.path), "resolve", memory.id)
    assert result.code == 2 and "not conflicted" in result.err


# -- review mode --------------------------------------------------------------------------------------
def _remote_branches(remote: Path) -> set[str]:
    return set(git(remote, "for-each-ref", "--format=%(refname:short)", "refs/heads").split())


@pytest.mark.parametrize("squash", [False, True])
def test_review_mode_proposes_a_branch_and_cleans_it_up(machines: tuple[MemoryRepo, MemoryRepo, Path],
                                                        squash: bool) -> None:
    a, b, remote = machines
    shared = _shared(a, b, "Use tabs for Makefiles", importance=2)
    gone = _shared(a, b, "Deploy with Fabric")
    main_before = git(remote, "rev-parse", "main")
    added = a.remember("Review every memory change in a pull request", category="constraint", tags="process")
    a.save(replace(a.get(shared), importance=4, tags=("make",)))
    a.forget(gone, reason="we deploy with Kubernetes now")
    summary = run_cli("--repo", str(a.path), "review")
    assert summary.code == 0, summary.err
    text = summary.out
    assert "### Added" in text and added.id in text and "from `cli`" in text
    assert "### Changed" in text and "importance 2 → 4" in text and "tags +make" in text
    assert "### Deprecated" in text and "we deploy with Kubernetes now" in text
    assert "3 commits" in text
    assert run_cli("--repo", str(a.path), "review", "HEAD~3..HEAD").out == text
    assert run_cli("--repo", str(a.path), "review", "HEAD^..HEAD").out.count("### ") == 1

    result = run_cli("--repo", str(a.path), "propose", "--json", "--no-gh")
    assert result.code == 0, result.err
    data = json.loads(result.out)
    branch = data["branch"]
    assert data["action"] == "proposed" and branch.startswith("gitmem/")
    assert git(remote, "rev-parse", "main") == main_before  # main untouched
    assert git(remote, "rev-parse", branch).strip() == git(a.path, "rev-parse", "HEAD").strip()
    assert_clean(a.path)

    # the pull request is merged upstream (a merge or a squash), then the next sync brings it back
    git(b.path, "fetch", "-q", "origin")
    if squash:
        git(b.path, "merge", "-q", "--squash", f"origin/{branch}")
        git(b.path, "commit", "-q", "-m", "Memory changes (#1)")
    else:
        git(b.path, "merge", "-q", "--no-ff", "-m", "Merge pull request #1", f"origin/{branch}")
    git(b.path, "push", "-q", "origin", "main")
    synced = run_cli("--repo", str(a.path), "sync", "--review", "--json")
    assert synced.code == 0, synced.err
    assert branch not in _remote_branches(remote)
    assert json.loads(synced.out)["action"] != "proposed"
    assert_clean(a.path)
    assert a.get(added.id) and a.get(gone).deprecated
    assert git(a.path, "rev-parse", "HEAD^{tree}") == git(remote, "rev-parse", "main^{tree}")
    # this machine goes on from main: after a squash its own commits counted as ahead for good and came back in the
    # next proposal ("5 commits" for one new memory)
    assert git(a.path, "rev-parse", "HEAD") == git(remote, "rev-parse", "main")
    a.remember("One more rule after the merge")
    again = json.loads(run_cli("--repo", str(a.path), "propose", "--json", "--no-gh").out)
    assert git(remote, "rev-list", "--count", f"main..{again['branch']}").strip() == "1"


def test_pull_request_urls() -> None:
    from gitmem.cli.review import pull_request_url

    assert pull_request_url("git@github.com:me/memory.git", "main", "gitmem/laptop/2026-11-30") == (
        "https://github.com/me/memory/compare/main...gitmem/laptop/2026-11-30?expand=1")
    assert pull_request_url("https://gitlab.com/team/mem", "main", "b").startswith(
        "https://gitlab.com/team/mem/-/merge_requests/new?")
    assert pull_request_url("/srv/git/mem.git", "main", "b") == ""


def test_push_after_fetch_into_a_clone_with_bitmaps(tmp_path: Path) -> None:
    """A local clone of a repacked bare remote has a .bitmap; dulwich 1.2 then fails to push a fetched pack
    without one unless sync turns bitmaps off."""
    seed = tmp_path / "seed"
    init_repo(seed)
    MemoryRepo(Config(repo=seed)).remember("seed")
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", "--no-local", str(seed), str(remote)], check=True)
    git(remote, "repack", "-adbq")
    for name in ("a", "b"):
        subprocess.run(["git", "clone", "-q", str(remote), str(tmp_path / name)], check=True)
    assert list((tmp_path / "a" / ".git" / "objects" / "pack").glob("*.bitmap"))
    b = MemoryRepo(Config(repo=tmp_path / "b"))
    b.remember("from b")
    _sync(b)
    a = MemoryRepo(Config(repo=tmp_path / "a"))
    a.remember("from a")
    result = _sync(a)
    assert result.action == "merged" and result.pushed
    git(remote, "fsck", "--strict")


def test_review_branch_deleted_upstream_is_no_error(machines: tuple[MemoryRepo, MemoryRepo, Path]) -> None:
    a, b, remote = machines
    a.remember("proposed then merged by the forge, which deletes the branch")
    branch = sync.sync(a.git, author=AUTHOR, mode="review").branch
    git(b.path, "fetch", "-q", "origin")
    git(b.path, "merge", "-q", "--no-ff", "-m", "Merge pull request #2", f"origin/{branch}")
    git(b.path, "push", "-q", "origin", "main")
    git(remote, "branch", "-D", branch)
    result = _sync(a)
    assert result.action == "fast-forward" and branch not in remote_branches(a.git)
    assert git(a.path, "rev-parse", "HEAD") == git(remote, "rev-parse", "main")


def test_two_machines_of_one_host_name_propose_on_branches_of_their_own(
        machines: tuple[MemoryRepo, MemoryRepo, Path]) -> None:
    """Review branches were named by the host name alone and force-pushed: two containers of one name overwrote
    each other's proposal, and the open pull request lost the other machine's changes."""
    a, b, remote = machines
    _sync(b)
    a.remember("Proposed on machine A")
    b.remember("Proposed on machine B")
    first = sync.sync(a.git, author=AUTHOR, mode="review").branch
    second = sync.sync(b.git, author=AUTHOR, mode="review").branch
    assert first != second and {first, second} <= _remote_branches(remote)
    assert "Proposed on machine A" in git(remote, "log", "-p", first)
    assert "Proposed on machine B" in git(remote, "log", "-p", second)
    # a machine keeps its name: its next proposal goes to the same branch
    a.remember("Proposed on machine A again")
    assert sync.sync(a.git, author=AUTHOR, mode="review").branch == first
    assert (a.path / ".git" / "gitmem-machine").is_file() and git(a.path, "status", "--porcelain") == ""


def test_tree_diff_matches_git(tmp_path: Path) -> None:
    """The tree diff sync and the search index share, against ``git diff --name-only`` (files becoming folders
    and back included)."""
    root = tmp_path / "r"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    layouts = [
        {"a.txt": "1", "d/x.md": "x", "d/e/y.md": "y", "f": "file"},
        {"a.txt": "2", "d/x.md": "x", "d/e/z.md": "z", "f/inner.md": "now a folder", "n/new.md": "n"},
        {"a.txt": "2", "d/e": "a file now", "f": "file again"},
    ]
    shas = []
    for files in layouts:
        for path in list(root.iterdir()):
            if path.name != ".git":
                subprocess.run(["rm", "-rf", str(path)], check=True)
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "step")
        shas.append(git(root, "rev-parse", "HEAD^{tree}").strip().encode())
    from dulwich.repo import Repo

    from gitmem.git.plumbing import diff_trees

    with Repo(str(root)) as repo:
        for old, new in [(0, 1), (1, 2), (0, 2), (2, 0)]:
            ours = diff_trees(repo.object_store, shas[old], shas[new])
            theirs = git(root, "diff", "--name-only", shas[old].decode(), shas[new].decode()).split()
            assert sorted(ours) == sorted(theirs)
            for path, sha in ours.items():
                listed = git(root, "ls-tree", shas[new].decode(), path).split()
                assert (sha.decode() if sha else None) == (listed[2] if listed and listed[1] == "blob" else None)


def test_credentials_never_reach_messages(repo: MemoryRepo) -> None:
    repo.git.set_remote("https://me:ghp_secret123@127.0.0.1:9/me/memory.git")
    with pytest.raises(RepoError) as err:
        sync.sync(repo.git, author=AUTHOR, timeout=10)
    assert "ghp_secret123" not in str(err.value) and "me@127.0.0.1" in str(err.value)
