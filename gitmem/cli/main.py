"""The console-script entry point: imports every command family so each decorates :data:`gitmem.cli.app.cli`.

A family is listed in :data:`FAMILIES`; ``tests/cli/test_registration.py`` fails when a documented command does
not register. Only entry points read the environment; this one reads ``GITMEM_TEST_CRASH`` for the crash tests.
"""

from __future__ import annotations

import os

from gitmem.cli import (  # noqa: F401  (each module registers its commands on import)
    githooks,  # git-hooks install, git-hooks uninstall, extract
    hooks,  # hook, install claude, uninstall claude
    learn,  # instincts, evolve, capture, gc, compact, digest
    memory,  # init, config, remember, show, list, edit, forget, restore, move, log, import, export, doctor
    project,  # project scan, project show
    review,  # propose, review
    router,  # notepad show, add, clear; remember --auto
    search,  # search, recall, reindex, model
    serve,  # mcp, serve, install codex|gemini|opencode, --mcp
    sync,  # sync, status, resolve
    wiki,  # wiki ingest, query, lint, list, read, delete, log
    writer,  # writer character/relationship/scene/world, search, check-line
)
from gitmem.cli.app import cli

__all__ = ["cli", "main"]


def main() -> None:
    """Console-script entry point."""
    crash = os.environ.get("GITMEM_TEST_CRASH")
    if crash:  # test-only: die at a write step as a kill -9 would (tests/files/test_crash.py drives it)
        from gitmem.files.atomic import set_crash_point

        set_crash_point(crash)
    cli(prog_name="gitmem")
