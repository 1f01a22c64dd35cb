"""Write docs/api.md, the Python API reference, from the code: the names ``gitmem`` exports (``gitmem.__all__``)
and the public methods of the classes among them, with their signatures and docstrings.

    python scripts/api_docs.py            # rewrite docs/api.md
    python scripts/api_docs.py --check    # exit 1 when docs/api.md is stale (tests/test_docs.py does the same)
"""

from __future__ import annotations

import inspect
import sys
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "api.md"


def _doc(obj: Any) -> str:
    return inspect.cleandoc(obj.__doc__ or "").strip()


def _signature(name: str, obj: Any) -> str:
    """``name(params) -> return`` with the annotations as written (they are strings: postponed evaluation)."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return name

    def plain(annotation: Any) -> Any:
        return annotation if annotation is inspect.Parameter.empty or not isinstance(annotation, str) \
            else _Written(annotation)

    params = [p.replace(annotation=plain(p.annotation)) for p in sig.parameters.values()
              if p.name not in ("self", "cls")]
    return f"{name}{sig.replace(parameters=params, return_annotation=plain(sig.return_annotation))}"


class _Written:
    """An annotation printed as its source text (no quotes)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _members(cls: type) -> list[tuple[str, Any]]:
    """Public methods and properties the class itself defines, in source order (inherited ones are documented
    with the base class)."""
    seen: dict[str, Any] = {}
    for klass in [cls]:
        for name, value in vars(klass).items():
            if name.startswith("_") or not (callable(value) or isinstance(value, property)):
                continue
            if isinstance(value, (staticmethod, classmethod)):
                value = value.__func__
            seen[name] = value
    return list(seen.items())


def _example(doc: str) -> str:
    """The indented example after ``::`` in the package docstring."""
    lines = inspect.cleandoc(doc).split("::", 1)[-1].splitlines()
    block: list[str] = []
    for line in lines[1:]:
        if line and not line.startswith(" "):
            break
        block.append(line)
    return textwrap.dedent("\n".join(block)).strip("\n")


def render() -> str:
    import gitmem

    parts = ["# Python API", "",
             "Generated from the code by `python scripts/api_docs.py`; do not edit by hand. The public names are "
             "those of `gitmem.__all__`; everything else is internal and may change.", "",
             "```python", _example(gitmem.__doc__ or ""), "```", ""]
    for name in sorted(gitmem.__all__, key=lambda n: (n.startswith("_"), n.lower())):
        obj = getattr(gitmem, name)
        if isinstance(obj, str):
            parts += [f"## `gitmem.{name}`", "", f"`{obj!r}`", ""]
            continue
        where = f"{obj.__module__}.{obj.__qualname__}" if hasattr(obj, "__qualname__") else obj.__module__
        if inspect.isclass(obj):
            parts += [f"## class `gitmem.{name}`", "", f"Defined in `{where}`.", ""]
            if _doc(obj):
                parts += [_doc(obj), ""]
            bases = [b for b in obj.__mro__[1:] if b.__module__.startswith("gitmem") and b.__name__ in gitmem.__all__]
            if bases:
                parts += [f"Also every method of `gitmem.{bases[0].__name__}`.", ""]
            for member, value in _members(obj):
                target = value.fget if isinstance(value, property) else value
                title = f"{name}.{member}" if isinstance(value, property) else _signature(f"{name}.{member}", target)
                parts += [f"### `{title}`", ""]
                if _doc(target):
                    parts += [_doc(target), ""]
        else:
            parts += [f"## `gitmem.{_signature(name, obj)}`", "", f"Defined in `{where}`.", ""]
            if _doc(obj):
                parts += [_doc(obj), ""]
    return "\n".join(parts).rstrip() + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if OUT.read_text(encoding="utf-8") != text:
            print("docs/api.md is stale: run python scripts/api_docs.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
