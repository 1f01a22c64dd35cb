"""Learning from the agent: instincts and their confidence (instincts), behaviour patterns (patterns),
evolution into skills (evolve), capture from transcripts (capture), extraction from commits (extract),
standing directives (directives) and the optional model review (modelreview).

May import: the foundation, gitmem.redact, gitmem.git, gitmem.store, gitmem.search, gitmem.projects."""
