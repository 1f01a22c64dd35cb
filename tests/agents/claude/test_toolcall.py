"""The per-tool-call hook's fast path: what each kind of call records and what it loads to do so.

No fake secret below is written out as a literal (see ``tests/redact/test_redact.py``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gitmem.store import hotpaths
from gitmem.store import local as observe
from tests.helpers import PROJECT, code_repo, hook, hook_env, payload

#: modules a tool call's hook needs only when its input holds something a redaction rule must check
NOT_FOR_ORDINARY_CALLS = {"re", "json", "enum", "pathlib", "functools", "collections", "heapq", "math", "typing",
                          "dataclasses", "threading", "contextlib", "gitmem.files.atomic", "gitmem.files.locks",
                          "gitmem.config", "gitmem.agents.claude.handlers"}


@pytest.fixture
def code(tmp_path: Path) -> Path:
    return code_repo(tmp_path, "Start")


@pytest.fixture
def env(repo_path: Path) -> dict[str, str]:
    return hook_env(repo_path)


def bash_call() -> dict[str, Any]:
    return {"tool_name": "Bash", "tool_input": {"command": "pytest -x tests/", "description": "Run the tests"},
            "tool_response": {"stdout": "3 passed in 0.2s", "stderr": "", "interrupted": False},
            "tool_use_id": "toolu_1"}


def edit_call(code: Path) -> dict[str, Any]:
    return {"tool_name": "Edit", "tool_input": {"file_path": str(code / "cart.py"), "old_string": "total = 0",
                                                "new_string": "total = sum(prices)"},
            "tool_response": {"filePath": str(code / "cart.py"), "success": True}, "tool_use_id": "toolu_2"}


def fast_hook(event: str, data: str, code: Path, env: dict[str, str]) -> set[str]:
    """Run the hook as ``gitmem-hook`` does, without site (an editable install's finder would load more); the
    modules it loaded beyond the interpreter's own."""
    script = (f"import sys; sys.argv = ['gitmem-hook', {event!r}]; before = set(sys.modules); "
              "from gitmem.agents.claude.entry import main; main(); "
              "print(','.join(set(sys.modules) - before), file=sys.stderr)")
    source = str(Path(observe.__file__).parents[2])
    proc = subprocess.run([sys.executable, "-S", "-c", script], capture_output=True, text=True, cwd=code, input=data,
                          env={**os.environ, **env, "PYTHONPATH": source}, check=True)
    return set(proc.stderr.strip().splitlines()[-1].split(","))


@pytest.mark.parametrize("kind", ["post-tool-use Bash", "pre-tool-use Bash", "post-tool-use Edit"])
def test_an_ordinary_call_loads_no_re_json_or_pathlib(repo_path: Path, code: Path, env: dict[str, str],
                                                      kind: str) -> None:
    """Each of the three calls, with nothing a redaction rule could match, is recorded on the fast path with
    only the standard library's start-up modules, and records what the general path records."""
    event, tool = kind.split()[0], bash_call() if "Bash" in kind else edit_call(code)
    phase = "pre" if event == "pre-tool-use" else "post"
    hook(event, payload("PostToolUse", code, **tool), env, cwd=code)  # the general path: caches the project
    loaded = fast_hook(event, payload("PostToolUse", code, session="s2", **tool), code, env)
    assert not loaded & NOT_FOR_ORDINARY_CALLS
    first, second = list(observe.read_observations(repo_path / "local"))
    assert second["session"] == "s2" and second["phase"] == first["phase"] == phase
    assert {k: v for k, v in first.items() if k not in ("session", "time")} == \
        {k: v for k, v in second.items() if k not in ("session", "time")}
    assert first["project"] == PROJECT and first["tool_use_id"] == tool["tool_use_id"]
    assert json.loads(first["input"]) == tool["tool_input"]
    assert ("output" in first) == (phase == "post")
    if "Edit" in kind:
        assert hotpaths.hot_paths(repo_path / "local", PROJECT) == [str(code / "cart.py")]
        assert (repo_path / "local" / "hotpaths" / f"{PROJECT}.jsonl").read_text().count("cart.py") == 2
    else:
        assert hotpaths.hot_paths(repo_path / "local", PROJECT) == []


def test_secrets_in_an_edit_are_redacted_in_the_log(repo_path: Path, code: Path, env: dict[str, str]) -> None:
    """A token and a password in the strings an Edit replaces never reach the observation log."""
    token = "ghp" + "_" + "aB3dE5fG7hJ9kL1m" * 2 + "nP4q"
    password = "Tr0ub4" + "dor&3x"
    tool = edit_call(code)
    tool["tool_input"]["old_string"] = f'GITHUB_TOKEN = "{token}"\nDB_PASSWORD = "{password}"\n'
    tool["tool_input"]["new_string"] = 'GITHUB_TOKEN = os.environ["GITHUB_TOKEN"]\n'
    tool["tool_response"] = {"filePath": str(code / "cart.py"), "oldString": tool["tool_input"]["old_string"]}
    hook("post-tool-use", payload("PostToolUse", code, **tool), env, cwd=code)  # the general path
    loaded = fast_hook("post-tool-use", payload("PostToolUse", code, session="s2", **tool), code, env)
    assert "re" in loaded  # this one has something to check
    log = (repo_path / "local" / "observations.jsonl").read_text()
    assert token not in log and password not in log
    for record in observe.read_observations(repo_path / "local"):
        assert "[REDACTED:github-token]" in record["input"] and "[REDACTED:password]" in record["input"]
        assert "[REDACTED:github-token]" in record["output"]
        assert 'os.environ[\\"GITHUB_TOKEN\\"]' in record["input"]  # a reference, not a secret: kept
