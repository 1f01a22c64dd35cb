"""Sharing memories between machines: one sync round (round), the field-aware three-way merge of memories (merge)
and of wiki pages (wikimerge), and review mode through pull requests (review).

May import: the foundation, gitmem.redact, gitmem.git, gitmem.store, gitmem.search."""
