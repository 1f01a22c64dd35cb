"""The only dulwich user: HEAD's read side without dulwich (head), the rest of the reads (reader), the locked commit
store (store), low-level objects and refs (plumbing), remotes and transport (remote), ancestry, fast-forward and
merge commits (branches), reading and rewriting the whole history (history) and facts about the user's code
repository (coderepo).

May import: gitmem.errors, gitmem.config, gitmem.files, gitmem.text, gitmem.redact."""
