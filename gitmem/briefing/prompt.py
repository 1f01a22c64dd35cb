"""Per-prompt recall: the memories a prompt brings in (``UserPromptSubmit``).

The prompt, with the previous prompt of the session as context, is searched over the project's and the global
memories. A task prompt is read as one (:func:`task_terms`): a conventional-commit type ("fix(ssr):") is left
out, code identifiers add their words (``moduleRunnerTransform``, ``session_interface``: a memory says "module
runner", "session"), and the abbreviations of developers' prose add their long form and the reverse ("docs" and
"documentation", "perf" and "performance"). Then the hits that pass the relevance gate
(:mod:`gitmem.briefing.gate`) and were not injected earlier in the session are added, best first, within a small
budget (``[recall] prompt_budget``, 600 tokens by default). When nothing passes, nothing is injected. BM25 runs
in the hook's process; the embedding model joins only with ``[recall] prompt_vectors = true`` (loading it costs
far more than the search).

The prompt is read with string methods, not regular expressions: ``re`` (with ``enum`` and ``functools``) costs the
hook process ~9 ms of CPU before any pattern compiles; ``tests/briefing/test_prompt_terms.py`` checks with
hypothesis that each reading equals the expression written next to it.
"""

from __future__ import annotations

from gitmem.briefing.gate import OWN_PROJECT, relevant_hits
from gitmem.text import scripts

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the prompt hook avoids importing typing
if TYPE_CHECKING:
    from collections.abc import Iterable

    from gitmem.search.hit import Hit
    from gitmem.search.index import Index, IndexedRepo

#: memories a prompt adds at most
PROMPT_K = 5
#: characters of the previous prompt added to the query as context
CONTEXT_CHARS = 300


def estimate_tokens(text: str) -> int:
    """A token count that errs high (about 3.6 characters a token in Latin text, one per CJK character and a
    fifth more): the hook never loads the tokenizer for it."""
    cjk = scripts.count_cjk(text)
    return int((len(text) - cjk) / 3.6 + cjk * 1.2) + 1


#: conventional-commit types that say what kind of change a prompt asks for, not what it is about ("fix:",
#: "feat(css):", "chore!:"), left out of the query at the start of a prompt (a scope stays; "docs:", "perf:",
#: "test:" and "ci:" are topics, so they stay): ``re.compile(r"^\s*(?:chore|feat|...)(?=[(!:])", re.I)``
COMMIT_TYPES = ("chore", "feat", "fix", "refactor", "revert", "style")
#: the non-ASCII characters re.IGNORECASE matches to one of the ASCII letters of COMMIT_TYPES (İ and ı to i, the
#: long s to s); the rest of the case folding is str.lower()
_FOLD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s"})
#: abbreviations of developers' prose: (short forms, what its long forms start with or "", the long form). Stems do not
#: join them ("docs" stems to "doc", "documentation" to "document"), so each form adds the other to the query.
ABBREVIATIONS: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("docs", "doc"), "document", "documentation"),
    (("perf",), "performanc", "performance"),
    (("config", "cfg"), "configur", "configuration"),
    (("deps", "dep"), "dependenc", "dependencies"),
    (("repo", "repos"), "repositor", "repository"),
    (("impl",), "implement", "implementation"),
    (("env", "envs"), "environment", "environment"),
    (("dir", "dirs"), "director", "directory"),
    (("args", "arg"), "argument", "arguments"),
    (("params", "param"), "parameter", "parameters"),
    (("msg",), "message", "message"),
    (("auth",), "authenticat", "authentication"),
    (("db",), "database", "database"),
    (("ws",), "websocket", "websocket"),
    (("js",), "javascript", "javascript"),
    (("ts",), "typescript", "typescript"),
    (("ssr",), "", "server rendering"),
    (("i18n",), "internationali", "internationalisation"),
    (("a11y",), "accessib", "accessibility"),
)
_SHORT = {short: long for shorts, _prefix, long in ABBREVIATIONS for short in shorts}
_PREFIXES = tuple((prefix, shorts[0]) for shorts, prefix, _long in ABBREVIATIONS if prefix)


