"""Convert public retrieval sets into the bench format of ``bench/locomo.py`` (turns.jsonl + queries.jsonl).

    python bench/sets/convert.py dulemon PATH/TO/PaddlePaddle-Research   # a git checkout or bare mirror
    python bench/sets/convert.py xquad PATH/TO/google-deepmind-xquad
    python bench/sets/convert.py longdoc bench/sets/xquad                 # after xquad: whole articles
    python bench/sets/convert.py beam PATH/TO/mohammadtavakoli78-BEAM

Each set's README.md says where the data comes from (repository, commit, licence) and how it was converted.
Files are read with ``git show HEAD:<path>`` so a bare mirror works as well as a checkout.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from gitmem.store.memory import MAX_TEXT_BYTES

HERE = Path(__file__).resolve().parent
DATE = "2024-01-01T00:00:00Z"
# a space the word segmentation put next to a CJK character or CJK punctuation: Chinese is written without them
_CJK = r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]"
_SEG_SPACE = re.compile(rf"(?<={_CJK}) +| +(?={_CJK})")


def git_show(repo: Path, path: str) -> str:
    return subprocess.run(["git", "--git-dir", str(_git_dir(repo)), "show", f"HEAD:{path}"], capture_output=True,
                          text=True, check=True).stdout


def git_head(repo: Path) -> str:
    return subprocess.run(["git", "--git-dir", str(_git_dir(repo)), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()


def _git_dir(repo: Path) -> Path:
    return repo / ".git" if (repo / ".git").exists() else repo


def unsegment(text: str) -> str:
    return _SEG_SPACE.sub("", text).strip()


def write(out: Path, turns: list[dict[str, Any]], queries: list[dict[str, Any]]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, rows in (("turns.jsonl", turns), ("queries.jsonl", queries)):
        with (out / name).open("w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{out}: {len(turns)} memories, {len(queries)} queries (HEAD of the source: see README.md)")


def dulemon(repo: Path) -> None:
    """DuLeMon sample dialogues: each utterance labelled with a persona sentence is a query whose evidence is that
    persona sentence; the memories are the persona sentences (user's and bot's) of ten dialogues pooled, so a
    query searches ~95 memories. Dialogues 0-9 = conv 0 (development), 10-19 = conv 1 (test)."""
    turns: list[dict[str, Any]] = []
    queries: list[dict[str, Any]] = []
    lines = [json.loads(x) for x in git_show(repo, "NLP/ACL2022-DuLeMon/data/samples.json").splitlines() if x.strip()]
    for d, dialogue in enumerate(lines):
        conv = 0 if d < len(lines) // 2 else 1
        for key in ("user_said_persona", "user_no_said_persona", "bot_persona"):
            for item in dialogue[key]:
                pid, _, text = item.partition(":")
                turns.append({"id": f"{d}-{pid.strip()}", "conv": conv, "session": d, "date": DATE,
                              "text": unsegment(text)})
        for u, line in enumerate(dialogue["conversation"]):
            utterance, _, label = line.partition("\t")
            if not label.strip():
                continue
            _speaker, _, said = utterance.partition(":")
            queries.append({"qid": f"{d}-u{u}", "conv": conv, "question": unsegment(said),
                            "evidence": [f"{d}-{p.strip()}" for p in label.split(",")],
                            "category": 1 if conv == 0 else 2})
    write(HERE / "dulemon", turns, queries)


_SENTENCE = {"en": re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])"), "zh": re.compile(r"(?<=[。！？])")}


def sentences(text: str, lang: str) -> list[tuple[int, str]]:
    """(start offset, sentence) of a paragraph."""
    out, start = [], 0
    for match in _SENTENCE[lang].finditer(text):
        if match.end() > start and text[start:match.start()].strip():
            out.append((start, text[start:match.start()].strip()))
            start = match.end()
    if text[start:].strip():
        out.append((start, text[start:].strip()))
    return out


def _answer_sentence(context: str, said: list[tuple[int, str]], answer: dict[str, Any]) -> int | None:
    """The index of the sentence holding ``answer``, or None when that is not known. XQuAD gives most answers the
    offset of the answer text's first occurrence in the paragraph, wherever the answer is: "How many balls did
    Josh Norman intercept?" points at the "four" of "boasting four Pro Bowl selections", a sentence before "had four
    interceptions". So an answer whose text stands in two sentences or more of its paragraph, at the first of them,
    has no known sentence."""
    at, text = answer["answer_start"], answer["text"]
    places = [i for i in range(len(context)) if context.startswith(text, i)]

    def holding(offset: int) -> int:
        return max(i for i, (start, _t) in enumerate(said) if start <= offset)

    if at == context.find(text) and len({holding(i) for i in places}) > 1:
        return None
    return holding(at)


def xquad(repo: Path) -> None:
    """XQuAD (SQuAD v1.1 dev paragraphs and questions translated by professionals): each sentence of a paragraph
    is a memory (``session`` = its paragraph, so the paragraph's other sentences are its neighbours), each
    question's evidence is the sentence holding its answer. English and Chinese are the same 240 paragraphs and
    1190 questions with the same question ids; a question whose sentence is not known in either language
    (:func:`_answer_sentence`) is left out of both. Articles 0-23 = conv 0 (development), 24-47 = conv 1 (test)."""
    data = {lang: json.loads(git_show(repo, f"xquad.{lang}.json"))["data"] for lang in ("en", "zh")}
    found: dict[str, dict[str, int]] = {}  # language → question id → its sentence's number
    unknown: set[str] = set()
    for lang, articles in data.items():
        for article in articles:
            for paragraph in article["paragraphs"]:
                said = sentences(paragraph["context"], lang)
                for qa in paragraph["qas"]:
                    s = _answer_sentence(paragraph["context"], said, qa["answers"][0])
                    if s is None:
                        unknown.add(qa["id"])
                    else:
                        found.setdefault(lang, {})[qa["id"]] = s
    for lang, articles in data.items():
        turns: list[dict[str, Any]] = []
        queries: list[dict[str, Any]] = []
        for a, article in enumerate(articles):
            conv = 0 if a < len(articles) // 2 else 1
            for p, paragraph in enumerate(article["paragraphs"]):
                said = sentences(paragraph["context"], lang)
                for s, (_start, text) in enumerate(said):
                    turns.append({"id": f"{a}-{p}-{s}", "conv": conv, "session": a * 100 + p, "date": DATE,
                                  "text": text})
                for qa in paragraph["qas"]:
                    if qa["id"] in unknown:
                        continue
                    s = found[lang][qa["id"]]
                    queries.append({"qid": qa["id"], "conv": conv, "question": qa["question"],
                                    "evidence": [f"{a}-{p}-{s}"], "category": 1 if conv == 0 else 2})
        write(HERE / "xquad" / lang, turns, queries)


def longdoc(xquad_dir: Path) -> None:
    """XQuAD's articles as long memories: one memory per article (its paragraphs joined by blank lines, 2-10k
    characters in English, 0.8-2.9k in Chinese), every article of both parts in each repository, so a question's
    answer sits anywhere inside a long text among 47 others of the same kind. A question keeps its sentence
    (``sentence``) to check that the snippet shows it."""
    for lang in ("en", "zh"):
        rows = [json.loads(line) for line in (xquad_dir / lang / "turns.jsonl").read_text("utf-8").splitlines()]
        by_id = {r["id"]: r["text"] for r in rows}
        articles: dict[str, dict[str, list[str]]] = {}
        for r in rows:
            article, paragraph, _n = r["id"].split("-")
            articles.setdefault(article, {}).setdefault(paragraph, []).append(r["text"])
        join = "" if lang == "zh" else " "
        texts = {a: "\n\n".join(join.join(p) for p in paras.values()) for a, paras in articles.items()}
        turns = [{"id": f"a{a}", "conv": conv, "session": int(a), "date": DATE, "text": text}
                 for conv in (0, 1) for a, text in texts.items()]
        queries = []
        for line in (xquad_dir / lang / "queries.jsonl").read_text("utf-8").splitlines():
            q = json.loads(line)
            evidence = q["evidence"][0]
            queries.append({**q, "evidence": [f"a{evidence.split('-')[0]}"], "sentence": by_id[evidence]})
        # sessions: every article its own source, so no article is another's context
        write(HERE / "longdoc" / lang, turns, queries)


# BEAM's 128K-token chats kept here (of 20): a coding project, a writing task, a recommendation, personal finance
# for development; the same kinds for the test part, so both parts mix the domains the benchmark covers
BEAM_DEV = (1, 8, 13, 16)
BEAM_TEST = (2, 9, 14, 17)
# a user message ends with the generator's batch and turn number ("... ->-> 1,1"): not part of what was said
_BEAM_MARK = re.compile(r"\s*->->\s*[\d, ]+\s*$")


def _beam_ids(value: Any) -> list[int]:
    """The message ids a question's ``source_chat_ids`` names: a list, or lists under keys ("first_statement")."""
    if isinstance(value, dict):
        return [i for v in value.values() for i in _beam_ids(v)]
    if isinstance(value, list):
        return [i for v in value for i in _beam_ids(v)]
    return [value] if isinstance(value, int) else []


