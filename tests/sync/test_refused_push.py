"""A push the remote refuses leaves the remote-tracking branch where it was: ``status`` still counts the commits
to push and ``review`` still shows them. The remote is served by ``git daemon`` (a remote on this file system is
pushed to in-process, where its hooks never run), whose pre-receive hook refuses every push."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import git, run_cli


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def refusing_remote(tmp_path: Path) -> Iterator[str]:
    """A bare repository behind ``git daemon`` (git:// URL) that refuses every push; skipped where git has no
    daemon."""
    served = tmp_path / "served"
    bare = served / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    port = _free_port()
    try:
        daemon = subprocess.Popen(["git", "daemon", f"--base-path={served}", "--export-all", "--enable=receive-pack",
                                   "--listen=127.0.0.1", f"--port={port}", "--reuseaddr", str(served)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError:
        pytest.skip("git daemon cannot start here")
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                if daemon.poll() is not None:
                    pytest.skip("git daemon is not available")
                time.sleep(0.05)
        yield f"git://127.0.0.1:{port}/remote.git"
    finally:
        daemon.terminate()
        daemon.wait(timeout=10)
        shutil.rmtree(served, ignore_errors=True)


def test_a_refused_push_leaves_the_commits_to_push(refusing_remote: str, tmp_path: Path) -> None:
    mem = tmp_path / "mem"
    assert run_cli("init", str(mem), "--remote", refusing_remote).code == 0
    r = ["--repo", str(mem)]
    assert run_cli(*r, "sync").code == 0, "the first push, before the hook refuses anything"
    hook = tmp_path / "served" / "remote.git" / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'protected branch' >&2\nexit 1\n")
    hook.chmod(0o755)
    assert run_cli(*r, "remember", "Queue is SQS", "--scope", "global").code == 0
    refused = run_cli(*r, "sync")
    assert refused.code != 0 and "refused" in refused.err and "Traceback" not in refused.err
    assert git(mem, "rev-parse", "origin/main") != git(mem, "rev-parse", "main")
    assert "1 ahead" in run_cli(*r, "status").out
    assert "Queue is SQS" in run_cli(*r, "review").out
