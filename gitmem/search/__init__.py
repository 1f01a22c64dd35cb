"""Search: the index, its scoring and analysis, chunking of long texts, time expressions, the second stage."""
