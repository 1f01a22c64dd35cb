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
    "recall": 5,
    "api": 6,
    "hooks": 7, "hookcontext": 7, "injection": 7, "claude_install": 7,
    "cli": 9, "cli_search": 9, "__init__": 9, "__main__": 9,
    "cli_hooks": 9, "hookmain": 9, "cli_review": 9, "cli_githooks": 9,
    "sync": 1, "remote": 1, "codegit": 1, "merge": 1, "extract": 1, "cli_sync": 9,
    "instincts": 5, "capture": 6, "semantic": 6, "evolve": 6, "lifecycle": 6, "cli_learn": 9,
    "projects": 4, "scan": 1, "stacks": 1, "toolnotes": 1, "cli_project": 9,
    "briefing": 4, "briefing.gate": 4, "briefing.essentials": 4, "briefing.conflicts": 1, "briefing.prompt": 4,
    "briefing.block": 4,
}
GIT_MODULES = {"gitstore", "gitplumbing", "remote", "sync", "codegit"}
HEAVY = ("onnxruntime", "numpy", "tokenizers")
HEAVY_ALLOWED = {"embed", "models", "e5convert", "tokens"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            if node.module == "gitmem":
                names.update(f"gitmem.{alias.name}" for alias in node.names)
    return names


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
    return sorted(PACKAGE.rglob("*.py"))


def _name(path: Path) -> str:
    """``briefing/gate.py`` → ``briefing.gate``; a subpackage's ``__init__.py`` is the subpackage."""
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    if len(parts) > 1 and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _layer_key(imported: str) -> str:
    """The LAYERS key of an imported ``gitmem.x.y`` name: the longest dotted prefix that has a layer."""
    name = imported.removeprefix("gitmem.")
    while name not in LAYERS and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def test_every_module_has_a_layer() -> None:
    missing = [_name(p) for p in _modules() if _name(p) not in LAYERS]
    assert not missing, f"add these modules to LAYERS: {missing}"


def test_dependencies_point_down() -> None:
    wrong = []
    for path in _modules():
        module = _name(path)
        rank = LAYERS.get(module, 9)
        for name in _imports(path):
            if name.startswith("gitmem."):
                target = _layer_key(name)
                if target in LAYERS and LAYERS[target] > rank:
                    wrong.append(f"{module} (layer {rank}) imports {target} (layer {LAYERS[target]})")
    assert not wrong, "\n".join(wrong)


def test_only_the_repo_layer_touches_git() -> None:
    offenders = [_name(p) for p in _modules() if _name(p) not in GIT_MODULES
                 and any(n == "dulwich" or n.startswith("dulwich.") for n in _imports(p))]
    assert not offenders


def test_heavy_imports_stay_in_the_embedding_layer() -> None:
    """numpy/onnxruntime/tokenizers load only when a module that needs them runs the code that needs them."""
    offenders = [(_name(p), n) for p in _modules() if _name(p) not in HEAVY_ALLOWED
                 for n in _module_level_imports(p) if n.split(".")[0] in HEAVY]
    assert not offenders


def test_importing_gitmem_is_cheap() -> None:
    code = "import sys, gitmem; print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in "\
           "('dulwich','onnxruntime','numpy','tantivy','frontmatter','yaml','click'))))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == ""
