"""Git-native workflows: what the post-commit hook costs, backfill throughput, and sync against the git CLI.

    python bench/git_native.py [--commits 20] [--history 500] [--memories 10000] [--trials 3]

1. Foreground cost of the post-commit hook: median wall time of ``git commit`` (git CLI) over ``--commits``
   commits with the hook installed, against the same without it (the extraction itself runs detached).
2. Backfill: ``gitmem extract --range`` over a code repository of ``--history`` commits (commits per second).
3. Sync: a memory repository of ``--memories`` memories; another machine pushed 1 or 100 changed memories and
   this one has one local commit, so the histories diverged. ``gitmem sync`` (fetch + merge commit + push,
   in-process and as a whole process) against ``git pull --no-rebase && git push`` on an identical copy.
"""

from __future__ import annotations

import argparse
import json
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
from gitmem.learn.oncommit import install_hooks
from gitmem.store import document as docs
from gitmem.store.layout import init_repo
from gitmem.store.memories import MemoryRepo
from gitmem.sync.round import sync

ENV = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "bench",
       "GIT_COMMITTER_EMAIL": "b@x", "GIT_CONFIG_NOSYSTEM": "1"}
AUTHOR = "bench <b@x>"
EXE = shutil.which("gitmem", path=str(Path(sys.executable).parent)) or "gitmem"


def git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env or ENV).stdout


def ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


# -- 1. hook foreground cost ----------------------------------------------------------------------------
def hook_cost(root: Path, commits: int, memory: Path) -> dict[str, float]:
    code = root / "code"
    code.mkdir()
    git(code, "init", "-q", "-b", "main")
    (code / "requirements.txt").write_text("urllib3\n")
    git(code, "add", ".")
    git(code, "commit", "-q", "-m", "init")
    env = {**ENV, "GITMEM_REPO": str(memory)}

    def run(label: str, pause: float) -> list[float]:
        times = []
        for i in range(commits):
            (code / "notes.txt").write_text(f"{label} {i}\n")
            git(code, "add", "notes.txt")
            start = time.perf_counter()
            subprocess.run(["git", "-C", str(code), "commit", "-q", "-m", f"Update notes {label} {i}"], check=True,
                           env=env)
            times.append(time.perf_counter() - start)
            time.sleep(pause)  # let a detached extraction finish so runs do not pile up on 2 cores
        return times

    run("warmup", 0)
    without = run("plain", 0.2)
    install_hooks(git_hooks_dir(code), EXE)
    with_hook = run("hook", 1.0)
    base, hooked = statistics.median(without), statistics.median(with_hook)
    return {"commit_ms": ms(base), "commit_with_hook_ms": ms(hooked), "added_ms": ms(hooked - base),
            "ratio": round(hooked / base, 2), "commits": commits}


def git_hooks_dir(code: Path) -> Path:
    return Path(git(code, "rev-parse", "--absolute-git-dir").strip()) / "hooks"


# -- 2. backfill ----------------------------------------------------------------------------------------
def backfill(root: Path, history: int, memory: Path) -> dict[str, float]:
    code = root / "history"
    code.mkdir()
    git(code, "init", "-q", "-b", "main")
    stream: list[str] = []
    deps: list[str] = []
    for i in range(history):
        files = {f"src/module_{i % 50}.py": f"VALUE = {i}\n"}
        message = f"Refactor module {i % 50}"
        if i % 10 == 0:
            deps.append(f"package-{i}>=1.0")
            files["requirements.txt"] = "\n".join(deps) + "\n"
            message = f"Adopt package-{i} for feature {i}"
        if i % 25 == 0:
            files[".github/workflows/ci.yml"] = f"on: push\n# {i}\n"
        body = "".join(f"M 100644 inline {p}\ndata {len(t.encode())}\n{t}\n" for p, t in files.items())
        stream.append(f"commit refs/heads/main\ncommitter bench <b@x> {1700000000 + i} +0000\n"
                      f"data {len(message.encode())}\n{message}\n{body}\n")
    subprocess.run(["git", "-C", str(code), "fast-import", "--quiet"], input="".join(stream), text=True,
                   check=True, env=ENV)
    git(code, "reset", "-q", "--hard", "main")
    start = time.perf_counter()
    proc = subprocess.run([EXE, "--repo", str(memory), "extract", "--range", "main", "--repo", str(code),
                           "--project", "bench", "--json"], check=True, capture_output=True, text=True, env=ENV)
    elapsed = time.perf_counter() - start
    data = json.loads(proc.stdout)
    return {"commits": data["commits"], "memories_added": data["added"], "seconds": round(elapsed, 2),
            "commits_per_s": round(data["commits"] / elapsed, 1)}


