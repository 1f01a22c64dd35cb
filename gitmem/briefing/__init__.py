"""What a session is told, and when: the session-start block (Essentials, then Relevant memories past an absolute
relevance gate) and the memories each prompt brings in.

- :mod:`gitmem.briefing.gate`: the absolute relevance gate (a BM25 match, or a cosine above the embedding
  model's measured threshold, counted only when the model covers the scripts of both texts);
- :mod:`gitmem.briefing.essentials`: the project's constraints and corrections and the user's must-follow
  memories, deduplicated, conflicts settled for the newer memory or the correction;
- :mod:`gitmem.briefing.prompt`: per-prompt recall for ``UserPromptSubmit``.
"""
