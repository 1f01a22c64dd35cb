"""The memory repository: its folder, settings and git store (base), the memory record, its fields and vocabulary
(memory: loaded by the prompt hook, so cheap to import), the memory file's format, input checks and file names
(document), the wiki page format (wikipage), the repository of memories with remember/get/list/forget/restore/
log/import (memories), its layout on disk (layout), decay and archiving (lifecycle) and machine-local state never
committed: observations, sessions, usage (local).

May import: the foundation (errors, config, files, text), gitmem.redact, gitmem.git."""
