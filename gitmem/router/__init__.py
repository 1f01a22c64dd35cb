"""The remember router and the session notepad: where a finding a user or an agent wants kept should go.

:mod:`.rules` decides by rules (English and Chinese) among a durable memory, a project-memory note, a wiki page,
a standing directive and the notepad; :mod:`.route` checks the decision against what is stored (duplicates,
conflicts), asks the optional model command when configured, and stores; :mod:`.notepad` is the machine-local
scratch pad (``local/notepad/``) whose priority notes go into the next prompts.

The router sits above the surfaces it writes to (memories, :mod:`gitmem.projects`, :mod:`gitmem.wiki`, the
directives of :mod:`gitmem.briefing.directives`); :mod:`.notepad` alone is low enough for the prompt hook to import.
"""