def beam(repo: Path) -> None:
    """BEAM (long synthetic user-assistant chats, 128K-token size): every message of a chat (the user's and the
    assistant's) is a memory, ``session`` = the chat's batch (a stretch of days opened by a dated "time anchor"),
    ``date`` = that anchor. Each probing question's evidence = the message ids of its ``source_chat_ids``; its
    ability (event ordering, summarization, instruction following...) is ``kind``. Abstention questions have no
    evidence and are left out. Chats :data:`BEAM_DEV` are the development part (``category`` 1), :data:`BEAM_TEST`
    the test part (``category`` 2); each chat is a ``conv`` (its own repository)."""
    turns: list[dict[str, Any]] = []
    queries: list[dict[str, Any]] = []
    for chat in BEAM_DEV + BEAM_TEST:
        category = 1 if chat in BEAM_DEV else 2
        batches = json.loads(git_show(repo, f"chats/100K/{chat}/chat.json"))
        known: set[int] = set()
        anchor = ""
        for batch in batches:
            for turn in batch["turns"]:
                for message in turn:
                    if message.get("time_anchor"):
                        anchor = message["time_anchor"]
                    day = datetime.strptime(anchor, "%B-%d-%Y").strftime("%Y-%m-%dT00:00:00Z")
                    text = _BEAM_MARK.sub("", message["content"]).strip()
                    # one assistant message (chat 2) is longer than a memory may be: kept up to the limit
                    text = text.encode()[:MAX_TEXT_BYTES].decode(errors="ignore")
                    turns.append({"id": f"{chat}-{message['id']}", "conv": chat, "session": batch["batch_number"],
                                  "date": day, "text": text})
                    known.add(message["id"])
        probing = json.loads(git_show(repo, f"chats/100K/{chat}/probing_questions/probing_questions.json"))
        for kind, items in probing.items():
            for n, item in enumerate(items):
                evidence = sorted({i for i in _beam_ids(item.get("source_chat_ids")) if i in known})
                if kind == "abstention" or not evidence:
                    continue
                queries.append({"qid": f"{chat}-{kind}-{n}", "conv": chat, "question": item["question"],
                                "evidence": [f"{chat}-{i}" for i in evidence], "category": category,
                                "kind": kind})
    write(HERE / "beam", turns, queries)


if __name__ == "__main__":
    converters = {"dulemon": dulemon, "xquad": xquad, "longdoc": longdoc, "beam": beam}
    if len(sys.argv) != 3 or sys.argv[1] not in converters:
        raise SystemExit(__doc__)
    converters[sys.argv[1]](Path(sys.argv[2]))
