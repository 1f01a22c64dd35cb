"""Wall time of each Claude Code hook as Claude Code runs it: a cold process per call, JSON on stdin.

    python bench/hooks.py [--sizes 1000,10000] [--runs 20] [--entry module|script|cli]

For each repository size (memories), prints the median wall time (ms) of every event and its ratio to
``python -c pass`` measured in the same run with the same interpreter. ``--entry`` picks how the hook is
started: ``module`` (``python -m gitmem.agents.claude.entry``), ``script`` (the ``gitmem-hook`` console script, if
installed) or ``cli`` (``gitmem hook``, through click). ``session-start`` is measured with BM25 only
(``[embedding] model = "none"``) and with the configured model (``auto``), both right after a commit to the memory
repository (so the recall-block cache misses), then once more with nothing changed (``cached block``); each run
is a new session, so the per-session injection cache never short-cuts it. The warm path is timed too: after a
session's stop commits, the warm-up the stop hook starts detached (``gitmem warm``, run here in the foreground
with the configured model) and the session start that follows it. Bytecode is cached under a temporary
``PYTHONPYCACHEPREFIX``, as an installed package has its ``.pyc`` files.
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
from gitmem.store.layout import init_repo
from gitmem.store.memories import MemoryRepo


def _time(cmd: list[str], data: bytes, env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, input=data, env=env, cwd=cwd, capture_output=True, check=True)
    return (time.perf_counter() - start) * 1000


def _entry(kind: str) -> list[str]:
    bindir = Path(sys.executable).parent
    if kind == "script":
        script = shutil.which("gitmem-hook", path=str(bindir))
        if script is None:
            raise SystemExit("gitmem-hook is not installed; use --entry module")
        return [script]
    if kind == "cli":
        return [shutil.which("gitmem", path=str(bindir)) or "gitmem", "hook"]
    return [sys.executable, "-m", "gitmem.agents.claude.entry"]


def measure(size: int, runs: int, entry: list[str]) -> dict[str, float]:
    root = Path(tempfile.mkdtemp(prefix="gitmem-hookbench-"))
    try:
        home, code, mem = root / "home", root / "shop", root / "home" / ".gitmem"
        home.mkdir()
        code.mkdir()
        subprocess.run(["git", "init", "-q", str(code)], check=True)
        subprocess.run(["git", "-C", str(code), "remote", "add", "origin", "git@github.com:acme/shop.git"],
                       check=True)
        init_repo(mem, author="bench <b@x>")
        repo = MemoryRepo(Config(repo=mem, author="bench <b@x>"))
        project = "github.com-acme-shop"
        repo.import_records({"text": f"memory {i} about topic {i % 97}: use tool{i % 13} for task{i % 31}",
                             "project": project if i % 3 else "", "importance": 1 + i % 5} for i in range(size))
        env = {**os.environ, "HOME": str(home), "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@x",
               "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "b@x"}
        env.pop("GITMEM_REPO", None)
        env["GITMEM_WARM"] = "0"  # the warm-up is run (and timed) explicitly below, not raced in the background
        warm = [str(Path(sys.executable).parent / "gitmem")]
        # cache bytecode (as an installed package has it) without writing __pycache__ into the source tree
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
        user_config = home / ".config" / "gitmem" / "config.toml"
        user_config.parent.mkdir(parents=True)

        def payload(event: str, session: str, **extra: object) -> bytes:
            return json.dumps({"session_id": session, "transcript_path": "", "cwd": str(code),
                               "hook_event_name": event, **extra}).encode()

        tool = {"tool_name": "Bash", "tool_input": {"command": "pytest -x tests/"},
                "tool_response": {"stdout": "3 passed in 0.2s", "stderr": "", "interrupted": False},
                "tool_use_id": "toolu_1"}
        results: dict[str, list[float]] = {}

        def run(name: str, args: list[str], data: bytes) -> None:
            results.setdefault(name, []).append(_time(args, data, env, code))

        # warm the caches a real session would have: index, cwd → project
        subprocess.run([*entry, "session-start"], input=payload("SessionStart", "warm", source="startup"),
                       env=env, cwd=code, capture_output=True, check=True)
        for i in range(runs):
            run("python -c pass", [sys.executable, "-c", "pass"], b"")
            run("post-tool-use", [*entry, "post-tool-use"], payload("PostToolUse", "s", **tool))
            run("pre-tool-use", [*entry, "pre-tool-use"], payload("PreToolUse", "s", **tool))
            run("user-prompt-submit (plain)", [*entry, "user-prompt-submit"],
                payload("UserPromptSubmit", "s", prompt="Fix the failing test in shop/cart.py please"))
            run("user-prompt-submit (directive)", [*entry, "user-prompt-submit"],
                payload("UserPromptSubmit", f"d{i}", prompt=f"Always run ruff before committing {i}."))
            run("pre-compact", [*entry, "pre-compact"], payload("PreCompact", "s", trigger="auto"))
            run("stop (commit)", [*entry, "stop"], payload("Stop", f"d{i}", stop_hook_active=False))
            user_config.write_text('[embedding]\nmodel = "none"\n')
            run("session-start (bm25)", [*entry, "session-start"], payload("SessionStart", f"b{i}", source="startup"))
            user_config.write_text("")
            run("session-start (auto)", [*entry, "session-start"], payload("SessionStart", f"a{i}", source="startup"))
            run("session-start (cached block)", [*entry, "session-start"],
                payload("SessionStart", f"c{i}", source="startup"))
            # the warm path: a session's stop commits, the detached warm-up it starts (run here in the
            # foreground, so it is timed and surely finished) prepares the block the next session start serves
            subprocess.run([*entry, "user-prompt-submit"], env=env, cwd=code, capture_output=True, check=True,
                           input=payload("UserPromptSubmit", f"e{i}", prompt=f"Never deploy on Fridays {i}."))
            subprocess.run([*entry, "stop"], input=payload("Stop", f"e{i}", stop_hook_active=False), env=env,
                           cwd=code, capture_output=True, check=True)
            run("warm-up after stop (detached)", [*warm, "warm", "--cwd", str(code)], b"")
            run("session-start after the warm-up", [*entry, "session-start"],
                payload("SessionStart", f"w{i}", source="startup"))
        return {name: statistics.median(values) for name, values in results.items()}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--entry", choices=["module", "script", "cli"], default="module")
    args = parser.parse_args()
    entry = _entry(args.entry)
    for size in (int(s) for s in args.sizes.split(",")):
        medians = measure(size, args.runs, entry)
        base = medians["python -c pass"]
        print(f"\n{size} memories, entry {' '.join(Path(entry[0]).name if i == 0 else a for i, a in enumerate(entry))}"
              f", medians of {args.runs} runs")
        for name, value in medians.items():
            print(f"  {name:32} {value:8.1f} ms  {value / base:5.2f}x")


if __name__ == "__main__":
    main()