# -- 3. sync ----------------------------------------------------------------------------------------------
def make_memory_repo(root: Path, size: int) -> Path:
    path = root / "seed"
    init_repo(path, author=AUTHOR)
    folder = path / "memories" / "global"
    for i in range(size):
        memory = docs.make_memory(f"seed memory {i} about topic {i % 97}\nsecond line {i}", id=f"m{i:05d}",
                                  tags=[f"t{i % 13}"])
        (folder / f"{memory.id}.md").write_text(docs.dumps(memory), encoding="utf-8")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "seed")
    remote = root / "remote.git"
    git(root, "clone", "-q", "--bare", "--no-local", str(path), str(remote))
    git(remote, "repack", "-adq")
    template = root / "template"
    git(root, "clone", "-q", str(remote), str(template))
    # a machine that has used gitmem has its search index: build it once, every round's clone copies it
    subprocess.run([EXE, "--repo", str(template), "reindex", "--bm25-only"], check=True, capture_output=True,
                   env=ENV)
    return remote


def sync_round(root: Path, remote: Path, changed: int, trial: int) -> dict[str, float]:
    work = root / f"round-{changed}-{trial}"
    work.mkdir()
    a, b = work / "a", work / "b"
    pristine, remote = remote, work / "remote.git"  # every round starts from the same remote state
    shutil.copytree(pristine, remote, symlinks=True)
    shutil.copytree(root / "template", a, symlinks=True)
    git(a, "remote", "set-url", "origin", str(remote))
    git(work, "clone", "-q", str(remote), str(b))
    for i in range(changed):  # the other machine edits `changed` memories and pushes
        target = b / "memories" / "global" / f"m{(i * 37 + trial) % 10000:05d}.md"
        target.write_text(target.read_text().replace("second line", f"edited on b (trial {trial}), line"))
    git(b, "commit", "-q", "-am", f"edit {changed} memories")
    git(b, "push", "-q", "origin", "main")
    repo = MemoryRepo(Config(repo=a, author=AUTHOR))
    repo.remember(f"local memory {trial}")  # this machine has one local commit: the histories diverge
    # identical copies for the git CLI and for the whole-process run, each with its own copy of the remote
    copies = {}
    for name in ("cli", "process"):
        shutil.copytree(remote, work / f"remote-{name}.git", symlinks=True)
        shutil.copytree(a, work / name, symlinks=True)
        git(work / name, "remote", "set-url", "origin", str(work / f"remote-{name}.git"))
        copies[name] = work / name
    start = time.perf_counter()
    result = sync(repo.git, author=AUTHOR)
    ours = time.perf_counter() - start
    assert result.action == "merged" and result.pushed, result
    assert git(a, "status", "--porcelain") == ""
    start = time.perf_counter()
    subprocess.run([EXE, "--repo", str(copies["process"]), "sync"], check=True, capture_output=True, env=ENV)
    process = time.perf_counter() - start
    cli = copies["cli"]
    start = time.perf_counter()
    subprocess.run(["git", "-C", str(cli), "pull", "-q", "--no-rebase", "--no-edit", "origin", "main"], check=True,
                   env=ENV)
    subprocess.run(["git", "-C", str(cli), "push", "-q", "origin", "main"], check=True, env=ENV)
    theirs = time.perf_counter() - start
    shutil.rmtree(work, ignore_errors=True)
    return {"gitmem": ours, "process": process, "git": theirs}


def sync_bench(root: Path, size: int, trials: int) -> list[dict[str, float]]:
    remote = make_memory_repo(root, size)
    rows = []
    for changed in (1, 100):
        runs = [sync_round(root, remote, changed, t) for t in range(trials)]
        ours = statistics.median(r["gitmem"] for r in runs)
        process = statistics.median(r["process"] for r in runs)
        theirs = statistics.median(r["git"] for r in runs)
        rows.append({"memories": size, "changed": changed, "gitmem_sync_ms": ms(ours),
                     "gitmem_process_ms": ms(process), "git_pull_push_ms": ms(theirs),
                     "ratio": round(ours / theirs, 2), "process_ratio": round(process / theirs, 2)})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=20)
    parser.add_argument("--history", type=int, default=500)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--only", choices=["hook", "backfill", "sync"])
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="gitmem-bench-git-"))
    home = root / "home"
    home.mkdir()
    os.environ["HOME"] = ENV["HOME"] = str(home)
    (home / ".gitconfig").write_text("[user]\n\tname = bench\n\temail = b@x\n[init]\n\tdefaultBranch = main\n"
                                     "[gc]\n\tauto = 0\n[receive]\n\tautogc = false\n")
    try:
        memory = root / "mem"
        init_repo(memory, author=AUTHOR)
        if args.only in (None, "hook"):
            print("post-commit hook:", json.dumps(hook_cost(root, args.commits, memory)), flush=True)
        if args.only in (None, "backfill"):
            print("backfill:", json.dumps(backfill(root, args.history, memory)), flush=True)
        if args.only in (None, "sync"):
            for row in sync_bench(root, args.memories, args.trials):
                print("sync:", json.dumps(row), flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
