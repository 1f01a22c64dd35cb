"""Wall time of each Claude Code hook as Claude Code runs it: a cold process per call, JSON on stdin.

    python bench/hooks.py [--sizes 1000,10000] [--runs 25] [--entry script|module|cli] [--tool-calls]

For each repository size (memories), prints the median wall time (ms) of every event, its ratio to ``python -c
pass`` measured in the same run with the same interpreter (runs interleaved), the median CPU time (user + system,
less sensitive to a busy machine) and its ratio, and the machine's load average. ``--entry`` picks how the hook is
started: ``script`` (the ``gitmem-hook`` console script, which ``gitmem install claude`` writes into Claude Code's
settings when it is installed; the default), ``module`` (``python -m gitmem.agents.claude.entry``) or ``cli``
(``gitmem hook``, through click). ``--tool-calls`` times only the per-tool-call events (a Bash call before and
after, an Edit that counts a hot path, a Read of a whole source file) beside ``python -c pass`` and ``python -c
"import json"`` (what parsing the input with ``json`` alone would cost). Measure in a regular install (``pip install
.``): an editable install's import finder slows every interpreter start and flatters the ratios. ``session-start``
is measured with BM25 only (``[embedding] model = "none"``) and with the configured model (``auto``), both right
after a commit to the memory repository (so the recall-block cache misses), then once more with nothing changed
(``cached block``); each run is a new session, so the per-session injection cache never short-cuts it. The warm path
is timed too: after a session's stop commits, the warm-up the stop hook starts detached (``gitmem warm``, run here
in the foreground with the configured model) and the session start that follows it. Bytecode is cached under a
temporary ``PYTHONPYCACHEPREFIX``, as an installed package has its ``.pyc`` files."""

from __future__ import annotations

import argparse
import json
import os
import resource
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


def _time(cmd: list[str], data: bytes, env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall ms, CPU ms of the child) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, input=data, env=env, cwd=cwd, capture_output=True, check=True)
    wall = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000


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


def measure(size: int, runs: int, entry: list[str], tool_calls: bool = False) -> dict[str, tuple[float, float]]:
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
        edit = {"tool_name": "Edit", "tool_input": {"file_path": str(code / "cart.py"), "old_string": "a",
                                                    "new_string": "b"},
                "tool_response": {"filePath": str(code / "cart.py"), "success": True}, "tool_use_id": "toolu_2"}
        source = "".join(f"def total_{n}(cart):\n    \"\"\"The sum of the cart's prices.\"\"\"\n"
                         f"    return sum(item.price * item.quantity for item in cart.items)\n\n" for n in range(300))
        read = {"tool_name": "Read", "tool_input": {"file_path": str(code / "cart.py")},
                "tool_response": {"type": "text", "file": {"filePath": str(code / "cart.py"), "content": source,
                                                           "numLines": source.count("\n")}}, "tool_use_id": "toolu_3"}
        results: dict[str, list[tuple[float, float]]] = {}

        def run(name: str, args: list[str], data: bytes) -> None:
            results.setdefault(name, []).append(_time(args, data, env, code))

        # warm the caches a real session would have: index, cwd → project
        subprocess.run([*entry, "session-start"], input=payload("SessionStart", "warm", source="startup"),
                       env=env, cwd=code, capture_output=True, check=True)
        for i in range(runs):
            run("python -c pass", [sys.executable, "-c", "pass"], b"")
            run("post-tool-use", [*entry, "post-tool-use"], payload("PostToolUse", "s", **tool))
            run("pre-tool-use", [*entry, "pre-tool-use"], payload("PreToolUse", "s", **tool))
            run("post-tool-use (Edit, hot path)", [*entry, "post-tool-use"], payload("PostToolUse", "s", **edit))
            run(f"post-tool-use (Read, {len(source) // 1000} KB file)", [*entry, "post-tool-use"],
                payload("PostToolUse", "s", **read))
            if tool_calls:
                run('python -c "import json"', [sys.executable, "-c", "import json"], b"")
                continue
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
        return {name: (statistics.median(w for w, _ in values), statistics.median(c for _, c in values))
                for name, values in results.items()}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--runs", type=int, default=25)
    parser.add_argument("--entry", choices=["script", "module", "cli"], default="script")
    parser.add_argument("--tool-calls", action="store_true", help="time only the per-tool-call events")
    args = parser.parse_args()
    entry = _entry(args.entry)
    sizes = [100] if args.tool_calls else [int(s) for s in args.sizes.split(",")]
    for size in sizes:
        medians = measure(size, args.runs, entry, args.tool_calls)
        base_wall, base_cpu = medians["python -c pass"]
        print(f"\n{size} memories, entry {' '.join(Path(entry[0]).name if i == 0 else a for i, a in enumerate(entry))}"
              f", medians of {args.runs} interleaved runs; load average after: "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        print(f"  {'':32} {'wall':>8}     {'ratio':>5}  {'CPU':>8}     {'ratio':>5}")
        for name, (wall, cpu) in medians.items():
            print(f"  {name:32} {wall:8.1f} ms  {wall / base_wall:5.2f}x  {cpu:8.1f} ms  {cpu / base_cpu:5.2f}x")


if __name__ == "__main__":
    main()
