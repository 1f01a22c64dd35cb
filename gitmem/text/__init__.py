"""Text facts every layer shares: Unicode script ranges (CJK, kana, Hangul); imports nothing of gitmem."""
