"""Long texts cut into overlapping chunks, so BM25 and the embedding model see the part of a long memory or wiki
page that a question is about, not the whole text diluted (BM25's length norm) or truncated (the model reads
its first 256 tokens only).

A text is split at Markdown headings and blank lines first (sections, paragraphs), then a paragraph too long for
one chunk at sentence ends; the pieces are packed in order into chunks of about :data:`CHUNK_TOKENS` tokens, and
each chunk after the first starts with the last sentence of the one before (the overlap), so an answer spanning
a boundary is whole in one of them. A chunk of a section repeats the section's heading. A piece too small to be
a chunk's only content (:data:`SMALL_TOKENS`: a title line, a one-line section) is packed with what follows it,
a section that small into the next section's first chunk, which then repeats the small section's heading. Texts
of up to :data:`LONG_TOKENS` stay one piece: most memories are a few sentences and are searched whole, as before.

:func:`locate` finds where each chunk (or sentence) stands in the text it was cut from: the model's vector of a
chunk is pooled from those characters of the text's own pass (:func:`gitmem.embeddings.runtime.embed_with_spans`).

Sizes are estimated without a tokenizer (the index must not load one): a CJK character is one token, any other
word 1.3 (the packaged WordPiece tokenizer gives 1.2–1.4 per English word of prose, see ``docs/search.md``).
"""

from __future__ import annotations

from gitmem.text.lazyre import LazyPattern

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gitmem.embeddings.runtime import Span

#: the size a chunk aims at, in estimated tokens: well inside the 256 the packaged model reads, with room for
#: the heading and the overlap sentence
CHUNK_TOKENS = 160
#: texts up to this size are not chunked
LONG_TOKENS = 240
#: the most leading words of a part :func:`locate` finds elsewhere, before the rest (a speaker's label, which
#: :func:`~gitmem.search.rerank.sentences` takes up to 30 characters before a colon: 15 one-letter words and their
#: spaces; a section heading, which a chunk of the section follows)
LABEL_WORDS = 15
#: a chunk holding less than this beyond its overlap sentence (a title, a short first line) takes the next piece
#: too, and a section holding less opens the next section's first chunk: no chunk is a title alone when text
#: follows. Every word is at least one estimated token, so such a section is at most :data:`LABEL_WORDS` words,
#: which :func:`locate` finds before the rest of the chunk it opens.
SMALL_TOKENS = LABEL_WORDS + 1

