"""The directive rules, kept under their former name: they live in :mod:`gitmem.text.directives` (pure text rules,
which the search index also reads to mark the memories that state a standing instruction or preference)."""

from gitmem.text.directives import (
    MAX_DIRECTIVE_CHARS,
    Directive,
    classify,
    detect_correction,
    detect_directives,
    directive_key,
)

__all__ = ["MAX_DIRECTIVE_CHARS", "Directive", "classify", "detect_correction", "detect_directives",
           "directive_key"]
