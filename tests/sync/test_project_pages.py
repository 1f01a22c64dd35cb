"""Project pages (``projects/<id>.md``) through a real sync: two machines that work in the same code project each
learn notes in a session (the learner's own code path: observed tool calls, then ``learn_from_session``), sync,
and both end with both machines' notes, no ``.conflict-*`` file, a clean ``git status`` and nothing conflicted."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from gitmem.agents.claude.toolcall import observe_call
from gitmem.config import Config
from gitmem.projects import memory as projects
from gitmem.store import local as observe
from gitmem.store.layout import init_repo
from gitmem.store.memories import MemoryRepo
from gitmem.sync import round as sync
from gitmem.sync import sidecars
from tests.helpers import PROJECT, assert_clean, code_repo, git, run_cli

AUTHOR = "Test User <test@example.com>"
PAGE = projects.project_path(PROJECT)


@pytest.fixture
def machines(tmp_path: Path) -> tuple[MemoryRepo, MemoryRepo]:
    """Two machines that joined one bare remote with ``gitmem init --remote``, each with its own checkout of
    the code project (same origin URL, so the same project id, in different folders)."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    repos = []
    for name in ("a", "b"):
        init_repo(tmp_path / name, remote=str(remote))
        repo = MemoryRepo(Config(repo=tmp_path / name))
        sync.sync(repo.git, author=AUTHOR)
        (tmp_path / f"code-{name}").mkdir()
        code = code_repo(tmp_path / f"code-{name}")
        (code / "Makefile").write_text("check:\n\ttrue\n")
        repos.append(repo)
    return repos[0], repos[1]


def _code(repo: MemoryRepo) -> Path:
    return repo.path.parent / f"code-{repo.path.name}" / "shop"


def _session(repo: MemoryRepo, session: str, *commands: str) -> None:
    """A session in the code project: each command observed as the post-tool-use hook records it, then the
    detached learner's step (``learn_from_session``), which commits ``project: notes from session …``."""
    code = _code(repo)
    for n, command in enumerate(commands):
        payload = {"tool_name": "Bash", "tool_input": {"command": command}, "tool_use_id": f"toolu_{session}_{n}",
                   "tool_response": {"stdout": "ok", "stderr": "", "interrupted": False}}
        observe_call(observe.local_dir(repo.path), payload, "post", session=session, cwd=str(code), project=PROJECT)
    learned = projects.learn_from_session(repo, session, project=PROJECT)
    assert learned.sha, "the learner committed nothing"
    assert git(repo.path, "log", "-1", "--format=%s") == f"project: notes from session {session}\n"


def _sync(repo: MemoryRepo) -> sync.SyncResult:
    result = sync.sync(repo.git, author=AUTHOR)
    assert_clean(repo.path)
    assert result.conflicts == [] and result.conflicted_ids == []
    return result


def _notes(repo: MemoryRepo) -> str:
    page = projects.read(repo.path, PROJECT)
    assert page is not None
    return page.sections["Notes"]


def _assert_settled(a: MemoryRepo, b: MemoryRepo, *wanted: str) -> None:
    assert git(a.path, "rev-parse", "HEAD") == git(b.path, "rev-parse", "HEAD")
    for repo in (a, b):
        tracked = git(repo.path, "ls-files").split()
        assert not [p for p in tracked if ".conflict-" in p], tracked
        assert sidecars.conflict_files(repo.path) == []
        notes = _notes(repo)
        for text in wanted:
            assert text in notes, f"{repo.path.name} lost {text!r}:\n{notes}"
        assert "(none yet)" not in notes
        summary = projects.project_summary(repo.path, PROJECT)
        assert all(text in summary for text in wanted), summary
        status = json.loads(run_cli("--repo", str(repo.path), "status", "--json").out)
        assert status["conflicts"] == [] and status["pending"] == []
        doctor = run_cli("--repo", str(repo.path), "doctor")
        assert doctor.code == 0 and "conflict" not in doctor.out, doctor.out


