"""Text facts every layer shares: Unicode script ranges (scripts: CJK, kana, Hangul), token counts for budgets
(tokens), regular expressions compiled on first use (lazyre) and blake2b without OpenSSL (digest).

May import: gitmem.errors only (tokenizers lazily)."""
