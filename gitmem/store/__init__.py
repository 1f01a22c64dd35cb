"""The memory repository: its folder, settings and git store (base), the memory document and its fields
(document), the wiki page format (wikipage), the repository of memories with remember/get/list/forget/restore/
log/import (memories), its layout on disk (layout), decay and archiving (lifecycle) and machine-local state never
committed: observations, sessions, usage (local).

May import: the foundation (errors, config, files, text), gitmem.redact, gitmem.git."""