def _other_form(word: str) -> list[str]:
    """The long form of an abbreviation, or the abbreviation of a long form; [] for other words."""
    if word in _SHORT:
        return _SHORT[word].split()
    return [short for prefix, short in _PREFIXES if word.startswith(prefix)][:1]


def without_commit_type(prompt: str) -> str:
    """``prompt`` with a leading conventional-commit type (and the space before it) replaced by one space."""
    head = prompt.lstrip()
    for kind in COMMIT_TYPES:
        after = head[len(kind):len(kind) + 1]
        if after and after in "(!:" and head[:len(kind)].translate(_FOLD).lower() == kind:
            return " " + head[len(kind):]
    return prompt


def _upper(c: str) -> bool:
    return "A" <= c <= "Z"


def _lower(c: str) -> bool:
    return "a" <= c <= "z"


def _is_camel(word: str) -> bool:
    """Whether ``word`` has a camelCase hump or an acronym before a word
    (``re.search(r"[a-z][A-Z]|[A-Z]{2}[a-z]", word)``)."""
    return any((_lower(a) and _upper(b)) or (_upper(a) and _upper(b) and _lower(c))
               for a, b, c in zip(word, word[1:], word[2:] + " ", strict=False))


def _ident_parts(word: str) -> list[str]:
    """``re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+", word)``: acronyms, capitalised or lower-case humps,
    digit runs."""
    parts: list[str] = []
    i, n = 0, len(word)
    while i < n:
        end = i
        while end < n and _upper(word[end]):
            end += 1
        if i < end < n and _lower(word[end]):  # the last capital starts a hump ("HTMLParser": HTML, then Parser)
            end -= 1
        if end == i:  # no acronym here: a hump, a digit run, or nothing
            start = i + 1 if _upper(word[i]) and i + 1 < n and _lower(word[i + 1]) else i
            end = start
            while end < n and _lower(word[end]):
                end += 1
            if end == start:
                while end < n and "0" <= word[end] <= "9":
                    end += 1
            if end == start:
                i += 1
                continue
        parts.append(word[i:end])
        i = end
    return parts


def identifier_words(word: str) -> list[str]:
    """The words inside a code identifier (``moduleRunnerTransform`` → module, runner, transform;
    ``open_session`` → open, session); [] for a plain word."""
    if "_" not in word.strip("_") and not _is_camel(word):
        return []
    return [part.lower() for part in _ident_parts(word) if len(part) > 1]


#: the words a rule is worded with, not what it is about: "never use yarn from now on" searched for "never" and
#: "use" as well, and brought the user's other rules ("never push without asking me"); a prompt of nothing else
#: keeps them (their search, not the index's stopwords: BEAM's questions about standing rules need them there)
RULE_WORDS = frozenset(("never", "always", "use", "using", "prefer", "avoid"))
#: the same in Chinese (simplified; a prompt is read through :func:`gitmem.text.scripts.simplified`), cut out
#: wherever they stand: "以後所有提交訊息都必須用英文寫" brought "上線前必須經過運維審批", sharing 必须 alone.
#: Words that also name things are left alone (绝对路径, 千万用户)
RULE_WORDS_ZH = ("必须", "务必", "一律", "永远", "总是", "不要", "不能", "禁止", "切记")


def _without_rule_words(text: str) -> str:
    """``text`` without the words of :data:`RULE_WORDS` (whole words, any case) and :data:`RULE_WORDS_ZH`,
    unless nothing else is left."""
    kept = [w for w in text.split() if w.strip(".,;:!?'\"()").lower() not in RULE_WORDS]
    if not text.isascii():
        simple = scripts.simplified(" ".join(kept))
        for word in RULE_WORDS_ZH:
            simple = simple.replace(word, " ")
        kept = simple.split()
    return " ".join(kept) if any(w.strip(".,;:!?'\"()，。！？") for w in kept) else text


