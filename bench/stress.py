"""Crash and race stress: kill -9 at random moments, clones syncing against one remote, parallel writers and hooks.

    python bench/stress.py [--kills 20] [--records 2000] [--clones 4] [--seconds 60] [--writers 8]
                           [--per-writer 25] [--hooks 16] [--hook-seconds 30] [--only kill,sync,writers,hooks]

1. kill: ``gitmem import`` of ``--records`` records and ``gitmem remember`` are killed with SIGKILL ``--kills``
   times each: half after a random delay uniform over the command's usual run time, half in the write phase
   (a random moment within 50 ms, or 0.5 s for import, after the write's journal appears). After every kill the next
   ``gitmem remember`` must succeed and then ``git status --porcelain`` is empty, ``git fsck --strict`` is clean,
   no ``*.tmp`` or ``*.lock`` file is left, ``gitmem list`` shows exactly the memories HEAD holds (no "ghosts"),
   and ``gitmem search`` finds the memory just remembered (the index caught up).
2. sync: ``--clones`` clones of one bare remote each loop ``remember`` + ``sync`` for ``--seconds``; then every
   clone syncs once more. Counts failed syncs (with their messages), memories lost (remembered somewhere but
   missing from the remote), fsck of the remote and clones, sync latency p50/p99.
3. writers: ``--writers`` processes × ``--per-writer`` ``gitmem remember`` on one repository: lost memories,
   latency p50/p99.
4. hooks: ``--hooks`` parallel ``gitmem-hook post-tool-use`` processes for ``--hook-seconds``: observation lines
   lost or corrupt, hook latency p50/p99.

Every figure is printed; the exit status is 1 when any check failed. The machine's load changes latencies a lot
(run it alone for figures worth comparing).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

BIN = Path(sys.executable).parent
GITMEM = shutil.which("gitmem", path=str(BIN)) or "gitmem"
HOOK = shutil.which("gitmem-hook", path=str(BIN)) or "gitmem-hook"


def environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "GITMEM_"))}
    env.update(HOME=str(home), GIT_CONFIG_NOSYSTEM="1", GITMEM_WARM="0", GIT_AUTHOR_NAME="stress",
               GIT_AUTHOR_EMAIL="s@x", GIT_COMMITTER_NAME="stress", GIT_COMMITTER_EMAIL="s@x")
    return env


def run(args: list[str], env: dict[str, str], **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, env=env, **kw)  # type: ignore[call-overload, no-any-return]


def git(repo: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return run(["git", "-C", str(repo), *args], env)


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 1)


def leftovers(repo: Path) -> list[str]:
    """Temporary and lock files a killed process may leave (gitmem's own lock file is permanent by design)."""
    found = []
    for path in repo.rglob("*"):
        rel = path.relative_to(repo).as_posix()
        if rel.startswith((".cache/", "local/")) or rel == ".git/gitmem.lock":
            continue
        if path.name.endswith((".tmp", ".lock")) or path.name == "gitmem-journal.json":
            found.append(rel)
    return found


def consistent(repo: Path, env: dict[str, str], expect: str) -> list[str]:
    """What is wrong with ``repo`` after a kill and one successful command ("" list: nothing)."""
    problems = []
    status = git(repo, "status", "--porcelain", env=env).stdout.strip()
    if status:
        problems.append(f"dirty work tree: {status.splitlines()[:3]}")
    fsck = git(repo, "fsck", "--strict", env=env)
    if fsck.returncode != 0:
        problems.append(f"fsck: {fsck.stderr.strip()[:200]}")
    left = leftovers(repo)
    if left:
        problems.append(f"left files: {left[:3]}")
    listed = run([GITMEM, "--repo", str(repo), "list", "--json", "--deprecated"], env)
    committed = [p for p in git(repo, "ls-tree", "-r", "--name-only", "HEAD", "memories", env=env).stdout.split()
                 if p.endswith(".md")]
    if listed.returncode != 0 or len(json.loads(listed.stdout or "[]")) != len(committed):
        problems.append(f"ghosts: list shows {len(json.loads(listed.stdout or '[]'))}, HEAD holds {len(committed)}")
    found = run([GITMEM, "--repo", str(repo), "search", expect, "--json"], env)
    if expect not in found.stdout:
        problems.append("search index did not catch up")
    return problems


# -- 1. kill -9 ----------------------------------------------------------------------------------------
def kill_trials(root: Path, kills: int, records: int) -> bool:
    env = environment(root / "home")
    repo = root / "kill"
    run([GITMEM, "init", str(repo)], env, check=True)
    data = root / "records.jsonl"
    ok = True
    for command in ("import", "remember"):
        # the command's usual duration, so kills land uniformly over its run
        started = time.perf_counter()
        if command == "import":
            data.write_text("".join(json.dumps({"text": f"warm-up record {i} about caching", "id": f"warm-{i}"})
                                    + "\n" for i in range(records)))
            run([GITMEM, "--repo", str(repo), "import", str(data)], env, check=True)
        else:
            run([GITMEM, "--repo", str(repo), "remember", "warm-up memory"], env, check=True)
        duration = time.perf_counter() - started
        killed = failures = in_write = 0
        for trial in range(kills):
            if command == "import":
                data.write_text("".join(json.dumps({"text": f"trial {trial} record {i} about queues",
                                                    "id": f"t{trial}-{i}"}) + "\n" for i in range(records)))
                args = [GITMEM, "--repo", str(repo), "import", str(data)]
            else:
                args = [GITMEM, "--repo", str(repo), "remember", f"trial {trial} memory about retries"]
            proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if trial % 2:  # the write phase: from the moment the journal appears (work tree, index, branch)
                journal = repo / ".git" / "gitmem-journal.json"
                while proc.poll() is None and not journal.exists():
                    time.sleep(0.0005)
                time.sleep(random.uniform(0, 0.05 if command == "remember" else 0.5))
            else:  # any moment of the run
                time.sleep(random.uniform(0, duration))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                killed += 1
                in_write += trial % 2
            proc.wait()
            marker = f"zebra{trial}{command}"
            after = run([GITMEM, "--repo", str(repo), "remember", f"after kill {marker}"], env)
            problems = [f"next remember failed: {after.stderr.strip()[:200]}"] if after.returncode else []
            problems += consistent(repo, env, marker)
            if problems:
                failures += 1
                print(f"  {command} trial {trial}: {'; '.join(problems)}")
        recovered = sum("recovered:" in line for line in
                        (repo / "local" / "gitmem.log").read_text("utf-8", "replace").splitlines()) \
            if (repo / "local" / "gitmem.log").exists() else 0
        print(f"kill -9 during {command}: {kills} trials ({kills // 2} in the write phase), {killed} killed "
              f"mid-run ({in_write} in the write phase), {failures} failed (run time {duration:.2f} s; "
              f"recoveries logged so far: {recovered})")
        ok = ok and failures == 0
    return ok


# -- 2. clones syncing --------------------------------------------------------------------------------
def sync_race(root: Path, clones: int, seconds: float) -> bool:
    env = environment(root / "home")
    remote = root / "remote.git"
    run(["git", "init", "--bare", "-q", "-b", "master", str(remote)], env, check=True)
    paths = [root / f"clone{i}" for i in range(clones)]
    for path in paths:
        done = run([GITMEM, "init", str(path), "--remote", str(remote)], env)
        if done.returncode:
            print(f"init failed: {done.stderr.strip()}")
            return False
    remembered: list[str] = []
    latencies: list[float] = []
    failures: list[str] = []
    syncs = 0
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def loop(index: int, path: Path) -> None:
        nonlocal syncs
        n = 0
        while time.monotonic() < deadline:
            n += 1
            added = run([GITMEM, "--repo", str(path), "remember", f"clone {index} note {n} about sync races"], env)
            with lock:
                if added.returncode == 0:
                    remembered.append(added.stdout.strip())
                else:
                    failures.append(f"remember: {added.stderr.strip()[:160]}")
            started = time.perf_counter()
            done = run([GITMEM, "--repo", str(path), "sync"], env)
            with lock:
                syncs += 1
                latencies.append(time.perf_counter() - started)
                if done.returncode:
                    failures.append(f"sync exit {done.returncode}: {done.stderr.strip()[:160]}")

    threads = [threading.Thread(target=loop, args=(i, p)) for i, p in enumerate(paths)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for _ in range(2):  # settle: every clone pulls and pushes what it still has
        for path in paths:
            run([GITMEM, "--repo", str(path), "sync"], env)
    on_remote = set(git(remote, "ls-tree", "-r", "--name-only", "main", "memories", env=env).stdout.split())
    ids = {Path(p).stem for p in on_remote}
    lost = [m for m in remembered if m not in ids]
    fsck = [str(p.name) for p in [remote, *paths] if git(p, "fsck", "--strict", env=env).returncode != 0]
    dirty = [p.name for p in paths if git(p, "status", "--porcelain", env=env).stdout.strip()]
    merges = int(git(remote, "rev-list", "--count", "--merges", "main", env=env).stdout.strip() or 0)
    print(f"sync race: {clones} clones x {seconds:g} s: {syncs} syncs, {len(failures)} failed, "
          f"{len(remembered)} remembered, {len(lost)} lost, {merges} merge commits, fsck "
          f"{'clean' if not fsck else 'FAILED ' + ','.join(fsck)}, dirty clones {len(dirty)}; "
          f"sync p50 {pct(latencies, 0.5)} ms, p99 {pct(latencies, 0.99)} ms")
    for message in sorted(set(failures))[:8]:
        print(f"  {failures.count(message)}x {message}")
    return not failures and not lost and not fsck and not dirty


# -- 3. parallel writers -------------------------------------------------------------------------------
def writers(root: Path, count: int, each: int) -> bool:
    env = environment(root / "home")
    repo = root / "writers"
    run([GITMEM, "init", str(repo)], env, check=True)
    latencies: list[float] = []
    failed: list[str] = []
    lock = threading.Lock()

    def loop(index: int) -> None:
        for n in range(each):
            started = time.perf_counter()
            done = run([GITMEM, "--repo", str(repo), "remember", f"writer {index} note {n}"], env)
            with lock:
                latencies.append(time.perf_counter() - started)
                if done.returncode:
                    failed.append(done.stderr.strip()[:160])

    threads = [threading.Thread(target=loop, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    files = [p for p in git(repo, "ls-files", "memories", env=env).stdout.split() if p.endswith(".md")]
    lost = count * each - len(failed) - len(files)
    clean = not git(repo, "status", "--porcelain", env=env).stdout.strip() and \
        git(repo, "fsck", "--strict", env=env).returncode == 0
    print(f"writers: {count} processes x {each} remember: {len(failed)} failed, {lost} lost, "
          f"{'clean' if clean else 'NOT clean'}; p50 {pct(latencies, 0.5)} ms, p99 {pct(latencies, 0.99)} ms")
    for message in sorted(set(failed))[:5]:
        print(f"  {message}")
    return not failed and lost == 0 and clean


# -- 4. parallel hooks ---------------------------------------------------------------------------------
def hooks(root: Path, count: int, seconds: float) -> bool:
    env = environment(root / "home")
    repo = root / "hooks"
    run([GITMEM, "init", str(repo)], env, check=True)
    env["GITMEM_REPO"] = str(repo)
    latencies: list[float] = []
    sent = 0
    failed = 0
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def loop(index: int) -> None:
        nonlocal sent, failed
        n = 0
        while time.monotonic() < deadline:
            n += 1
            payload = json.dumps({"session_id": f"s{index}", "hook_event_name": "PostToolUse", "tool_name": "Bash",
                                  "tool_input": {"command": f"echo hookcall-{index}-{n}"},
                                  "tool_response": {"stdout": "ok"}, "cwd": str(root)})
            started = time.perf_counter()
            done = subprocess.run([HOOK, "post-tool-use"], input=payload, capture_output=True, text=True, env=env)
            with lock:
                latencies.append(time.perf_counter() - started)
                sent += 1
                failed += done.returncode != 0

    threads = [threading.Thread(target=loop, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    lines = []
    for path in (repo / "local").rglob("*.jsonl"):
        lines += path.read_text("utf-8", "replace").splitlines()
    corrupt = 0
    seen = set()
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            corrupt += 1
            continue
        seen.update(re.findall(r"hookcall-\d+-\d+", json.dumps(record)))
    lost = sent - len(seen)
    print(f"hooks: {count} parallel post-tool-use x {seconds:g} s: {sent} calls, {failed} non-zero exits, "
          f"{lost} lost, {corrupt} corrupt lines; p50 {pct(latencies, 0.5)} ms, p99 {pct(latencies, 0.99)} ms")
    return failed == 0 and lost == 0 and corrupt == 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--clones", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--per-writer", type=int, default=25)
    parser.add_argument("--hooks", type=int, default=16)
    parser.add_argument("--hook-seconds", type=float, default=30)
    parser.add_argument("--only", default="kill,sync,writers,hooks")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--keep", action="store_true", help="Keep the repositories (path printed) to look at.")
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # figures appear as they come
    random.seed(args.seed)
    parts = set(args.only.split(","))
    ok = True
    root = Path(tempfile.mkdtemp(prefix="gitmem-stress-"))
    try:
        (root / "home").mkdir()
        if "kill" in parts:
            ok &= kill_trials(root, args.kills, args.records)
        if "sync" in parts:
            ok &= sync_race(root, args.clones, args.seconds)
        if "writers" in parts:
            ok &= writers(root, args.writers, args.per_writer)
        if "hooks" in parts:
            ok &= hooks(root, args.hooks, args.hook_seconds)
    finally:
        if args.keep:
            print(f"repositories kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    print("all checks passed" if ok else "SOME CHECKS FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
