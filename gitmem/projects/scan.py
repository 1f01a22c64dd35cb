"""Scanning a code project: what an agent should know about it at a glance, read from its files.

A scan never runs the project's code. The walk is bounded (files, depth, time) and skips dependency and build
folders; over the files it found, :mod:`gitmem.projects.manifests` reads the tech stack, frameworks, build/test/lint/dev
commands
and monorepo/workspace layout from the manifests, and the scan adds naming and test conventions from a sample of at
most 200 files and a map of the top-level directories. :mod:`gitmem.projects` writes the result into the project
memory file.
"""

from __future__ import annotations

import os
import re
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitmem.projects import manifests as stacks

MAX_FILES = 20000
MAX_DEPTH = 8
SAMPLE_FILES = 200
SCAN_BUDGET = 1.5  # seconds of walking at most
SKIP_DIRS = frozenset({
    "node_modules", ".git", "venv", ".venv", "env", ".env", "dist", "build", "target", "__pycache__", ".tox",
    ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".next", ".nuxt", ".svelte-kit", ".turbo", "vendor",
    "coverage", ".gradle", ".idea", ".vscode", "out", "obj", "bin", "site-packages", ".cache", ".terraform",
    "bower_components", "Pods", "DerivedData", ".eggs", "htmlcov",
})
CODE_EXT = {
    ".py": "python", ".pyi": "python", ".ts": "typescript", ".tsx": "typescript", ".js": "javascript",
    ".jsx": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".vue": "vue", ".svelte": "svelte",
    ".rs": "rust", ".go": "go", ".rb": "ruby", ".java": "java", ".kt": "kotlin", ".scala": "scala",
    ".php": "php", ".cs": "csharp", ".c": "c", ".h": "c", ".cc": "c++", ".cpp": "c++", ".hpp": "c++",
    ".swift": "swift", ".ex": "elixir", ".exs": "elixir", ".dart": "dart", ".lua": "lua", ".sh": "shell",
}
DIR_PURPOSES: dict[str, str] = {
    "src": "source", "lib": "library code", "app": "application code", "apps": "workspace apps",
    "packages": "workspace packages", "crates": "workspace crates", "libs": "workspace libraries",
    "services": "services", "cmd": "Go entry points", "internal": "Go internal packages", "pkg": "Go packages",
    "tests": "tests", "test": "tests", "spec": "tests (specs)", "__tests__": "tests", "e2e": "end-to-end tests",
    "testdata": "test data", "fixtures": "test fixtures", "docs": "documentation", "doc": "documentation",
    "scripts": "scripts", "tools": "tooling", "bench": "benchmarks", "benchmarks": "benchmarks",
    "examples": "examples", "example": "examples", "config": "configuration", "configs": "configuration",
    "migrations": "database migrations", "db": "database", "public": "static assets", "static": "static assets",
    "assets": "assets", "hooks": "hooks", "deploy": "deployment", "infra": "infrastructure",
    "k8s": "Kubernetes manifests", "helm": "Helm charts", "terraform": "Terraform", "docker": "Docker files",
    ".github": "CI (GitHub)", "ci": "CI", "components": "UI components", "pages": "pages/routes",
    "routes": "routes", "api": "API", "models": "models", "views": "views", "controllers": "controllers",
    "templates": "templates", "locales": "translations", "i18n": "translations", "proto": "protobuf definitions",
    "include": "headers", "resources": "resources", "data": "data", "notebooks": "notebooks",
}


# -- the bounded walk -------------------------------------------------------------------------------------------
@dataclass
class Walk:
    """Relative POSIX paths of the files under a root (bounded), and whether the walk stopped early."""

    files: list[str] = field(default_factory=list)
    truncated: bool = False
    seconds: float = 0.0


def walk(root: Path, *, max_files: int = MAX_FILES, max_depth: int = MAX_DEPTH,
         budget: float = SCAN_BUDGET) -> Walk:
    """Breadth-first, skipping dependency/build/hidden folders and symlinked directories."""
    started = time.monotonic()
    result = Walk()
    queue: list[tuple[str, int]] = [("", 0)]
    while queue:
        rel, depth = queue.pop(0)
        try:
            with os.scandir(root / rel if rel else root) as entries:
                items = sorted(entries, key=lambda e: e.name)
        except OSError:
            continue
        for entry in items:
            path = f"{rel}/{entry.name}" if rel else entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name in SKIP_DIRS or entry.name.endswith(".egg-info") or (
                            entry.name.startswith(".") and entry.name != ".github"):
                        continue
                    if depth + 1 < max_depth:
                        queue.append((path, depth + 1))
                elif entry.is_file(follow_symlinks=False):
                    result.files.append(path)
            except OSError:
                continue
            if len(result.files) >= max_files:
                result.truncated = True
                queue.clear()
                break
        if time.monotonic() - started > budget:
            result.truncated = bool(queue) or result.truncated
            break
    result.seconds = time.monotonic() - started
    return result


# -- the scan -----------------------------------------------------------------------------------------------------
@dataclass
class Scan:
    """What a scan found; :meth:`sections` renders it as Markdown sections."""

    root: Path
    stack: list[str] = field(default_factory=list)
    frameworks: list[str] = field(default_factory=list)
    commands: list[tuple[str, str, str]] = field(default_factory=list)  # (task, command, where from)
    conventions: list[str] = field(default_factory=list)
    structure: list[str] = field(default_factory=list)
    files: int = 0
    truncated: bool = False
    seconds: float = 0.0

    def sections(self) -> dict[str, str]:
        cmds = [f"- {task}: `{cmd}` ({src})" for task, cmd, src in self.commands]
        return {
            "Tech stack": _bullets(self.stack),
            "Frameworks": _bullets(self.frameworks),
            "Commands": "\n".join(cmds) or "- (none found)",
            "Conventions": _bullets(self.conventions),
            "Structure": _bullets(self.structure),
        }

    def to_dict(self) -> dict[str, Any]:
        return {"root": str(self.root), "stack": self.stack, "frameworks": self.frameworks,
                "commands": [{"task": t, "command": c, "source": s} for t, c, s in self.commands],
                "conventions": self.conventions, "structure": self.structure, "files": self.files,
                "truncated": self.truncated, "seconds": round(self.seconds, 3)}


