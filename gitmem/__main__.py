"""``python -m gitmem`` runs the CLI."""

from gitmem.cli import main

main()