@pytest.mark.parametrize("shared", [False, True], ids=["each-machine-created-the-page", "page-synced-first"])
def test_two_machines_learn_in_one_project_and_both_keep_both_notes(machines: tuple[MemoryRepo, MemoryRepo],
                                                                     shared: bool) -> None:
    """The reported case: A and B learn ``make check-a`` / ``make check-b``; sync on A, then B, then A."""
    a, b = machines
    if shared:  # the page exists on both machines before the sessions: a true three-way merge
        projects.scan_and_write(a, _code(a), force=True)
        _sync(a)
        _sync(b)
        assert (b.path / PAGE).is_file()
    _session(a, "s-a1", "make check-a")
    _session(b, "s-b1", "make check-b")
    assert [_sync(r).action for r in (a, b, a)] == ["pushed", "merged", "fast-forward"]
    _assert_settled(a, b, "`make check-a`", "`make check-b`")

    # the next sessions on both machines meet the merged page as their base: still nothing lost
    _session(a, "s-a2", "make check-a2")
    _session(b, "s-b2", "make check-b2")
    assert [_sync(r).action for r in (b, a, b)] == ["pushed", "merged", "fast-forward"]
    _assert_settled(a, b, "`make check-a`", "`make check-b`", "`make check-a2`", "`make check-b2`")
    notes = [ln for ln in _notes(a).splitlines() if ln.startswith("- ")]
    assert len(notes) == len(set(notes)) == 4
    assert notes[:2] == [n for n in notes if "check-a2" in n or "check-b2" in n]  # newest first, as the learner


def test_a_note_removed_on_one_machine_stays_removed(machines: tuple[MemoryRepo, MemoryRepo]) -> None:
    """A line one side deleted and the other left alone is deleted; what the other side added is kept."""
    a, b = machines
    _session(a, "s-a1", "make check-a", "make lint-old")
    _sync(a)
    _sync(b)
    page = projects.read(a.path, PROJECT)
    assert page is not None and "make lint-old" in page.sections["Notes"]
    page.sections["Notes"] = "\n".join(ln for ln in page.sections["Notes"].splitlines() if "lint-old" not in ln)
    with a.git.locked():
        a.commit({PAGE: projects.render(page).encode()}, "project: drop a stale note", "update", "cli")
    _session(b, "s-b1", "make check-b")
    for repo in (a, b, a):
        _sync(repo)
    _assert_settled(a, b, "`make check-a`", "`make check-b`")
    assert "lint-old" not in _notes(a)


def test_a_conflict_file_left_by_an_older_sync_is_merged_back(machines: tuple[MemoryRepo, MemoryRepo]) -> None:
    """A repository hit by the old behaviour (the other machine's page in ``<page>.conflict-<hex>``): the next
    learner run merges it back into the page and deletes it in the same commit."""
    a, b = machines
    _session(a, "s-a1", "make check-a")
    _session(b, "s-b1", "make check-b")
    other = (b.path / PAGE).read_bytes()
    side = f"{PAGE}.conflict-5bca9a"
    with a.git.locked():
        a.commit({side: other}, "merge: as an older gitmem left it", "merge", "sync:origin/main")
    assert sidecars.conflict_files(a.path) == [side]
    issues = sidecars.doctor_issues(a.path)
    assert [(i.level, i.path) for i in issues] == [("warning", side)] and PAGE in issues[0].message
    _session(a, "s-a2", "make check-a2")
    assert not (a.path / side).exists() and sidecars.conflict_files(a.path) == []
    assert side in git(a.path, "show", "--stat", "--format=", "HEAD")
    notes = _notes(a)
    assert all(f"`make {cmd}`" in notes for cmd in ("check-a", "check-b", "check-a2"))
    assert_clean(a.path)


def test_a_project_file_that_is_no_page_still_keeps_both_sides_visibly(
        machines: tuple[MemoryRepo, MemoryRepo]) -> None:
    """Bytes the page parser cannot read (not UTF-8) fall back to the whole-file rule; the other version is a
    ``.conflict-*`` file that :mod:`gitmem.sync.sidecars` lists for ``status`` and ``doctor``."""
    a, b = machines
    for repo, data in ((a, b"\xff\xfe machine a\n"), (b, b"\xff\xfe machine b\n")):
        with repo.git.locked():
            repo.commit({PAGE: data}, "project: binary", "update", "cli")
    sync.sync(a.git, author=AUTHOR)
    result = sync.sync(b.git, author=AUTHOR)
    assert_clean(b.path)
    assert len(result.conflicts) == 1 and PAGE in result.conflicts[0]
    found = sidecars.conflict_files(b.path)
    assert len(found) == 1 and found[0].startswith(f"{PAGE}.conflict-")
    assert {(b.path / PAGE).read_bytes(), (b.path / found[0]).read_bytes()} == {b"\xff\xfe machine a\n",
                                                                                b"\xff\xfe machine b\n"}
    assert [i.path for i in sidecars.doctor_issues(b.path)] == found
    env = {"GITMEM_REPO": str(b.path)}
    status = json.loads(run_cli("status", "--json", env=env).out)
    assert status["kept_versions"] == [{"path": found[0], "of": PAGE}]
    assert found[0] in run_cli("status", env=env).out
    doctor = run_cli("doctor", env=env)
    assert found[0] in doctor.out and "another machine's version" in doctor.out
