"""Claude Code: the hook events, their entry and handlers, and the settings installer."""
