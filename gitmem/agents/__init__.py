"""Integrations with coding agents (one subpackage per agent).

May import: every library package; nothing imports it but gitmem.cli and gitmem.serve."""
