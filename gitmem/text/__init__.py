"""Text facts every layer shares: Unicode script ranges (scripts: CJK, kana, Hangul), token counts for budgets
(tokens), and what the hook processes use instead of heavier standard modules: regular expressions compiled on
first use (lazyre), JSON without importing json (quickjson), frozen records without dataclasses (records), blake2b
without OpenSSL (digest), the directive rules that find standing instructions in prompts (directives), and a
count with its noun in the right number (counted).

May import: gitmem.errors only (tokenizers lazily)."""