_HEADING = LazyPattern(r"(?m)^#{1,6}\s+\S.*$")
_PARAGRAPH = LazyPattern(r"\n\s*\n")
_SENTENCE_END = LazyPattern(r"(?<=[.!?;])\s+|(?<=[。！？；])\s*|\n")
_CJK = LazyPattern("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_WORD = LazyPattern("[^\\s\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")


#: estimated tokens of a word that is not CJK (a CJK character is one)
WORD_TOKENS = 1.3


def size(text: str) -> float:
    """Estimated tokens of ``text`` for the embedding model (CJK characters 1, other words :data:`WORD_TOKENS`)."""
    return len(_CJK.findall(text)) + WORD_TOKENS * len(_WORD.findall(text))


def chunks(text: str, target: int = CHUNK_TOKENS, long: int = LONG_TOKENS) -> list[str]:
    """The chunks of ``text`` in order, or ``[]`` when it is short enough to be searched whole; a chunk of a
    section starts with the section's heading on a line of its own."""
    return [f"{heading}\n{chunk}" if heading else chunk for heading, chunk in labelled_chunks(text, target, long)]


def labelled_chunks(text: str, target: int = CHUNK_TOKENS, long: int = LONG_TOKENS) -> list[tuple[str, str]]:
    """(section heading or "", text) of each chunk of ``text`` in order (:func:`chunks` without the heading
    joined on)."""
    # no text has more estimated tokens than WORD_TOKENS a character (a CJK character is one, a word at least
    # one character): a short text is known short without the patterns (a prompt's process never compiles them,
    # nor imports re, for the short memories it shows)
    if len(text) * WORD_TOKENS <= long or size(text) <= long:
        return []
    out: list[tuple[str, str]] = []
    sections = _sections(text)
    label = ""
    carried: list[str] = []  # the pieces of a section too small for a chunk of its own, ``label`` its heading
    for n, (heading, section) in enumerate(sections):
        pieces = carried + [s for p in _PARAGRAPH.split(section) for s in _split(p.strip(), target) if s]
        label = label if carried else heading
        carried = pieces if n + 1 < len(sections) and pieces and size(" ".join(pieces)) < SMALL_TOKENS else []
        if not carried:
            out.extend((label if i == 0 else heading, chunk) for i, chunk in enumerate(_pack(pieces, target)))
    return [(heading, chunk) for heading, chunk in out if heading.strip() or chunk.strip()]


def locate(source: str, parts: list[str]) -> list[Span | None]:
    """Where each of ``parts`` (in order, each at or after the one before) sits in ``source``: its ``(start, end)``
    characters, None if not found. Whitespace does not count (a chunk joins its pieces with spaces). Up to
    :data:`LABEL_WORDS` leading words may stand elsewhere, before it (the label
    :func:`~gitmem.search.rerank.sentences` repeats on each sentence, the heading of a chunk's section): their
    nearest occurrence before it is then the span's first range."""
    if not parts:  # nothing to look for: spare the pass over the whole source
        return []
    keep = [i for i, c in enumerate(source) if not c.isspace()]
    compact = "".join(source[i] for i in keep)
    cursor, out = 0, []
    for part in parts:
        words = part.split()
        found: Span | None = None
        for drop in range(min(len(words), LABEL_WORDS + 1)):
            needle = "".join(words[drop:])
            at = compact.find(needle, cursor)
            if at >= 0:
                head = "".join(words[:drop])
                before = compact.rfind(head, 0, at) if head else -1
                ranges = [(keep[before], keep[before + len(head) - 1] + 1)] if before >= 0 else []
                found, cursor = (*ranges, (keep[at], keep[at + len(needle) - 1] + 1)), at
                break
        out.append(found)
    return out


def _sections(text: str) -> list[tuple[str, str]]:
    """(heading, body) of each Markdown section; the text before the first heading has none."""
    marks = list(_HEADING.finditer(text))
    if not marks:
        return [("", text)]
    out = [("", text[:marks[0].start()])] if text[:marks[0].start()].strip() else []
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        out.append((mark.group().lstrip("#").strip(), text[mark.end():end]))
    return out


def _split(paragraph: str, target: int) -> list[str]:
    """A paragraph as one piece, or its sentences when it is longer than a chunk (a sentence longer than a chunk
    is cut at words)."""
    if size(paragraph) <= target:
        return [paragraph]
    out: list[str] = []
    for sentence in (s.strip() for s in _SENTENCE_END.split(paragraph)):
        if size(sentence) <= target:
            out.append(sentence)
            continue
        words = sentence.split(" ") if not _CJK.search(sentence) else list(sentence)
        joiner = " " if not _CJK.search(sentence) else ""
        piece: list[str] = []
        for word in words:
            piece.append(word)
            if size(joiner.join(piece)) >= target:
                out.append(joiner.join(piece))
                piece = []
        if piece:
            out.append(joiner.join(piece))
    return out


def _pack(pieces: list[str], target: int) -> list[str]:
    """Pieces packed in order into chunks of about ``target`` tokens, each after the first starting with the
    last piece of the previous one; a chunk adding less than :data:`SMALL_TOKENS` to that takes the next piece
    too, past the target."""
    out: list[str] = []
    current: list[str] = []
    weight = fresh = 0.0  # fresh: the chunk's size beyond its overlap
    for piece in pieces:
        piece_size = size(piece)
        if current and weight + piece_size > target and fresh >= SMALL_TOKENS:
            out.append(" ".join(current))
            # overlap: the last sentence again, unless it alone fills half a chunk
            current = [current[-1]] if len(current) > 1 and size(current[-1]) <= target / 2 else []
            weight, fresh = sum(size(p) for p in current), 0.0
        current.append(piece)
        weight += piece_size
        fresh += piece_size
    if current:
        out.append(" ".join(current))
    return out
