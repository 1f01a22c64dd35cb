"""Files on disk: atomic writes, no-symlink reads, crash points (atomic) and cross-process locks (locks).

May import: gitmem.errors only."""
