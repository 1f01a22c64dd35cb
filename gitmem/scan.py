"""Scanning a code project: what an agent should know about it at a glance, read from its files.

A scan never runs the project's code. It reads the tech stack from manifests and lockfiles, the frameworks named in
the manifests, the build/test/lint/dev commands (package.json scripts, pyproject tools, Makefile/justfile targets,
cargo, go, …), naming and test conventions from a sample of at most 200 files, the monorepo/workspace layout and a
map of the top-level directories. The walk is bounded (files, depth, time) and skips dependency and build folders.
:mod:`gitmem.projects` writes the result into the project memory file.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
_NODE_FRAMEWORKS = {
    "react": "react", "next": "next", "vue": "vue", "nuxt": "nuxt", "svelte": "svelte", "@sveltejs/kit": "sveltekit",
    "@angular/core": "angular", "express": "express", "fastify": "fastify", "koa": "koa", "@nestjs/core": "nestjs",
    "@remix-run/react": "remix", "astro": "astro", "electron": "electron", "vite": "vite", "jest": "jest",
    "vitest": "vitest", "mocha": "mocha", "@playwright/test": "playwright", "cypress": "cypress",
    "prisma": "prisma", "typeorm": "typeorm", "tailwindcss": "tailwind", "hono": "hono", "solid-js": "solid",
}
_PY_FRAMEWORKS = {
    "django": "django", "flask": "flask", "fastapi": "fastapi", "starlette": "starlette", "pytest": "pytest",
    "sqlalchemy": "sqlalchemy", "pydantic": "pydantic", "click": "click", "typer": "typer", "celery": "celery",
    "aiohttp": "aiohttp", "tornado": "tornado", "streamlit": "streamlit", "torch": "pytorch",
    "tensorflow": "tensorflow", "pandas": "pandas", "numpy": "numpy", "scrapy": "scrapy", "hypothesis": "hypothesis",
}
_RUST_FRAMEWORKS = {"actix-web": "actix-web", "axum": "axum", "rocket": "rocket", "tokio": "tokio", "warp": "warp",
                    "serde": "serde", "clap": "clap", "bevy": "bevy", "tauri": "tauri", "diesel": "diesel",
                    "sqlx": "sqlx"}
_GO_FRAMEWORKS = {"github.com/gin-gonic/gin": "gin", "github.com/labstack/echo": "echo",
                  "github.com/gofiber/fiber": "fiber", "github.com/gorilla/mux": "gorilla/mux",
                  "github.com/spf13/cobra": "cobra", "github.com/go-chi/chi": "chi", "gorm.io/gorm": "gorm"}
_RUBY_FRAMEWORKS = {"rails": "rails", "sinatra": "sinatra", "rspec": "rspec", "hanami": "hanami"}
_JVM_FRAMEWORKS = {"spring-boot": "spring-boot", "org.springframework": "spring", "quarkus": "quarkus",
                   "micronaut": "micronaut", "junit": "junit", "ktor": "ktor"}
_PHP_FRAMEWORKS = {"laravel/framework": "laravel", "symfony/": "symfony", "phpunit/phpunit": "phpunit"}
_TASKS = ("build", "test", "lint", "typecheck", "format", "fmt", "check", "dev", "start", "serve", "run", "e2e")



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


def peek(root: Path, rel: str, limit: int = 256 * 1024) -> str:
    """The first ``limit`` bytes of ``root/rel`` as text ("" when it cannot be read)."""
    try:
        with (root / rel).open("rb") as fh:
            return fh.read(limit).decode("utf-8", "replace")
    except OSError:
        return ""


def _toml(root: Path, rel: str) -> dict[str, Any]:
    import tomllib

    try:
        data = tomllib.loads(peek(root, rel))
    except (tomllib.TOMLDecodeError, ValueError):
        return {}
    return data


def _json(root: Path, rel: str) -> dict[str, Any]:
    try:
        data = json.loads(peek(root, rel))
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


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


def _add(items: list[str], value: str) -> None:
    if value not in items:
        items.append(value)


def scan(root: Path, *, budget: float = SCAN_BUDGET) -> Scan:
    """Scan the code project at ``root``: read manifests and sample file names, run nothing."""
    started = time.monotonic()
    found = walk(root, budget=budget)
    result = Scan(root=root, files=len(found.files), truncated=found.truncated)
    files = found.files
    names = set(files)
    manifests: dict[str, list[str]] = {}
    for rel in files:
        if rel.count("/") <= 3:
            manifests.setdefault(rel.rsplit("/", 1)[-1], []).append(rel)
    _node(root, names, manifests, result)
    _python(root, names, manifests, result)
    _rust(root, names, manifests, result)
    _go(root, names, manifests, result)
    _others(root, names, manifests, result)
    _task_runners(root, names, result)
    _conventions(files, result)
    _directory_map(root, files, result)
    if found.truncated:
        result.structure.append(f"(scan stopped after {len(files)} files)")
    result.seconds = time.monotonic() - started
    return result


def _cmd(result: Scan, task: str, command: str, source: str) -> None:
    if not any(c == command for _, c, _ in result.commands):
        result.commands.append((task, command, source))


def _node(root: Path, names: set[str], manifests: dict[str, list[str]], result: Scan) -> None:
    if "package.json" not in names and "package.json" not in manifests:
        return
    top = _json(root, "package.json") if "package.json" in names else {}
    pm = "npm"
    for lock, manager in (("pnpm-lock.yaml", "pnpm"), ("yarn.lock", "yarn"), ("bun.lockb", "bun"),
                          ("bun.lock", "bun"), ("package-lock.json", "npm")):
        if lock in names:
            pm, source = manager, lock
            break
    else:
        declared = str(top.get("packageManager", ""))
        pm = declared.split("@")[0] if declared.split("@")[0] in ("pnpm", "yarn", "npm", "bun") else "npm"
        source = "package.json"
    language = "typescript" if "tsconfig.json" in names or any(
        n.endswith("tsconfig.json") for n in manifests.get("tsconfig.json", [])) else "javascript"
    _add(result.stack, f"{language} / node ({pm}; {source})")
    deps: set[str] = set()
    for rel in manifests.get("package.json", []):
        data = top if rel == "package.json" else _json(root, rel)
        for key in ("dependencies", "devDependencies", "peerDependencies"):
            value = data.get(key)
            if isinstance(value, dict):
                deps.update(value)
    for dep, framework in _NODE_FRAMEWORKS.items():
        if dep in deps:
            _add(result.frameworks, f"{framework} (package.json)")
    scripts = top.get("scripts")
    if isinstance(scripts, dict):
        for name in scripts:
            task = name.split(":")[0]
            if task in _TASKS or name in _TASKS:
                run = f"{pm} test" if name == "test" else (f"{pm} {name}" if pm in ("yarn", "pnpm", "bun")
                                                           else f"npm run {name}")
                _cmd(result, task if task != "start" else "dev", run, "package.json scripts")
    workspaces = top.get("workspaces")
    if isinstance(workspaces, dict):
        workspaces = workspaces.get("packages")
    if isinstance(workspaces, list) and workspaces:
        result.structure.append(f"monorepo: {pm} workspaces in package.json ({', '.join(map(str, workspaces[:6]))})")
    if "pnpm-workspace.yaml" in names:
        globs = re.findall(r"^\s*-\s*['\"]?([^'\"\n#]+)", peek(root, "pnpm-workspace.yaml"), re.M)
        result.structure.append(f"monorepo: pnpm-workspace.yaml ({', '.join(g.strip() for g in globs[:6])})")
    for tool in ("turbo.json", "nx.json", "lerna.json"):
        if tool in names:
            result.structure.append(f"monorepo tool: {tool.split('.')[0]} ({tool})")


def _py_deps(data: dict[str, Any]) -> set[str]:
    deps: list[Any] = []
    project = data.get("project", {})
    if isinstance(project, dict):
        deps += project.get("dependencies", []) or []
        for extra in (project.get("optional-dependencies") or {}).values():
            deps += extra
    for group in (data.get("dependency-groups") or {}).values():
        deps += group
    poetry = data.get("tool", {}).get("poetry", {}) if isinstance(data.get("tool"), dict) else {}
    if isinstance(poetry, dict):
        deps += list(poetry.get("dependencies", {}) or {})
        deps += list(poetry.get("dev-dependencies", {}) or {})
        for group in (poetry.get("group") or {}).values():
            if isinstance(group, dict):
                deps += list(group.get("dependencies", {}) or {})
    return {re.split(r"[\s\[<>=!~;(]", str(d).strip().lower(), maxsplit=1)[0] for d in deps if isinstance(d, str)}


def _python(root: Path, names: set[str], manifests: dict[str, list[str]], result: Scan) -> None:
    markers = ("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", "Pipfile")
    if not any(m in names for m in markers) and "pyproject.toml" not in manifests:
        return
    data = _toml(root, "pyproject.toml") if "pyproject.toml" in names else {}
    tool = data.get("tool", {}) if isinstance(data.get("tool"), dict) else {}
    if "uv.lock" in names or "uv" in tool:
        manager, run = "uv", "uv run "
    elif "poetry.lock" in names or "poetry" in tool:
        manager, run = "poetry", "poetry run "
    elif "pdm.lock" in names or "pdm" in tool:
        manager, run = "pdm", "pdm run "
    elif "Pipfile" in names:
        manager, run = "pipenv", "pipenv run "
    else:
        manager, run = "pip", ""
    source = next((m for m in ("uv.lock", "poetry.lock", "pdm.lock", "Pipfile", *markers) if m in names),
                  "pyproject.toml")
    _add(result.stack, f"python ({manager}; {source})")
    deps = _py_deps(data)
    for rel in sorted(n for n in names if n.startswith("requirements")):
        if re.fullmatch(r"requirements[\w.-]*\.txt", rel) or re.fullmatch(r"requirements/[\w.-]+\.txt", rel):
            deps.update(re.split(r"[\s\[<>=!~;]", line.strip().lower(), maxsplit=1)[0]
                        for line in peek(root, rel).splitlines() if line.strip() and not line.startswith(("#", "-")))
    for dep, framework in _PY_FRAMEWORKS.items():
        if dep in deps:
            _add(result.frameworks, f"{framework} (python dependencies)")
    if "manage.py" in names:
        _add(result.frameworks, "django (manage.py)")
        _cmd(result, "dev", f"{run}python manage.py runserver", "manage.py")
    has_tests = any(n.startswith(("tests/", "test/")) for n in names)
    if "pytest" in tool or "pytest" in deps or "pytest.ini" in names or "conftest.py" in names or has_tests:
        where = "pyproject [tool.pytest]" if "pytest" in tool else ("pytest.ini" if "pytest.ini" in names
                                                                     else "tests/")
        _cmd(result, "test", f"{run}pytest", where)
    if "ruff" in tool or "ruff.toml" in names or ".ruff.toml" in names:
        _cmd(result, "lint", f"{run}ruff check .", "pyproject [tool.ruff]" if "ruff" in tool else "ruff.toml")
    if "mypy" in tool or "mypy.ini" in names:
        _cmd(result, "typecheck", f"{run}mypy", "pyproject [tool.mypy]" if "mypy" in tool else "mypy.ini")
    if "black" in tool:
        _cmd(result, "format", f"{run}black .", "pyproject [tool.black]")
    if "tox.ini" in names or "tox" in tool:
        _cmd(result, "test", "tox", "tox.ini")
    if "noxfile.py" in names:
        _cmd(result, "test", "nox", "noxfile.py")


def _rust(root: Path, names: set[str], manifests: dict[str, list[str]], result: Scan) -> None:
    if "Cargo.toml" not in names and "Cargo.toml" not in manifests:
        return
    _add(result.stack, "rust (cargo; Cargo.toml)")
    deps: set[str] = set()
    for rel in manifests.get("Cargo.toml", []):
        data = _toml(root, rel)
        for key in ("dependencies", "dev-dependencies"):
            if isinstance(data.get(key), dict):
                deps.update(data[key])
        workspace = data.get("workspace")
        if isinstance(workspace, dict):
            if isinstance(workspace.get("dependencies"), dict):
                deps.update(workspace["dependencies"])
            members = workspace.get("members") or []
            if rel == "Cargo.toml" and members:
                result.structure.append(f"monorepo: Cargo workspace ({', '.join(map(str, members[:6]))})")
    for dep, framework in _RUST_FRAMEWORKS.items():
        if dep in deps:
            _add(result.frameworks, f"{framework} (Cargo.toml)")
    ws = " --workspace" if any(s.startswith("monorepo: Cargo") for s in result.structure) else ""
    _cmd(result, "build", f"cargo build{ws}", "Cargo.toml")
    _cmd(result, "test", f"cargo test{ws}", "Cargo.toml")
    _cmd(result, "lint", f"cargo clippy{ws}", "Cargo.toml")
    _cmd(result, "format", "cargo fmt", "Cargo.toml")


def _go(root: Path, names: set[str], manifests: dict[str, list[str]], result: Scan) -> None:
    if "go.mod" not in names and "go.mod" not in manifests and "go.work" not in names:
        return
    text = "\n".join(peek(root, rel) for rel in manifests.get("go.mod", []))
    module = re.search(r"^module\s+(\S+)", text, re.M)
    version = re.search(r"^go\s+(\S+)", text, re.M)
    _add(result.stack, f"go{' ' + version.group(1) if version else ''} (go modules; "
                       f"{'module ' + module.group(1) if module else 'go.mod'})")
    for dep, framework in _GO_FRAMEWORKS.items():
        if dep in text:
            _add(result.frameworks, f"{framework} (go.mod)")
    if "go.work" in names:
        uses = re.findall(r"^\s*(?:use\s+)?(\./[^\s)]+|\.)\s*$", peek(root, "go.work"), re.M)
        result.structure.append(f"monorepo: go.work ({', '.join(uses[:6])})")
    _cmd(result, "build", "go build ./...", "go.mod")
    _cmd(result, "test", "go test ./...", "go.mod")
    _cmd(result, "lint", "go vet ./...", "go.mod")
    if ".golangci.yml" in names or ".golangci.yaml" in names:
        _cmd(result, "lint", "golangci-lint run", ".golangci.yml")


def _others(root: Path, names: set[str], manifests: dict[str, list[str]], result: Scan) -> None:
    if "Gemfile" in names:
        _add(result.stack, f"ruby (bundler; {'Gemfile.lock' if 'Gemfile.lock' in names else 'Gemfile'})")
        gems = set(re.findall(r"""^\s*gem\s+['"]([\w-]+)""", peek(root, "Gemfile"), re.M))
        for gem, framework in _RUBY_FRAMEWORKS.items():
            if gem in gems:
                _add(result.frameworks, f"{framework} (Gemfile)")
        test = "bundle exec rspec" if "rspec" in gems or any(n.startswith("spec/") for n in names) else \
            "bundle exec rake test"
        _cmd(result, "test", test, "Gemfile")
        if "rails" in gems:
            _cmd(result, "dev", "bin/rails server", "Gemfile")
    jvm_text = ""
    if "pom.xml" in names:
        _add(result.stack, "java (maven; pom.xml)")
        jvm_text += peek(root, "pom.xml")
        mvn = "./mvnw" if "mvnw" in names else "mvn"
        _cmd(result, "build", f"{mvn} package", "pom.xml")
        _cmd(result, "test", f"{mvn} test", "pom.xml")
    gradle = next((g for g in ("build.gradle.kts", "build.gradle") if g in names), "")
    if gradle:
        _add(result.stack, f"{'kotlin' if gradle.endswith('kts') else 'java'} (gradle; {gradle})")
        jvm_text += peek(root, gradle) + peek(root, "settings.gradle") + peek(root, "settings.gradle.kts")
        gw = "./gradlew" if "gradlew" in names else "gradle"
        _cmd(result, "build", f"{gw} build", gradle)
        _cmd(result, "test", f"{gw} test", gradle)
    for dep, framework in _JVM_FRAMEWORKS.items():
        if dep in jvm_text:
            _add(result.frameworks, f"{framework} ({'pom.xml' if 'pom.xml' in names else gradle})")
    if "composer.json" in names:
        _add(result.stack, "php (composer; composer.json)")
        data = _json(root, "composer.json")
        deps = " ".join(list(data.get("require", {}) or {}) + list(data.get("require-dev", {}) or {}))
        for dep, framework in _PHP_FRAMEWORKS.items():
            if dep in deps:
                _add(result.frameworks, f"{framework} (composer.json)")
    if "mix.exs" in names:
        _add(result.stack, "elixir (mix; mix.exs)")
        _cmd(result, "test", "mix test", "mix.exs")
    if "deno.json" in names or "deno.jsonc" in names:
        _add(result.stack, "deno (deno.json)")
    if "CMakeLists.txt" in names:
        _add(result.stack, "c/c++ (cmake; CMakeLists.txt)")
    if any(n.endswith((".csproj", ".sln")) and "/" not in n for n in names):
        _add(result.stack, "dotnet (.csproj/.sln)")
        _cmd(result, "build", "dotnet build", ".csproj")
        _cmd(result, "test", "dotnet test", ".csproj")
    for name in ("Dockerfile", "docker-compose.yml", "docker-compose.yaml", "compose.yaml", "compose.yml"):
        if name in names:
            _add(result.stack, f"docker ({name})")
            break


def _task_runners(root: Path, names: set[str], result: Scan) -> None:
    """Makefile and justfile targets with task-like names; they go first (the project's own entry points)."""
    found: list[tuple[str, str, str]] = []
    for makefile in ("Makefile", "makefile", "GNUmakefile"):
        if makefile in names:
            targets = re.findall(r"^([A-Za-z][\w.-]*)\s*:(?!=)", peek(root, makefile), re.M)
            found += [(_task_of(t), f"make {t}", makefile) for t in dict.fromkeys(targets) if _task_of(t)]
            break
    for justfile in ("justfile", "Justfile", ".justfile"):
        if justfile in names:
            recipes = re.findall(r"^@?([A-Za-z][\w-]*)(?:\s+[^:=\n]*)?:(?!=)", peek(root, justfile), re.M)
            found += [(_task_of(t), f"just {t}", justfile) for t in dict.fromkeys(recipes) if _task_of(t)]
            break
    for task, command, source in reversed(found):
        if not any(c == command for _, c, _ in result.commands):
            result.commands.insert(0, (task, command, source))


def _task_of(target: str) -> str:
    word = re.split(r"[-_.:]", target.lower())[0]
    aliases = {"tests": "test", "fmt": "format", "serve": "dev", "start": "dev", "run": "dev", "typecheck": "typecheck",
               "check": "lint", "all": "build", "install": "setup", "setup": "setup", "e2e": "test"}
    if word in _TASKS or word in aliases:
        return aliases.get(word, word)
    return ""


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
