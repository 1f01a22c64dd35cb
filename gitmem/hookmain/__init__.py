"""The hook entry's module path before the subpackages, kept so that settings files written by older versions
(``python -m`` with this package) still run: ``__main__`` hands over to :mod:`gitmem.agents.claude.entry`.

A package rather than a module, so that git sees the old module's move to ``gitmem/agents/claude/entry.py``.
May import: gitmem.agents.claude.entry only."""
