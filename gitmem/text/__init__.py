"""Text measures shared by every layer: token counts for budgets (tokens).

May import: gitmem.errors only (tokenizers lazily)."""
