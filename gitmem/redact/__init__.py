"""Secret redaction before anything is committed: the engine (engine) and the built-in secret kinds (rules).

May import: gitmem.errors, gitmem.config, gitmem.files."""
