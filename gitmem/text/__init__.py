"""Text facts every layer shares: Unicode script ranges (scripts: CJK, kana, Hangul), token counts for budgets
(tokens) and regular expressions compiled on first use (lazyre).

May import: gitmem.errors only (tokenizers lazily)."""
