"""Parallel writers (as parallel hook processes are) lose nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from gitmem.store.layout import init_repo
from tests.helpers import assert_clean, git

WORKER = """
import sys
import gitmem
from gitmem.config import Config
repo = gitmem.open(sys.argv[1], config=Config(repo=__import__('pathlib').Path(sys.argv[1])))
for i in range(int(sys.argv[3])):
    repo.remember(f"worker {sys.argv[2]} memory {i}", tags=f"w{sys.argv[2]}")
"""


def test_eight_processes_times_25_remember_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "mem"
    init_repo(path)
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(path), str(w), "25"]) for w in range(8)]
    assert [p.wait(timeout=300) for p in procs] == [0] * 8
    files = [f for f in git(path, "ls-files", "memories").split() if f.endswith(".md")]
    assert len(files) == 200
    assert int(git(path, "rev-list", "--count", "HEAD")) == 201
    texts = {(path / f).read_text(encoding="utf-8").split("---")[-1].strip() for f in files}
    assert texts == {f"worker {w} memory {i}" for w in range(8) for i in range(25)}
    assert_clean(path)
