"""Claude Code: the hook entry, the handlers and the hook events."""
