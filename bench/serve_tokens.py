"""Tokens an agent spends per answered question: layered MCP tools against whole memories.

    python bench/serve_tokens.py [--data /work/shared/bench/locomo-dev] [--convs 0,1,2,3,4] [--k 8]
                                 [--unit turn|session] [--work DIR]

The questions are the repository's LoCoMo development questions (categories 1-4, as in ``bench/locomo.py``);
each conversation's turns are a memory repository. Every tool call goes through the real MCP server object
(``gitmem.serve.mcp.build_server``, in-process), and the tokens counted are those of the text the agent would
read (the tool's result) plus its arguments, with gitmem's token counter (a WordPiece tokenizer).

* whole: one call that returns the ``k`` best memories in full (``memory_get`` of the ``k`` ids a search ranks
  first, concise format), what a server without layering sends;
* layered, oracle: ``memory_search`` (``k`` rows; a short memory is shown whole in its row), then ``memory_get``
  of exactly the summarised rows that hold evidence (an agent that reads the right rows: the lower bound);
* layered, top 3: ``memory_search``, then ``memory_get`` of the summarised rows among the first three (a fixed
  policy).

``--unit turn`` stores each dialogue turn as a memory (one sentence: about 25 tokens); ``--unit session`` stores
each session as one memory (its turns joined: several hundred tokens, like a long project note), and a question's
evidence is the sessions that hold its evidence turns.

A question is answered when a search's ``k`` rows hold at least one evidence memory (the same for every variant,
since the ranking is the same). Prints tokens per question and per answered question.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo import DATA, build_repo, load, parse_date  # type: ignore[import-not-found]

from gitmem.api import Repository
from gitmem.config import Config, RankingConfig
from gitmem.serve.mcp import build_server
from gitmem.serve.service import MemoryService
from gitmem.store.layout import init_repo
from gitmem.store.memories import MemoryRepo
from gitmem.text.tokens import count_tokens


async def call(server: Any, tool: str, arguments: dict[str, Any]) -> tuple[int, Any]:
    """(tokens the agent reads and writes for this call, the parsed result)."""
    result = await server.call_tool(tool, arguments)
    text = "".join(getattr(block, "text", "") for block in result.content)
    return count_tokens(text) + count_tokens(json.dumps(arguments, ensure_ascii=False)), result.structured_content


def session_repo(work: Path, conv: int, turns: list[dict[str, Any]]) -> MemoryRepo:
    """One memory per session of the conversation (id ``<conv>-s<n>``)."""
    path = work / f"conv{conv}-sessions"
    config = Config(repo=path, author="bench <bench@example.com>")
    if not (path / ".git").is_dir():
        init_repo(path, author="bench <bench@example.com>")
        sessions: dict[int, list[dict[str, Any]]] = {}
        for turn in turns:
            sessions.setdefault(int(turn["session"]), []).append(turn)
        MemoryRepo(config).import_records(
            [{"id": f"{conv}-s{n}", "text": "\n".join(t["text"] for t in group),
              "created": parse_date(group[0]["date"]).strftime("%Y-%m-%dT%H:%M:%SZ"), "source": f"session_{n}"}
             for n, group in sorted(sessions.items())], origin=f"locomo-{conv}-sessions")
    return MemoryRepo(config)


async def run(data: Path, convs: list[int], k: int, work: Path, unit: str) -> None:
    turns, queries = load(data)
    session_of = {t["id"]: f"{t['conv']}-s{t['session']}" for rows in turns.values() for t in rows}
    totals = {"whole": 0, "layered, oracle": 0, "layered, top 3": 0}
    asked = answered = 0
    for conv in convs:
        if unit == "session":
            repo = session_repo(work, conv, turns[conv])
        else:
            repo = build_repo(work, conv, turns[conv], RankingConfig())
        service = MemoryService(Repository(repo.config))
        server = build_server(service)
        for q in queries[conv]:
            if int(q["category"]) not in (1, 2, 3, 4):
                continue
            asked += 1
            search_cost, found = await call(server, "memory_search", {"query": q["question"], "k": k})
            ids = [row["id"] for row in found["results"]]
            summarised = {row["id"] for row in found["results"] if "text" not in row}  # rows to memory_get
            gold = {session_of[e] for e in q["evidence"] if e in session_of} if unit == "session" \
                else set(q["evidence"])
            evidence = [i for i in ids if i in gold]
            if not ids:
                continue
            whole_cost, _ = await call(server, "memory_get", {"ids": ids})
            totals["whole"] += whole_cost
            top3 = [i for i in ids[:3] if i in summarised]
            totals["layered, top 3"] += search_cost + ((await call(server, "memory_get", {"ids": top3}))[0]
                                                       if top3 else 0)
            oracle_cost = search_cost
            if evidence:
                answered += 1
                wanted = [i for i in evidence if i in summarised]
                if wanted:
                    oracle_cost += (await call(server, "memory_get", {"ids": wanted}))[0]
            totals["layered, oracle"] += oracle_cost
        print(f"conversation {conv}: {len(turns[conv])} memories, {asked} questions so far", file=sys.stderr)
    print(f"\n{asked} questions (LoCoMo dev, conversations {','.join(map(str, convs))}, categories 1-4, "
          f"one memory per {unit}), {answered} answered (evidence in the top {k} rows)")
    print(f"{'variant':18} {'tokens/question':>16} {'tokens/answered':>16} {'vs whole':>9}")
    for name, total in totals.items():
        print(f"{name:18} {total / asked:16.1f} {total / max(1, answered):16.1f} "
              f"{total / max(1, totals['whole']):9.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--convs", default="0,1,2,3,4")
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--unit", choices=["turn", "session"], default="turn")
    parser.add_argument("--work", type=Path, help="Keep the repositories here between runs.")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="gitmem-serve-tokens-"))
    try:
        anyio.run(run, args.data, [int(c) for c in args.convs.split(",")], args.k, work, args.unit)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
