"""Every command family registers: the commands ``gitmem.cli.main`` builds are the ones docs/cli.md documents
(a family module missing from main's imports, or failing to decorate the group, fails here)."""

from __future__ import annotations

import re

import click

from tests.helpers import ROOT


def _paths(command: click.Command, prefix: str) -> set[str]:
    paths = {prefix}
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            if not sub.hidden:
                paths |= _paths(sub, f"{prefix} {name}")
    return paths


def test_every_documented_command_registers() -> None:
    from gitmem.cli.main import cli

    documented = set(re.findall(r"^## `(gitmem[^`]*)`$", (ROOT / "docs" / "cli.md").read_text(encoding="utf-8"),
                                flags=re.M))
    registered = _paths(cli, "gitmem")
    assert len(documented) > 40
    assert registered == documented


def test_the_families_do_not_import_main() -> None:
    """No import circle: the family modules decorate the group of ``gitmem.cli.app``; only main gathers them."""
    offenders = [p.name for p in (ROOT / "gitmem" / "cli").glob("*.py")
                 if p.name != "main.py" and "gitmem.cli.main" in p.read_text(encoding="utf-8")]
    assert not offenders
