"""Cost of one ``remember`` (one commit) as the repository grows, against the git CLI on the same repo.

    python bench/commit.py [--sizes 100,1000,10000] [--runs 20]

Prints, per size: median ms of ``MemoryRepo.remember`` in-process, median ms of ``git add`` + ``git commit``
(two git processes, as a script would run them), their ratio, and the median wall time of a whole
``gitmem remember`` process.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gitmem.config import Config
from gitmem.store.layout import init_repo
from gitmem.store.memories import MemoryRepo

ENV = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "bench",
       "GIT_COMMITTER_EMAIL": "b@x"}


def measure(size: int, runs: int, cli_runs: int) -> dict[str, float]:
    root = Path(tempfile.mkdtemp(prefix="gitmem-bench-"))
    try:
        path = root / "mem"
        init_repo(path, author="bench <b@x>")
        repo = MemoryRepo(Config(repo=path, author="bench <b@x>"))
        repo.import_records({"text": f"seed memory {i} about topic {i % 97}", "tags": [f"t{i % 13}"]}
                            for i in range(size))
        subprocess.run(["git", "-C", str(path), "status", "--porcelain"], check=True, capture_output=True)
        ours = []
        for i in range(runs):
            start = time.perf_counter()
            repo.remember(f"benchmark memory number {i}", tags="bench")
            ours.append((time.perf_counter() - start) * 1000)
        theirs = []
        for i in range(runs):
            target = path / "memories" / "global" / f"git-cli-{i}.md"
            start = time.perf_counter()
            target.write_text(f"---\nid: git-cli-{i}\n---\ngit cli memory {i}\n")
            subprocess.run(["git", "-C", str(path), "add", str(target)], check=True, env=ENV)
            subprocess.run(["git", "-C", str(path), "commit", "-q", "-m", f"cli {i}"], check=True, env=ENV)
            theirs.append((time.perf_counter() - start) * 1000)
        process = []
        exe = shutil.which("gitmem", path=str(Path(sys.executable).parent)) or "gitmem"
        for i in range(cli_runs):
            start = time.perf_counter()
            subprocess.run([exe, "--repo", str(path), "remember", f"process memory {i}"], check=True,
                           capture_output=True, env=ENV)
            process.append((time.perf_counter() - start) * 1000)
        dirty = subprocess.run(["git", "-C", str(path), "status", "--porcelain"], capture_output=True,
                               text=True, check=True).stdout
        assert dirty == "", f"work tree not clean after the run: {dirty[:200]}"
        return {"gitmem": statistics.median(ours), "git": statistics.median(theirs),
                "process": statistics.median(process)}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--cli-runs", type=int, default=5)
    args = parser.parse_args()
    print(f"{'memories':>9} {'remember ms':>12} {'git add+commit ms':>18} {'ratio':>6} {'gitmem process ms':>18}")
    for size in (int(s) for s in args.sizes.split(",")):
        row = measure(size, args.runs, args.cli_runs)
        print(f"{size:>9} {row['gitmem']:>12.1f} {row['git']:>18.1f} {row['gitmem'] / row['git']:>6.2f} "
              f"{row['process']:>18.1f}")


if __name__ == "__main__":
    main()
