"""Reading what a project is built with from its manifests (read, never run)."""

from __future__ import annotations

import json
from pathlib import Path

from gitmem.projects.manifests import peek, read


def _write(root: Path, files: dict[str, str]) -> list[str]:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return sorted(files)


def test_a_node_and_python_monorepo(tmp_path: Path) -> None:
    files = _write(tmp_path, {
        "package.json": json.dumps({"workspaces": ["web"], "scripts": {"test": "vitest run", "lint": "eslint ."}}),
        "web/package.json": json.dumps({"dependencies": {"react": "18", "next": "14"}}),
        "pnpm-lock.yaml": "",
        "pyproject.toml": '[project]\nname = "api"\ndependencies = ["fastapi>=0.1", "sqlalchemy"]\n',
    })
    stack = read(tmp_path, files)
    assert {"react", "next", "fastapi", "sqlalchemy"} <= {name.split(" (")[0] for name in stack.frameworks}
    assert any(s.startswith("javascript / node (pnpm") for s in stack.stack)
    assert any(s.startswith("python") for s in stack.stack)
    assert ("test", "pnpm test", "package.json scripts") in stack.commands  # run the way the lockfile says
    assert stack.structure == ["monorepo: pnpm workspaces in package.json (web)"]


def test_broken_and_deep_manifests_are_skipped(tmp_path: Path) -> None:
    files = _write(tmp_path, {
        "package.json": "{ not json",
        "pyproject.toml": "[broken",
        "a/b/c/d/package.json": json.dumps({"dependencies": {"vue": "3"}}),
    })
    stack = read(tmp_path, files)
    assert not stack.frameworks and not stack.commands


def test_peek_reads_the_head_of_a_file_as_text(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_bytes(b"abc\xff" * 10)
    assert peek(tmp_path, "big.txt", limit=4) == "abc\ufffd"
    assert peek(tmp_path, "missing.txt") == ""
