"""Claude Code: the hook events table (events), the hook process (entry), the per-tool-call fast path (toolcall),
the event handlers (handlers), the per-hook context (context), the client of a running gitmem serve (serverclient)
and the settings installer (settings).

The hook entry imports only the standard library at module level: the per-tool-call hook stays cheap.
May import: every library package (lazily from entry)."""
