"""Writer memory: ``writer/<work>/`` in the memory repository, for people who write fiction with an agent.

Owns the documents (:mod:`.entities`: characters with voice, register, keywords, taboo words and arc;
relationships; scenes; world rules), the library behind ``gitmem writer`` (:mod:`.store`) and the voice check of
a line (:mod:`.voice`). Search reuses the wiki's folder index (:mod:`gitmem.wiki.search`).

May import: the memory store and its git layer, :mod:`gitmem.store.document`, :mod:`gitmem.redact`,
:mod:`gitmem.wiki.search`. Never imported by the hooks.
"""
