"""Write docs/cli.md from the commands' own --help texts (tests/test_docs.py fails when it is stale).

    python scripts/cli_docs.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

DOC = Path(__file__).resolve().parents[1] / "docs" / "cli.md"


def _context(command: click.Command, name: str, parent: click.Context | None = None) -> click.Context:
    """The context ``--help`` gets, with the command's own settings (help_option_names: ``-h, --help``)."""
    return click.Context(command, info_name=name, parent=parent,
                         **{**command.context_settings, "terminal_width": 100, "max_content_width": 100})


def _walk(command: click.Command, ctx: click.Context, path: list[str]) -> list[tuple[str, str]]:
    pages = [(" ".join(path), command.get_help(ctx))]
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is None or sub.hidden:
                continue
            pages.extend(_walk(sub, _context(sub, name, ctx), [*path, name]))
    return pages


def render() -> str:
    from gitmem.cli.main import cli

    root = cli
    ctx = _context(root, "gitmem")
    parts = ["# Command reference", "", "Generated from `--help` by `python scripts/cli_docs.py`; do not edit by hand.",
             ""]
    for title, text in _walk(root, ctx, ["gitmem"]):
        parts += [f"## `{title}`", "", "```", text.rstrip(), "```", ""]
    return "\n".join(parts)


if __name__ == "__main__":
    DOC.write_text(render(), encoding="utf-8")
    sys.stdout.write(f"wrote {DOC}\n")
