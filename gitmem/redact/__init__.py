"""Secret redaction before anything is committed: the engine (engine), the rules a text triggers, compiled on first
use (triggers), one pass of them over a text (scan), the built-in secret kinds (rules), the judgement of a matched
value (values), the user's RE2 patterns (custom) and the engine's memo (memo).

May import the layers below it: gitmem.text, gitmem.files, gitmem.errors."""
