"""Sharing memories between machines: one sync round (round), the field-aware three-way merge of memories (merge)
and of wiki pages (wikimerge), the versions kept beside a file no merge could combine (sidecars), and review mode
through pull requests (review). Project pages merge with gitmem.projects.pagemerge.

May import: the foundation, gitmem.redact, gitmem.git, gitmem.store, gitmem.search, gitmem.projects."""
