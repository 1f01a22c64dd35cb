"""A memory repository this user cannot write (a read-only mount, a team's shared clone, a clone another user
owns): searching it still works, with the index in the user's cache folder, and changing it fails with one line
that says what to do.

The repository is made unwritable for real: as root, the reader is a child process that became the ``nobody``
user (root can write anywhere); as anyone else, the repository's folders lose their write bits."""

from __future__ import annotations

import io
import json
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gitmem.agents.claude import entry
from gitmem.config import Config
from gitmem.files.places import derived_dir
from gitmem.recall import recall
from gitmem.search.index import Index
from gitmem.store.layout import init_repo
from gitmem.store.memories import MemoryRepo
from gitmem.wiki.store import Wiki

ROOT = os.geteuid() == 0


def _nobody() -> tuple[int, int]:
    import pwd

    try:
        entry = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("running as root and there is no 'nobody' user to read as")
    return entry.pw_uid, entry.pw_gid


@pytest.fixture
def shared() -> Iterator[Path]:
    """A memory repository with two memories that the reader can read but not write, and a cache folder the
    reader can write (both in a folder every user can enter: pytest's own is its owner's alone)."""
    top = Path(tempfile.mkdtemp(prefix="gitmem-shared-", dir="/tmp"))
    top.chmod(0o755)
    repo_dir = top / "repo"
    init_repo(repo_dir)
    repo = MemoryRepo(Config(repo=repo_dir))
    repo.remember("We deploy with Helm charts on Kubernetes; staging is read-only", category="constraint")
    repo.remember("Use pnpm, never npm, for the web app", category="preference")
    Wiki(repo, "web").add("Release checklist", "Tag the release, then run the Helm upgrade in staging first.")
    cache = top / "cache"
    cache.mkdir()
    cache.chmod(0o777)
    folders = [Path(d) for d, _s, _f in os.walk(repo_dir)]
    if not ROOT:
        for folder in folders:
            folder.chmod(folder.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        yield top
    finally:
        for folder in folders:
            if folder.exists():
                folder.chmod(folder.stat().st_mode | stat.S_IWUSR)
        shutil.rmtree(top, ignore_errors=True)


def as_reader(work: Callable[[], Any]) -> Any:
    """``work()``'s JSON-able result, computed by a user who cannot write the shared repository."""
    if not ROOT:
        return work()
    uid, gid = _nobody()
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: become nobody, do the work, send the result back
        code = 0
        try:
            os.close(read_fd)
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            os.environ["HOME"] = os.environ["TMPDIR"] = "/tmp"  # the test's are root's alone
            result: Any = work()
        except BaseException as exc:  # the parent reports it
            result, code = {"error": f"{type(exc).__name__}: {exc}"}, 1
        with os.fdopen(write_fd, "w") as out:
            out.write(json.dumps(result))
        os._exit(code)
    os.close(write_fd)
    with os.fdopen(read_fd) as answer:
        data = answer.read()
    _pid, status = os.waitpid(pid, 0)
    result = json.loads(data)
    assert os.waitstatus_to_exitcode(status) == 0, result
    return result


def _warm(tmp_path: Path) -> None:
    """Search a repository of its own once, so the child (which, as nobody, may not read this interpreter's
    installation) finds every module the search needs already imported."""
    init_repo(tmp_path / "warm")
    warm = MemoryRepo(Config(repo=tmp_path / "warm"))
    warm.remember("Warm the imports up with one memory", category="background")
    Index(warm, embedder=None).search("warm imports")
    Wiki(warm, "warm").add("Warm page", "Warm the wiki's imports up.")
    Wiki(warm, "warm").query("warm")
    recall(warm, cwd=tmp_path, query="warm imports", embed_missing=False)  # and the model's (numpy's)


def test_a_repository_the_user_cannot_write_is_searched_from_the_user_cache(shared: Path, tmp_path: Path) -> None:
    _warm(tmp_path)
    config = Config(repo=shared / "repo", cache_home=str(shared / "cache"))

    def search() -> dict[str, Any]:
        repo = MemoryRepo(config)
        index = Index(repo, embedder=None)
        hits = index.search("how do we deploy with helm?")
        warnings = [(i.path, i.message) for i in repo.doctor() if i.level == "warning"]
        block = recall(repo, cwd=shared / "cache", query="helm charts", embed_missing=False).text
        pages = [hit.name for hit in Wiki(repo, "web").query("helm upgrade")]
        # the prompt's hook, as Claude Code runs it: its memories, its settings snapshot in the user's cache
        out, err = io.StringIO(), io.StringIO()
        event = {"hook_event_name": "UserPromptSubmit", "prompt": "how do we deploy with helm?", "session_id": "s",
                 "cwd": str(shared / "cache")}
        env = {"GITMEM_REPO": str(shared / "repo"), "GITMEM_WARM": "0", "XDG_CACHE_HOME": str(shared / "cache" / "xdg")}
        entry.run("user-prompt-submit", json.dumps(event).encode(), env=env, cwd=str(shared / "cache"),
                  home=str(shared / "cache"), out=out, err=err)
        start = {"hook_event_name": "SessionStart", "session_id": "s", "cwd": str(shared / "cache"),
                 "source": "startup"}
        entry.run("session-start", json.dumps(start).encode(), env=env, cwd=str(shared / "cache"),
                  home=str(shared / "cache"), out=io.StringIO(), err=err)
        return {"ids": [hit.id for hit in hits], "root": str(index.root), "warnings": warnings, "recall": block,
                "pages": pages, "hook": out.getvalue(),
                "snapshots": [str(p) for p in (shared / "cache" / "xdg").rglob("hook-settings.json")],
                "blocks": [str(p) for p in (shared / "cache" / "xdg").rglob("recall-cache.json")]}

    found = as_reader(search)
    assert found["ids"] and found["ids"][0].startswith("we-deploy-with-helm")
    # the index went to the user's cache, nothing into the repository
    assert Path(found["root"]).parent == shared / "cache" / "repos"
    assert (Path(found["root"]) / "search" / "tantivy" / "meta.json").is_file()
    assert not (shared / "repo" / ".cache").exists()
    # recall too (its use counters, which this user cannot write, are left uncounted)
    assert "We deploy with Helm charts" in found["recall"]
    # the prompt's hook gives the memory, and keeps its settings snapshot in the user's cache
    assert "We deploy with Helm charts" in found["hook"]
    assert len(found["snapshots"]) == 1
    # and the session start's block is cached there too, so the next session start loads no model
    assert len(found["blocks"]) == 1
    # the wiki's pages too, their index beside the memories'
    assert found["pages"] == ["release-checklist"]
    assert (shared / "cache" / "repos" / Path(found["root"]).name / "wiki" / "web").is_dir()
    # and doctor says why, and what does not work
    assert [path for path, message in found["warnings"] if "not writable by this user" in message] == ["."]
    # without a cache folder configured (a configuration built from the repository alone), its own .cache
    assert derived_dir(str(shared / "repo"), "") == str(shared / "repo" / ".cache")


def test_a_writable_repository_keeps_its_index_in_its_own_folder(tmp_path: Path) -> None:
    init_repo(tmp_path / "repo")
    repo = MemoryRepo(Config(repo=tmp_path / "repo", cache_home=str(tmp_path / "cache")))
    repo.remember("Run tests with pytest -x", category="constraint")
    index = Index(repo, embedder=None)
    assert [hit.id for hit in index.search("pytest")]
    assert index.root == tmp_path / "repo" / ".cache"
    assert not (tmp_path / "cache").exists()


def test_changing_a_repository_the_user_cannot_write_fails_with_one_line(shared: Path, tmp_path: Path) -> None:
    _warm(tmp_path)
    from click.testing import CliRunner  # noqa: F401 - imported before the fork: the child may not read it

    from gitmem.cli.main import main

    def remember() -> dict[str, Any]:
        os.chdir(shared / "cache")  # the reader's own folder (pytest's is root's alone)
        err = Path(tempfile.mkdtemp(dir=shared / "cache")) / "stderr"
        saved, argv = sys.stderr, sys.argv
        with err.open("w") as sink:
            sys.stderr = sink
            sys.argv = ["gitmem", "--repo", str(shared / "repo"), "remember", "Deploys need two approvals"]
            try:
                main()
                code: Any = 0
            except SystemExit as exc:
                code = exc.code
            finally:
                sys.stderr, sys.argv = saved, argv
        return {"code": code, "stderr": err.read_text()}

    env = {"HOME": str(shared / "cache"), "XDG_CACHE_HOME": str(shared / "cache")}
    old = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        result = as_reader(remember)
    finally:
        for name, value in old.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    assert result["code"] == 1
    lines = result["stderr"].strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("gitmem: error: cannot use ") and "Permission denied" in lines[0]
    assert "GITMEM_REPO" in lines[0] and "Traceback" not in result["stderr"]
    assert "internal error" not in lines[0]


def test_a_hook_on_a_repository_the_user_cannot_write_logs_and_starts_its_jobs_elsewhere(shared: Path,
                                                                                         tmp_path: Path) -> None:
    """The hooks' log and a detached job's output (the warm-up a session start sets off for memories without a
    vector) went to the repository's ``local/``: the first session start on such a repository ended in a
    PermissionError, and the agent was given nothing. They go to the user's log instead."""
    from gitmem.agents.claude.context import log, make_context, spawn_detached

    _warm(tmp_path)
    state = shared / "cache" / "state"

    def start() -> dict[str, Any]:
        env = {"GITMEM_REPO": str(shared / "repo"), "XDG_STATE_HOME": str(state),
               "XDG_CACHE_HOME": str(shared / "cache" / "xdg")}
        ctx = make_context({"session_id": "s", "cwd": str(shared / "cache")}, env=env, home=str(shared / "cache"),
                           cwd=str(shared / "cache"))
        spawn_detached(ctx, ["--version"])  # a job that ends at once
        log(ctx, "a line of the hook's")
        return {"log": (state / "gitmem" / "gitmem.log").read_text(encoding="utf-8")}

    found = as_reader(start)
    assert "a line of the hook's" in found["log"]
    assert not (shared / "repo" / "local").exists()
