"""Text helpers shared by the analysers: Unicode scripts, CJK ranges, token counts, regular expressions."""
