"""Session-start and prompt hook latency with a running ``gitmem serve`` and without one.

    python bench/hooks_server.py [--size 1000] [--runs 15] [--model auto|none]

Builds a memory repository of ``--size`` memories, starts ``gitmem serve`` on a free loopback port, and times
each hook as Claude Code runs it (``python -m gitmem.agents.claude.entry``, a cold process, JSON on
stdin). The two ways are
interleaved run by run: "served" with the server's ``local/server.json`` in place, "in-process" with it moved
aside (the hook then finds no server, as when none runs). Each session start is a new session with the recall
block cache emptied, so the block is computed (by the server or in the hook). Prints medians (ms), and how many
served calls fell back (no connection within 50 ms, or no answer within the read timeout, 2 s unless
``GITMEM_SERVER_TIMEOUT`` says otherwise).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gitmem.config import Config
from gitmem.store.layout import init_repo
from gitmem.store.memories import MemoryRepo

PROJECT = "github.com-acme-shop"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def measure(size: int, runs: int, model: str) -> tuple[dict[str, float], int]:
    root = Path(tempfile.mkdtemp(prefix="gitmem-hookserver-"))
    server: subprocess.Popen[bytes] | None = None
    try:
        home, code, mem = root / "home", root / "shop", root / "home" / ".gitmem"
        home.mkdir()
        code.mkdir()
        subprocess.run(["git", "init", "-q", str(code)], check=True)
        subprocess.run(["git", "-C", str(code), "remote", "add", "origin", "git@github.com:acme/shop.git"],
                       check=True)
        init_repo(mem, author="bench <b@x>")
        if model == "none":
            (home / ".config" / "gitmem").mkdir(parents=True)
            (home / ".config" / "gitmem" / "config.toml").write_text('[embedding]\nmodel = "none"\n')
        repo = MemoryRepo(Config(repo=mem, author="bench <b@x>"))
        repo.import_records({"text": f"memory {i} about topic {i % 97}: use tool{i % 13} for task{i % 31}",
                             "project": PROJECT if i % 3 else "", "importance": 1 + i % 5} for i in range(size))
        env = {**os.environ, "HOME": str(home), "GITMEM_REPO": str(mem), "GITMEM_WARM": "0", "GITMEM_LEARN": "0",
               "GITMEM_PROJECT_SCAN": "0", "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@x",
               "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "b@x"}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(root / "pycache")  # bytecode cached, as an installed package has it
        hook = [sys.executable, "-m", "gitmem.agents.claude.entry"]

        def payload(event: str, session: str, **extra: object) -> bytes:
            return json.dumps({"session_id": session, "transcript_path": "", "cwd": str(code),
                               "hook_event_name": event, **extra}).encode()

        def timed(event: str, data: bytes) -> float:
            start = time.perf_counter()
            subprocess.run([*hook, event], input=data, env=env, cwd=code, capture_output=True, check=True)
            return (time.perf_counter() - start) * 1000

        # the index is built once, before either way is timed
        subprocess.run([*hook, "session-start"], input=payload("SessionStart", "warm", source="startup"), env=env,
                       cwd=code, capture_output=True, check=True)
        port = _free_port()
        server = subprocess.Popen([sys.executable, "-m", "gitmem", "serve", "--port", str(port)], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        record, aside = mem / "local" / "server.json", mem / "local" / "server.json.aside"
        deadline = time.monotonic() + 120
        while not record.exists():
            if server.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("gitmem serve did not start")
            time.sleep(0.2)
        urllib.request.urlopen(f"http://127.0.0.1:{port}/health").read()
        log = mem / "local" / "gitmem.log"
        results: dict[str, list[float]] = {}
        for i in range(runs):
            for way in ("served", "in-process"):
                if way == "in-process":
                    record.rename(aside)
                (mem / "local" / "recall-cache.json").unlink(missing_ok=True)
                results.setdefault(f"session-start ({way})", []).append(
                    timed("session-start", payload("SessionStart", f"{way}{i}", source="startup")))
                results.setdefault(f"user-prompt-submit ({way})", []).append(
                    timed("user-prompt-submit", payload("UserPromptSubmit", f"{way}{i}",
                                                        prompt=f"which tool{i % 13} do we use for task{i % 31}?")))
                if way == "in-process":
                    aside.rename(record)
        missed = sum("working in-process" in line for line in log.read_text().splitlines()) if log.exists() else 0
        return {name: statistics.median(values) for name, values in results.items()}, missed
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--model", choices=["auto", "none"], default="auto")
    args = parser.parse_args()
    medians, missed = measure(args.size, args.runs, args.model)
    print(f"{args.size} memories, embedding model {args.model}, medians of {args.runs} interleaved runs")
    for name, value in medians.items():
        print(f"  {name:34} {value:8.1f} ms")
    print(f"  served calls that fell back: {missed} of {2 * args.runs}")


if __name__ == "__main__":
    main()
