"""The architecture, enforced: dependencies point one way, only the repo layer touches git, and the
per-tool-call path stays free of heavy imports."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "gitmem"

# Lower layers never import higher ones. Entry points (rank 9) may import anything.
LAYERS: dict[str, int] = {
    "errors": 0, "locks": 0, "fileio": 0, "detectors": 0,
    "config": 1, "documents": 1, "redact": 1, "secretrules": 1, "gitstore": 1, "gitplumbing": 1,
    "embed": 1, "models": 1, "modelinstall": 1, "e5convert": 1, "tokens": 1, "timeparse": 1,
    "snapshot": 1, "vectorstore": 1,
    "layout": 2, "codebase": 2,
    "directives": 1, "observe": 2,
    "store": 3,
    "index": 4, "indexdoc": 4, "ranking": 4, "rerank": 4,
    "search": 1, "search.chunks": 1, "search.order": 1,
    "recall": 5,
    "api": 6,
    "hooks": 7, "hookcontext": 7, "hookserver": 7, "injection": 7, "claude_install": 7,
    "cli": 9, "cli_search": 9, "__init__": 9, "__main__": 9,
    "cli_hooks": 9, "hookmain": 9, "cli_review": 9, "cli_githooks": 9,
    "sync": 1, "remote": 1, "review": 2, "codegit": 1, "merge": 1, "extract": 1, "cli_sync": 9,
    "instincts": 5, "capture": 6, "semantic": 6, "evolve": 6, "lifecycle": 6, "cli_learn": 9,
    "projects": 4, "scan": 1, "stacks": 1, "toolnotes": 1, "cli_project": 9,
    "leaks": 1, "leaks.history": 1,
    "briefing": 4, "briefing.gate": 4, "briefing.essentials": 4, "briefing.conflicts": 1, "briefing.prompt": 4,
    "briefing.block": 4,
    "agents": 2, "agents.claude": 2, "agents.claude.toolcall": 2,
    "text": 0, "text.lazyre": 0,
    # subpackages: one key per module, dotted ("wiki.page"); a package's __init__ is the package name
    "wiki": 4, "wiki.page": 1, "wiki.merge": 1, "wiki.search": 4, "wiki.store": 4, "wiki.lint": 4,
    "wiki.lifecycle": 6, "cli_wiki": 9,
    "router": 7, "router.notepad": 2, "router.rules": 6, "router.route": 7, "cli_router": 9,
    "writer": 4, "writer.entities": 1, "writer.voice": 1, "writer.store": 4, "cli_writer": 9,
    "serve": 8, "serve.agents": 8, "serve.http": 8, "serve.mcp": 8, "serve.runner": 8, "serve.service": 8,
    "serve.ui": 8, "cli_serve": 9,
}
GIT_MODULES = {"gitstore", "gitplumbing", "remote", "sync", "codegit", "leaks.history"}
HEAVY = ("onnxruntime", "numpy", "tokenizers")
HEAVY_ALLOWED = {"embed", "models", "e5convert", "tokens"}
#: the packages of the ``serve`` extra: only the serve package imports them, so the core and the hooks work without
SERVE_PACKAGES = ("mcp", "fastapi", "starlette", "uvicorn", "jinja2", "markupsafe", "tomlkit", "pydantic")
SERVE_MODULES = {"serve", "cli_serve"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            subs = [f"{node.module}.{alias.name}" for alias in node.names]
            if node.module.startswith("gitmem.") and all(_is_module(sub) for sub in subs):
                names.update(subs)  # "from gitmem.wiki import page" imports wiki.page, not the package's API
                continue
            names.add(node.module)
            if node.module == "gitmem":
                names.update(subs)
    return names


def _is_module(name: str) -> bool:
    rel = Path(*name.split(".")[1:])
    return (PACKAGE / rel).with_suffix(".py").is_file() or (PACKAGE / rel / "__init__.py").is_file()


def _module_level_imports(path: Path) -> set[str]:
    """Imports that run when the module is imported (not inside functions, not under TYPE_CHECKING)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module)
            elif isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.unparse(node.test):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, (ast.Try, ast.With)):
                visit(node.body)

    visit(tree.body)
    return names


def _modules() -> list[Path]:
    """Every module of the package, subpackages included."""
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _key(path: Path) -> str:
    """``gitmem/wiki/page.py`` → ``wiki.page``; ``gitmem/wiki/__init__.py`` → ``wiki``; top level: the stem."""
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if len(parts) > 1 and parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _target(name: str) -> str | None:
    """The LAYERS key an import of ``gitmem.x[.y...]`` lands in (the longest known prefix)."""
    parts = name.split(".")[1:]
    while parts:
        if ".".join(parts) in LAYERS:
            return ".".join(parts)
        parts.pop()
    return None


def test_every_module_has_a_layer() -> None:
    missing = [_key(p) for p in _modules() if _key(p) not in LAYERS]
    assert not missing, f"add these modules to LAYERS: {missing}"


def test_the_walk_sees_subpackages() -> None:
    assert "wiki.store" in {_key(p) for p in _modules()}


def test_dependencies_point_down() -> None:
    wrong = []
    for path in _modules():
        rank = LAYERS.get(_key(path), 9)
        for name in _imports(path):
            target = _target(name) if name.startswith("gitmem.") else None
            if target is not None and LAYERS[target] > rank:
                wrong.append(f"{_key(path)} (layer {rank}) imports {target} (layer {LAYERS[target]})")
    assert not wrong, "\n".join(wrong)


def test_only_the_repo_layer_touches_git() -> None:
    offenders = [_key(p) for p in _modules() if _key(p) not in GIT_MODULES
                 and any(n == "dulwich" or n.startswith("dulwich.") for n in _imports(p))]
    assert not offenders


def test_heavy_imports_stay_in_the_embedding_layer() -> None:
    """numpy/onnxruntime/tokenizers load only when a module that needs them runs the code that needs them."""
    offenders = [(_key(p), n) for p in _modules() if _key(p) not in HEAVY_ALLOWED
                 for n in _module_level_imports(p) if n.split(".")[0] in HEAVY]
    assert not offenders


def test_only_the_serve_package_uses_the_serve_extra() -> None:
    """Core commands and hooks never import MCP, HTTP or template packages (they are an optional extra), and
    ``cli_serve`` imports them only inside the commands that serve."""
    offenders = [(str(p.relative_to(PACKAGE)), n) for p in _modules() if _key(p).split(".")[0] not in SERVE_MODULES
                 for n in _imports(p) if n.split(".")[0] in SERVE_PACKAGES]
    offenders += [("cli_serve.py", n) for n in _module_level_imports(PACKAGE / "cli_serve.py")
                  if n.split(".")[0] in SERVE_PACKAGES or n.startswith("gitmem.serve")]
    assert not offenders


def test_the_hook_path_never_loads_the_serve_extra(tmp_path: Path) -> None:
    code = ("import sys, os; from pathlib import Path; from gitmem.hookmain import run; "
            "[run(e, b'{}', env=dict(os.environ), cwd=Path.cwd(), home=Path.home()) for e in "
            "('session-start', 'user-prompt-submit', 'post-tool-use')]; "
            "print(','.join(sorted({m.split('.')[0] for m in sys.modules})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=tmp_path).stdout
    loaded = set(out.strip().split(","))
    assert "gitmem" in loaded and not loaded & set(SERVE_PACKAGES)


def test_importing_gitmem_is_cheap() -> None:
    code = "import sys, gitmem; print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in "\
           "('dulwich','onnxruntime','numpy','tantivy','frontmatter','yaml','click'))))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == ""
