"""Code projects: their identity (identity), scans of a working tree (scan), manifests and stacks
(manifests; markers: whether a folder is a project's outside git), project memory (memory), its three-way merge
for gitmem sync (pagemerge) and tool notes (toolnotes).

May import: the foundation, gitmem.redact, gitmem.git, gitmem.store, gitmem.search."""
