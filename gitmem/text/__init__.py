"""Text facts every layer shares: Unicode script ranges (scripts: CJK, kana, Hangul) and token counts for budgets
(tokens).

May import: gitmem.errors only (tokenizers lazily)."""