def _bullets(items: Iterable[str]) -> str:
    return "\n".join(f"- {item}" for item in items) or "- (none found)"


def scan(root: Path, *, budget: float = SCAN_BUDGET) -> Scan:
    """Scan the code project at ``root``: read manifests and sample file names, run nothing."""
    started = time.monotonic()
    found = walk(root, budget=budget)
    files = found.files
    built = stacks.read(root, files)
    result = Scan(root=root, stack=built.stack, frameworks=built.frameworks, commands=built.commands,
                  structure=built.structure, files=len(files), truncated=found.truncated)
    _conventions(files, result)
    _directory_map(root, files, result)
    if found.truncated:
        result.structure.append(f"(scan stopped after {len(files)} files)")
    result.seconds = time.monotonic() - started
    return result


def naming_style(stem: str) -> str:
    """snake, kebab, camel, pascal, or "" for a one-word lowercase name (says nothing)."""
    stem = stem.split(".")[0]
    if not stem or not stem[0].isalpha():
        return ""
    if "_" in stem and stem.lower() == stem:
        return "snake_case"
    if "-" in stem and stem.lower() == stem:
        return "kebab-case"
    if "_" in stem or "-" in stem:
        return "mixed"
    if stem[0].isupper() and any(c.islower() for c in stem):
        return "PascalCase"
    if stem[0].islower() and any(c.isupper() for c in stem):
        return "camelCase"
    return ""


_TEST_PATTERNS: tuple[tuple[str, str], ...] = (
    ("tests/test_*.py", r"(^|/)tests?/(.*/)?test_[^/]+\.py$"),
    ("test_*.py next to the code", r"(^|/)test_[^/]+\.py$"),
    ("*_test.py", r"_test\.py$"),
    ("*.test.ts/js", r"\.test\.[cm]?[jt]sx?$"),
    ("*.spec.ts/js", r"\.spec\.[cm]?[jt]sx?$"),
    ("__tests__/", r"(^|/)__tests__/"),
    ("*_test.go next to the code", r"_test\.go$"),
    ("tests/*.rs (integration tests)", r"(^|/)tests/[^/]+\.rs$"),
    ("spec/*_spec.rb", r"_spec\.rb$"),
    ("test/*_test.rb", r"(^|/)test/.*_test\.rb$"),
    ("src/test/ (JVM)", r"(^|/)src/test/"),
)


def _conventions(files: list[str], result: Scan) -> None:
    code = [f for f in files if os.path.splitext(f)[1] in CODE_EXT]
    step = max(1, len(code) // SAMPLE_FILES)
    sample = code[::step][:SAMPLE_FILES]
    by_language: dict[str, Counter[str]] = {}
    totals: Counter[str] = Counter()
    for rel in sample:
        name = rel.rsplit("/", 1)[-1]
        language = CODE_EXT[os.path.splitext(name)[1]]
        totals[language] += 1
        style = naming_style(name) if not name.startswith("__") else ""
        if style:
            by_language.setdefault(language, Counter())[style] += 1
    for language, _ in totals.most_common(3):
        styles = by_language.get(language)
        if not styles:
            continue
        style, count = styles.most_common(1)[0]
        share = round(100 * count / sum(styles.values()))
        result.conventions.append(f"{language} file names: {style} ({share}% of {sum(styles.values())} "
                                  f"multi-word names in a sample of {totals[language]})")
    claimed: set[str] = set()
    candidates = [f for f in files if "test" in f or "spec" in f]
    for label, pattern in _TEST_PATTERNS:
        hits = [f for f in candidates if re.search(pattern, f) and f not in claimed]
        if label.startswith("test_*.py next") or label == "tests/test_*.py":
            hits = [h for h in hits if h.endswith(".py")]
        if hits:
            claimed.update(hits)
            result.conventions.append(f"tests: {label} ({len(hits)} file{'s' if len(hits) != 1 else ''})")
    if "conftest.py" in {f.rsplit("/", 1)[-1] for f in files}:
        result.conventions.append("pytest fixtures in conftest.py")


def _directory_map(root: Path, files: list[str], result: Scan) -> None:
    counts: Counter[str] = Counter()
    langs: dict[str, Counter[str]] = {}
    manifests: dict[str, str] = {}
    for rel in files:
        if "/" not in rel:
            continue
        top, rest = rel.split("/", 1)
        counts[top] += 1
        ext = os.path.splitext(rel)[1]
        if ext in CODE_EXT:
            langs.setdefault(top, Counter())[CODE_EXT[ext]] += 1
        if rest in ("__init__.py", "package.json", "Cargo.toml", "go.mod"):
            manifests[top] = rest
    for top in sorted(counts, key=lambda t: (-counts[t], t))[:15]:
        purpose = DIR_PURPOSES.get(top.lower(), "")
        if not purpose:
            if manifests.get(top) == "__init__.py":
                purpose = "python package"
            elif top in manifests:
                purpose = f"package ({manifests[top]})"
            elif top in langs:
                purpose = f"{langs[top].most_common(1)[0][0]} code"
            else:
                purpose = "other files"
        result.structure.append(f"`{top}/`: {purpose} ({counts[top]} file{'s' if counts[top] != 1 else ''})")
