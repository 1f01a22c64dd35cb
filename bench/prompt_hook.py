"""The hooks a session pays on every prompt and tool call, at 10k memories, BM25 only, against ``python -c pass``.

    python bench/prompt_hook.py [--runs 9] [--size 10000]

Run it with the Python of a regular install (``pip install .`` into its own virtualenv): the hooks are started
as ``gitmem-hook`` next to that Python, and an editable install's import finder would slow every interpreter
start and flatter the ratios. The memory repository is built with this checkout's code; ``[embedding] model =
"none"``. Prints the median of interleaved runs and the ratio to ``python -c pass`` of: post-tool-use,
user-prompt-submit with a prompt that finds memories, with one that finds none and with one that states a rule
(the directive rules are compiled only then), and session-start serving its cached block; in wall time and in
the child's CPU time (user + system), which a busy machine inflates less.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--size", type=int, default=10_000)
    args = parser.parse_args()
    python = sys.executable
    hook = str(Path(python).parent / "gitmem-hook")
    root = Path(tempfile.mkdtemp(prefix="gitmem-prompthook-"))
    home, code = root / "home", root / "shop"
    home.mkdir()
    code.mkdir()
    subprocess.run(["git", "init", "-q", str(code)], check=True)
    subprocess.run(["git", "-C", str(code), "remote", "add", "origin", "git@github.com:acme/shop.git"], check=True)
    mem = home / ".gitmem"
    init_repo(mem, author="bench <b@x>")
    (mem / "gitmem.toml").write_text('[embedding]\nmodel = "none"\n', "utf-8")
    project = "github.com-acme-shop"
    MemoryRepo(Config(repo=mem, author="bench <b@x>")).import_records(
        {"text": f"memory {i} about topic {i % 97}: use tool{i % 13} for task{i % 31}",
         "project": project if i % 3 else "", "importance": 1 + i % 5} for i in range(args.size))
    env = {**os.environ, "HOME": str(home), "GITMEM_WARM": "0", "GITMEM_LEARN": "0", "GITMEM_PROJECT_SCAN": "0",
           "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@x"}
    for key in ("GITMEM_REPO", "PYTHONDONTWRITEBYTECODE"):
        env.pop(key, None)

    def payload(event: str, session: str, **extra: object) -> bytes:
        return json.dumps({"session_id": session, "cwd": str(code), "hook_event_name": event, **extra}).encode()

    # the index, the Essentials cache and the recall block a real session would find ready: the index built by
    # `gitmem reindex`, which has no deadline (on a busy machine a first build of 10k memories takes longer than
    # a hook's or the warm-up's, and one that gives up leaves the index unbuilt for every timed run)
    subprocess.run([str(Path(python).parent / "gitmem"), "reindex"], env=env, cwd=code, capture_output=True,
                   check=True)
    subprocess.run([hook, "session-start"], input=payload("SessionStart", "warm", source="startup"), env=env,
                   cwd=code, capture_output=True, check=True)
    results: dict[str, list[float]] = {}

    cpu: dict[str, list[float]] = {}

    def run(name: str, cmd: list[str], data: bytes) -> None:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(cmd, input=data, env=env, cwd=code, capture_output=True, check=True)
        results.setdefault(name, []).append((time.perf_counter() - start) * 1000)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.setdefault(name, []).append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)

    edit = {"tool_name": "Edit", "tool_input": {"file_path": str(code / "a.py")}, "tool_response": {}}
    for i in range(args.runs):
        run("python -c pass", [python, "-c", "pass"], b"")
        run("post-tool-use", [hook, "post-tool-use"], payload("PostToolUse", "s", **edit))
        run("user-prompt-submit, memories pass", [hook, "user-prompt-submit"],
            payload("UserPromptSubmit", f"p{i}", prompt=f"which tool for task{i} and topic {i}"))
        run("user-prompt-submit, nothing passes", [hook, "user-prompt-submit"],
            payload("UserPromptSubmit", f"q{i}", prompt="rename the variable please"))
        run("user-prompt-submit, a directive", [hook, "user-prompt-submit"],
            payload("UserPromptSubmit", f"d{i}", prompt="from now on never push without asking me"))
        run("session-start, cached block", [hook, "session-start"], payload("SessionStart", f"c{i}", source="startup"))
    base, base_cpu = statistics.median(results["python -c pass"]), statistics.median(cpu["python -c pass"])
    print(f"{args.size} memories, BM25 only, medians of {args.runs} interleaved runs; load average after: "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"  {'':36} {'wall':>8}     {'ratio':>6}  {'CPU':>8}     {'ratio':>6}")
    for name, values in results.items():
        median, median_cpu = statistics.median(values), statistics.median(cpu[name])
        print(f"  {name:36} {median:8.1f} ms  {median / base:5.2f}x  {median_cpu:8.1f} ms  "
              f"{median_cpu / base_cpu:5.2f}x")


if __name__ == "__main__":
    main()
