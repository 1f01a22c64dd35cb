"""Learning from the agent: instincts and their confidence (instincts), behaviour patterns (patterns),
evolution into skills (evolve), capture from transcripts (capture) and its duplicate and conflict checks
(dedup, which ``remember --auto`` uses too), extraction from commits (extract; reverts and dependency folding in
commits) and the optional model review (modelreview); the directive rules of prompts are :mod:`gitmem.text.directives`.

May import: the foundation, gitmem.redact, gitmem.git, gitmem.store, gitmem.search, gitmem.projects."""
