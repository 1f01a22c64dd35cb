"""Learning from the agent: instincts and their confidence (instincts), behaviour patterns (patterns),
evolution into skills (evolve), capture from transcripts (capture), extraction from commits (extract) and the
optional model review (modelreview); the directive rules of prompts are :mod:`gitmem.text.directives`.

May import: the foundation, gitmem.redact, gitmem.git, gitmem.store, gitmem.search, gitmem.projects."""
