"""The architecture, enforced: the import-linter contracts in ``pyproject.toml`` (package layers, who may import
dulwich, numpy, onnxruntime, tokenizers and the serve extra) hold, they cover every module, and the per-tool-call
path stays free of heavy imports."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

from tests.helpers import ROOT

PACKAGE = ROOT / "gitmem"
#: the packages of the ``serve`` extra: only gitmem.serve imports them, so the core and the hooks work without
SERVE_PACKAGES = ("mcp", "fastapi", "starlette", "uvicorn", "jinja2", "markupsafe", "tomlkit", "pydantic")
#: top-level modules each forbidden contract allows; every other top-level module must be in its source_modules
ALLOWED = {"dulwich": {"git"}, "onnx": {"embeddings"}, "numpy": {"embeddings", "search"}, "serve-extra": {"serve"}}


def _contracts() -> dict[str, dict[str, Any]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    return {c["id"]: c for c in config["contracts"]}


def _top_level() -> set[str]:
    """Every top-level module and package of gitmem (what a contract must cover)."""
    return {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"} | {
        p.parent.name for p in PACKAGE.glob("*/__init__.py")}


def _modules() -> list[Path]:
    """Every module of the package, subpackages included."""
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


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


def test_the_import_contracts_hold() -> None:
    """``lint-imports`` (import-linter) checks every import, inside functions too, of every module."""
    proc = subprocess.run([str(Path(sys.executable).with_name("lint-imports")), "--no-cache"], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout


def test_every_module_is_in_a_layer() -> None:
    """The layers contract names every top-level module (import-linter's ``exhaustive`` fails on a new package;
    this also fails when a layer names a module that no longer exists)."""
    layers = _contracts()["layers"]
    assert layers["exhaustive"] is True and layers["containers"] == ["gitmem"]
    named = {m.strip() for layer in layers["layers"] for m in layer.replace(":", "|").split("|")}
    assert named == _top_level()


def test_the_forbidden_contracts_cover_every_other_module() -> None:
    contracts = _contracts()
    assert set(ALLOWED) <= set(contracts)
    for cid, allowed in ALLOWED.items():
        sources = {m.removeprefix("gitmem.") for m in contracts[cid]["source_modules"]}
        assert sources == _top_level() - allowed, f"contract {cid}: list the new modules in source_modules"


def test_the_walk_sees_subpackages() -> None:
    keys = {".".join(p.relative_to(PACKAGE).with_suffix("").parts) for p in _modules()}
    assert {"search.index", "agents.claude.entry", "wiki.store"} <= keys and "git" in _top_level()


def test_search_imports_numpy_only_when_vectors_run() -> None:
    """numpy loads only when a module that needs it runs the code that needs it (BM25 search never loads it)."""
    offenders = [(str(p.relative_to(PACKAGE)), n) for p in _modules() if p.parent.name != "embeddings"
                 and p.name != "tokens.py" for n in _module_level_imports(p)
                 if n.split(".")[0] in ("numpy", "onnxruntime", "tokenizers")]
    assert not offenders


def test_cli_serve_imports_the_serve_package_inside_its_commands() -> None:
    """``gitmem --help`` and the core commands work without the serve extra installed."""
    offenders = [n for n in _module_level_imports(PACKAGE / "cli" / "serve.py")
                 if n.split(".")[0] in SERVE_PACKAGES or n.startswith("gitmem.serve")]
    assert not offenders


def test_the_hook_path_never_loads_the_serve_extra(tmp_path: Path) -> None:
    code = ("import sys, os; from pathlib import Path; from gitmem.agents.claude.entry import run; "
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
