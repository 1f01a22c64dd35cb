"""Files on disk: atomic writes, no-symlink reads, crash points (atomic), cross-process locks (locks) and where the
user's settings file is (places).

May import: gitmem.errors only."""