def task_terms(prompt: str) -> str:
    """``prompt`` as a search text: without a leading conventional-commit type and the words rules are worded
    with (:data:`RULE_WORDS`), followed by the words of its code identifiers and the other form of its
    abbreviations (each added once, and only when the prompt does not have it already, so no word counts
    twice)."""
    text = _without_rule_words(without_commit_type(prompt))
    words = scripts.words(text)
    present = {w.lower() for w in words}
    extra: list[str] = []
    for word in words:
        for new in [*identifier_words(word), *_other_form(word.lower())]:
            if new not in present:
                present.add(new)
                extra.append(new)
    return f"{text.strip()} {' '.join(extra)}".strip()


#: words that point at something said before (English, whole words; Chinese, anywhere in the prompt)
_BACK_EN = frozenset(("it", "its", "this", "that", "these", "those", "they", "them", "there", "again", "also", "same",
                      "still", "too", "above", "previous", "earlier", "instead", "else", "more", "another", "other",
                      "one", "ones"))
_BACK_CJK = ("它", "这", "那", "还", "再", "也", "上面", "刚才", "之前", "同样", "另外", "其他")


def refers_back(prompt: str) -> bool:
    """Whether ``prompt`` points at what came before ("fix it", "the same for the tests", "还是不行"), by a word
    that refers to something said earlier: then the previous prompts are its context."""
    if any(word in prompt for word in _BACK_CJK):
        return True
    return any(word.strip(".,;:!?'\"()") in _BACK_EN for word in prompt.lower().split())


def prompt_query(prompt: str, previous: Iterable[str] = ()) -> str:
    """The search text: the prompt read as a task (:func:`task_terms`), then, when it points back at them
    (:func:`refers_back`), the end of the session's previous prompts. A prompt on a new subject searches alone:
    with the context, "tell me a joke" after a prompt about the drift monitor got the drift monitor's weaker
    memories (on the long-document sessions the context-for-all gave 0.988 / 0.981 of the answers by the time they
    were asked, en / zh dev, at ~520 tokens a prompt; pointing back only, 0.993 / 0.986 at ~500)."""
    context = " ".join(p for p in previous if p)[-CONTEXT_CHARS:] if refers_back(prompt) else ""
    return f"{task_terms(prompt.strip()[:2000])} {context}".strip()


def prompt_recall(repo: IndexedRepo, prompt: str, *, project: str, seen: Iterable[str] = (),
                  previous: Iterable[str] = (), seen_parts: Iterable[tuple[str, int]] = ()) -> tuple[str, list[Hit]]:
    """(the block to inject, its hits) for ``prompt``; ("", []) when no memory passes the gate. ``seen``: the
    memories the session was given whole; ``seen_parts``: ``(id, n)`` of the long memories it was shown part
    ``n`` of, at its start or by a prompt (such a memory comes again for another part:
    :func:`gitmem.briefing.block.given`)."""
    from gitmem.search.index import open_index

    settings = repo.config.recall
    vectors = settings.prompt_vectors
    index = open_index(repo, embedder="auto" if vectors else None, embed_missing=False)  # the warm-up embeds them
    return prompt_recall_in(index, prompt, project=project, budget=settings.prompt_budget,
                            mode="hybrid" if vectors else "bm25", seen=seen, previous=previous, seen_parts=seen_parts)


def prompt_recall_in(index: Index, prompt: str, *, project: str, budget: int, mode: str = "bm25",
                     seen: Iterable[str] = (), previous: Iterable[str] = (),
                     seen_parts: Iterable[tuple[str, int]] = ()) -> tuple[str, list[Hit]]:
    """:func:`prompt_recall` on an open ``index``, searched in ``mode``, within ``budget`` tokens."""
    hits = relevant_hits(index, prompt_query(prompt, previous), project=project, k=PROMPT_K, exclude=set(seen),
                         mode=mode, own_project=OWN_PROJECT, exclude_parts=seen_parts)
    if not hits:
        return "", []
    from gitmem.briefing.block import build_block  # here: a prompt that finds nothing renders nothing

    text, used, _tokens, _left = build_block(hits, budget, "## Memories related to this prompt (gitmem)",
                                             estimate_tokens)
    return text, used
