"""What a rule says not to use, and whether a line names it: "use pnpm, not npm" → {"npm"}; "不要用 yarn" →
{"yarn"}. Pure regular expressions (the session start's cached path uses them on the project summary without
loading the memory documents' module)."""

from __future__ import annotations

import re

from gitmem.text.lazyre import LazyPattern

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: a session start's hook process imports this module
if TYPE_CHECKING:
    from collections.abc import Iterable

#: compiled on first use: a session start served from its cache never needs it
_NEGATED = LazyPattern(
    r"(?:\b(?:not|never|no\s+longer|don'?t|do\s+not|instead\s+of|rather\s+than|avoid|stop)\s+"
    r"(?:(?:use|using|run|running|call|calling|with|the|a)\s+)?|(?:不要|别|不用|不再|而不是|禁止|不能)(?:用|使用|运行)?\s*)"
    r"[`'\"]?([\w@./+-]*\w)", re.IGNORECASE)
_FILLER = frozenset(["a", "an", "the", "it", "this", "that", "to", "be", "in", "on", "of", "for", "and", "or",
                     "any", "anything", "so"])


#: what follows a word that a rule rules out only in part: "never push without asking me", "never push to main",
#: "不要在周五之前发布" do not say that pushing or releasing is wrong, so "always push with the bot account" says
#: nothing against them
_QUALIFIED = LazyPattern(r"\s+(?:without|unless|before|until|except|when|if|to|into|on|in|from|directly|by)\b|"
                         r"\s*(?:之前|以前|前|的时候|时|到|在)", re.IGNORECASE)


def negated_terms(text: str) -> set[str]:
    """The words a rule says not to use ("use pnpm, not npm" → {"npm"}; "不要用 yarn" → {"yarn"}), not the ones it
    rules out only under a condition ("never push without asking me")."""
    return {m.group(1).lower() for m in _NEGATED.finditer(text)
            if m.group(1).lower() not in _FILLER and not _QUALIFIED.match(text, m.end())}


def names(text: str, term: str) -> bool:
    """Whether ``text`` mentions ``term`` as a whole word (case-insensitive)."""
    return re.search(rf"(?<![\w@./+-]){re.escape(term)}(?![\w@+-])", text, re.IGNORECASE) is not None


def names_any(text: str, terms: Iterable[str]) -> bool:
    """Whether ``text`` mentions any of ``terms``."""
    return any(names(text, term) for term in terms)
