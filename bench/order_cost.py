"""What a question about order costs a BM25 search once supersede chains are recorded (docs/search.md, "Supersede
chains"): CPU per search for a "first", a "before X", an "after X" question and one without order, over
``--memories`` short memories of which ``--superseded`` are past states (each replaced by the next memory on its
subject) and ``--forgotten`` are forgotten (deprecated, replaced by nothing).

    python bench/order_cost.py --runs 50

CPU time (``time.process_time``): the mean over ``--runs`` searches of each question after one warm-up search, the
least of ``--blocks`` such means (and their median); the machine's load moves it, so compare runs taken one after
the other.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gitmem.config import Config  # noqa: E402
from gitmem.search.index import Index  # noqa: E402
from gitmem.store.layout import init_repo  # noqa: E402
from gitmem.store.memories import MemoryRepo  # noqa: E402

SUBJECTS = ("database", "queue", "cache", "frontend", "logging", "deploy", "search", "auth", "payments", "email")
TOOLS = ("MySQL", "Kafka", "Redis", "Vue", "Loki", "Jenkins", "Solr", "Keycloak", "PayPal", "Mailgun", "Postgres",
         "RabbitMQ", "Memcached", "React", "Sentry", "Actions", "Elastic", "Auth0", "Stripe", "SES")
QUESTIONS = {
    "first": "Which queue did we use first?",
    "before X": "What did we use for the queue before RabbitMQ?",
    "after X": "What did we use for the queue after Kafka?",
    "no order": "Which queue do we use?",
}


def records(memories: int, superseded: int, forgotten: int) -> list[dict[str, object]]:
    start = datetime(2023, 1, 1, tzinfo=UTC)
    out: list[dict[str, object]] = []
    for i in range(memories):
        subject, tool = SUBJECTS[i % len(SUBJECTS)], TOOLS[(i // len(SUBJECTS)) % len(TOOLS)]
        out.append({"id": f"m{i}", "text": f"The {subject} of service {i // len(SUBJECTS)} uses {tool}; "
                                           f"note {i} on how the {subject} is set up",
                    "created": (start + timedelta(hours=i)).strftime("%Y-%m-%dT%H:%M:%SZ")})
    # the first ``superseded`` memories are replaced by the memory on the same subject one service later
    for i in range(superseded):
        out[i].update(deprecated=True, superseded_by=f"m{i + len(SUBJECTS)}",
                      deprecated_reason=f"superseded by m{i + len(SUBJECTS)}")
    for i in range(superseded, superseded + forgotten):
        out[i].update(deprecated=True, deprecated_reason="never true")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=3000)
    parser.add_argument("--superseded", type=int, default=300)
    parser.add_argument("--forgotten", type=int, default=0)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--blocks", type=int, default=5, help="blocks of --runs searches; the least mean is shown")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gitmem-order-cost-"))
    try:
        config = Config(repo=work / "repo", author="bench <bench@example.com>")
        init_repo(config.repo, author="bench <bench@example.com>")
        MemoryRepo(config).import_records(records(args.memories, args.superseded, args.forgotten), origin="bench")
        index = Index(MemoryRepo(config), embedder=None)
        index.refresh()
        now = datetime(2024, 1, 1, tzinfo=UTC)
        print(f"{args.memories} memories, {args.superseded} superseded, {args.forgotten} forgotten; "
              f"BM25, CPU per search, least mean of {args.runs} over {args.blocks} blocks")
        for kind, question in QUESTIONS.items():
            index.search(question, k=10, mode="bm25", now=now)
            means = []
            for _ in range(args.blocks):
                started = time.process_time()
                for _ in range(args.runs):
                    index.search(question, k=10, mode="bm25", now=now)
                means.append((time.process_time() - started) / args.runs * 1000)
            print(f"  {kind:<9} {min(means):6.2f} ms (median {statistics.median(means):.2f})  {question}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
