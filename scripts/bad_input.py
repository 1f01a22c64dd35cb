"""Drive every gitmem command with bad input and report any exit that is not one clear line.

    python scripts/bad_input.py

Each case runs the installed ``gitmem`` in a scratch repository with a fresh HOME: bad JSONL records (wrong
types, deep nesting, huge or binary text), bad options (out-of-range numbers and durations), unknown ids, bad
paths, bad ``gitmem.toml`` values, a damaged ``.git``. A case fails when the command prints a traceback or an
"internal error", exits with a code other than 0, 1 or 2, or exits non-zero without saying why. Exit status 1
when any case failed. The cheap cases are kept as a parametrised test (tests/test_safety.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

GITMEM = shutil.which("gitmem", path=str(Path(sys.executable).parent)) or "gitmem"


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


RECORDS = {
    "why-number": {"text": "x", "why": 5}, "why-list": {"text": "x", "why": [5]},
    "tags-number": {"text": "x", "tags": 5},
    "tags-objects": {"text": "x", "tags": [1, {"a": 1}]}, "text-number": {"text": 5}, "text-null": {"text": None},
    "importance-word": {"text": "x", "importance": "high"}, "importance-huge": {"text": "x", "importance": 1e300},
    "created-number": {"text": "x", "created": 5}, "created-far": {"text": "x", "created": "99999-01-01"},
    "id-number": {"text": "x", "id": 5}, "id-dots": {"text": "x", "id": "../../etc"},
    "project-list": {"text": "x", "project": ["a"]}, "project-dots": {"text": "x", "project": "../x"},
    "name-object": {"text": "x", "name": {"a": 1}}, "reason-number": {"text": "x", "deprecated_reason": 5},
    "source-number": {"text": "x", "source": 5}, "scope-number": {"text": "x", "scope": 5},
    "type-number": {"text": "x", "type": 5}, "expires-list": {"text": "x", "expires": [1]},
    "text-huge": {"text": "x" * 5_000_000}, "text-nul": {"text": "a\u0000b"},
}
RAW_LINES = {"deep": _deep(100_000), "deep-field": '{"text": "x", "why": ' + _deep(100_000) + "}",
             "nan": '{"text": "x", "importance": NaN}', "surrogate": '{"text": "\\ud800"}', "not-json": "{text",
             "latin1": "{\"text\": \"caf\xe9\"}"}
COMMANDS = [
    ["digest", "--since", "99999999d"], ["digest", "--since", "99999999999999h"], ["digest", "--since", "abc"],
    ["digest", "--since", "-5d"], ["remember", ""], ["remember", "x", "--id", "a/b"], ["remember", "x", "--id", "."],
    ["remember", "x", "--project", "../../etc"], ["remember", "x", "--tags", ",,,"], ["show", "../../etc/passwd"],
    ["show", ""], ["forget", "seed", "--reason", ""], ["forget", "nope", "--reason", "x"], ["restore", "nope"],
    ["log", "nope"], ["log", "--limit", "0"], ["search", ""], ["search", "AND OR ((("],
    ["search", "x", "--limit", "-1"], ["search", "x", "--limit", "99999999999999999999"],
    ["recall", "--budget", "-5"], ["recall", "--budget", "999999999999999999999"], ["list", "--type", "nope"],
    ["resolve", "seed"], ["resolve", "nope"], ["review", "nope..main"], ["review", "HEAD~999..HEAD"], ["sync"],
    ["status", "--fetch"], ["export", "-o", "/nonexistent/dir/x.jsonl"], ["model", "use", "nope"],
    ["project", "show", "nope"], ["instincts", "show", "nope"], ["capture", "/nonexistent"], ["hook", "nope"],
    ["import", "/nonexistent"],
]
TOMLS = ['[recall]\nbudget = "abc"', "[recall]\ntop_k = 1e400", "[sync]\ntimeout = -1", '[sync]\nmode = "weird"',
         '[ranking]\nw_sim = "x"', "garbage = = =", "recall = 5", "[embedding]\nmodel = 5", 'author = "bad"']


def main() -> int:
    root = Path(tempfile.mkdtemp(prefix="gitmem-bad-input-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "GITMEM_"))}
    env.update(HOME=str(root), GIT_CONFIG_NOSYSTEM="1", GITMEM_WARM="0", GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@x",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@x")
    repo = root / "mem"

    def gitmem(*args: str, target: Path = repo) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([GITMEM, "--repo", str(target), *args], capture_output=True, env=env, timeout=300)

    gitmem("init", str(repo))
    gitmem("remember", "seed memory about postgres", "--id", "seed")
    cases: list[tuple[str, list[str], Path]] = []
    for name, record in {**RECORDS, **RAW_LINES}.items():
        path = root / f"{name}.jsonl"
        path.write_bytes((record if isinstance(record, str) else json.dumps(record)).encode("utf-8", "surrogatepass")
                         if name != "latin1" else str(record).encode("latin-1"))
        cases.append((f"import {name}", ["import", str(path)], repo))
    cases += [(" ".join(c), c, repo) for c in COMMANDS]
    failed = 0
    for name, args, target in cases:
        failed += report(name, gitmem(*args, target=target))
    original = (repo / "gitmem.toml").read_text()
    for toml in TOMLS:
        (repo / "gitmem.toml").write_text(original + "\n" + toml + "\n")
        for args in (["list"], ["remember", "x y z"], ["search", "postgres"], ["doctor"]):
            failed += report(f"{toml!r} {' '.join(args)}", gitmem(*args))
    (repo / "gitmem.toml").write_text(original)
    for folder in (repo / ".git" / "objects").glob("[0-9a-f][0-9a-f]"):
        shutil.rmtree(folder)
    for args in (["remember", "x"], ["log"], ["list"], ["doctor"], ["sync"]):
        failed += report(f"damaged .git: {' '.join(args)}", gitmem(*args))
    shutil.rmtree(root, ignore_errors=True)
    print(f"{len(cases) + 4 * len(TOMLS) + 5} cases, {failed} failed")
    return 1 if failed else 0


def report(name: str, result: subprocess.CompletedProcess[bytes]) -> int:
    err = result.stderr.decode("utf-8", "replace").strip()
    last = err.splitlines()[-1][:160] if err else ""
    problem = ""
    if "Traceback" in err or "internal error" in err:
        problem = "CRASH"
    elif result.returncode not in (0, 1, 2):
        problem = f"EXIT {result.returncode}"
    elif result.returncode and not err and not result.stdout.strip():  # doctor reports on stdout
        problem = "SILENT"
    print(f"{problem or 'ok':6} exit {result.returncode}  {name[:60]:60}  {last}")
    return 1 if problem else 0


if __name__ == "__main__":
    sys.exit(main())
