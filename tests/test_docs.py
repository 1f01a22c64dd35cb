"""The documentation stays current: the command reference is the commands' own --help, the Python API page is
the code's own signatures and docstrings."""

from __future__ import annotations

import runpy

from tests.helpers import ROOT


def test_cli_reference_matches_the_help_texts() -> None:
    render = runpy.run_path(str(ROOT / "scripts" / "cli_docs.py"))["render"]
    assert (ROOT / "docs" / "cli.md").read_text(encoding="utf-8") == render(), \
        "docs/cli.md is stale: run python scripts/cli_docs.py"


def test_api_reference_matches_the_code() -> None:
    render = runpy.run_path(str(ROOT / "scripts" / "api_docs.py"))["render"]
    assert (ROOT / "docs" / "api.md").read_text(encoding="utf-8") == render(), \
        "docs/api.md is stale: run python scripts/api_docs.py"


#: commands documented in docs/serve.md whose README lines land with the next README edit; the second assertion
#: fails as soon as the README names them, so this set cannot outlive its reason
README_PENDING: set[str] = set()


def test_readme_names_every_top_level_command() -> None:
    from gitmem.cli.main import cli

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    missing = [name for name, cmd in cli.commands.items() if not cmd.hidden and f"gitmem {name}" not in readme]
    assert not set(missing) - README_PENDING, f"README does not mention: {missing}"
    assert not README_PENDING - set(missing), "the README names these now: empty README_PENDING"
