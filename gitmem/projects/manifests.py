"""What a project is built with and how it is run, read from its manifests.

The readers take the file list of a bounded walk (:func:`gitmem.projects.scan.walk`) and read, never run: the languages
and
package managers from manifests and lockfiles (package.json, pyproject.toml, Cargo.toml, go.mod, Gemfile, pom.xml,
gradle, composer.json, …), the frameworks named in their dependencies, the build/test/lint/dev commands
(package.json scripts, pyproject tools, cargo, go, Makefile/justfile targets, …) and the monorepo/workspace layout.
Manifests further than three folders down are not read. :func:`peek` (the head of a file as text) is the one way
they read a file. :func:`gitmem.projects.scan.scan` puts the result into its :class:`~gitmem.projects.scan.Scan`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
    except (ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


@dataclass
class Stack:
    """What the manifests say: stack, frameworks, commands (task, command, where from) and workspace layout."""

    stack: list[str] = field(default_factory=list)
    frameworks: list[str] = field(default_factory=list)
    commands: list[tuple[str, str, str]] = field(default_factory=list)
    structure: list[str] = field(default_factory=list)


def read(root: Path, files: list[str]) -> Stack:
    """Read the manifests among ``files`` (relative POSIX paths under ``root``, as a walk lists them)."""
    result = Stack()
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
    return result


def _add(items: list[str], value: str) -> None:
    if value not in items:
        items.append(value)


def _cmd(result: Stack, task: str, command: str, source: str) -> None:
    if not any(c == command for _, c, _ in result.commands):
        result.commands.append((task, command, source))


def _node(root: Path, names: set[str], manifests: dict[str, list[str]], result: Stack) -> None:
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


def _python(root: Path, names: set[str], manifests: dict[str, list[str]], result: Stack) -> None:
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


def _rust(root: Path, names: set[str], manifests: dict[str, list[str]], result: Stack) -> None:
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


def _go(root: Path, names: set[str], manifests: dict[str, list[str]], result: Stack) -> None:
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


def _others(root: Path, names: set[str], manifests: dict[str, list[str]], result: Stack) -> None:
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


def _task_runners(root: Path, names: set[str], result: Stack) -> None:
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
