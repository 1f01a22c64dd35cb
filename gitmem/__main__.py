"""``python -m gitmem`` runs the CLI."""

from gitmem.cli.main import main

main()
