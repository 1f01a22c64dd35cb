"""Routing accuracy and duplicate/conflict detection of ``gitmem remember --auto`` on a labelled set.

    python bench/router.py [--data bench/data/router.jsonl] [--show-errors]

The set (``bench/data/router.jsonl``) holds seed facts (``"seed": true``, stored first: memories, directives,
project notes, a notepad note) and labelled findings: the surface each belongs to, and whether it duplicates or
conflicts with a seed. Every finding is routed with ``dry_run`` (nothing it says is stored, so findings never
see each other) and rules only (no model command). Prints accuracy per surface and overall, the share of labelled
duplicates and conflicts found, and how many unlabelled findings were wrongly flagged.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gitmem.config import Config
from gitmem.router.route import Router, RouteResult
from gitmem.router.rules import SURFACES, Route, route
from gitmem.store.layout import init_repo
from gitmem.store.memories import MemoryRepo

ROOT = Path(__file__).resolve().parent


def seed(router: Router, surface: str, text: str) -> None:
    decided = route(text)
    if decided.surface != surface:  # a seed is stored where the set says, whatever the rules think
        decided = Route(surface, "seed", category="background" if surface == "memory" else "",
                        section="priority" if surface == "notepad" else "", priority="normal")
    router.store(text, decided, RouteResult(surface, "seed"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=ROOT / "data" / "router.jsonl")
    parser.add_argument("--show-errors", action="store_true")
    args = parser.parse_args()
    records = [json.loads(line) for line in args.data.read_text("utf-8").splitlines() if line.strip()]
    tmp = Path(tempfile.mkdtemp(prefix="gitmem-router-bench-"))
    try:
        init_repo(tmp / "mem")
        router = Router(MemoryRepo(Config(repo=tmp / "mem")), "shop")
        for record in records:
            if record.get("seed"):
                seed(router, record["surface"], record["text"])
        findings = [r for r in records if not r.get("seed")]
        right: Counter[str] = Counter()
        total: Counter[str] = Counter()
        dup_found = dup_total = conf_found = conf_total = false_dup = false_conf = 0
        errors = []
        for record in findings:
            result = router.remember(record["text"], dry_run=True, model=False)
            total[record["surface"]] += 1
            if result.surface == record["surface"]:
                right[record["surface"]] += 1
            else:
                errors.append(f"routed {result.surface:9} want {record['surface']:9} {record['text'][:90]!r}"
                              f" ({result.reason})")
            if record.get("duplicate"):
                dup_total += 1
                dup_found += bool(result.duplicate_of)
                if not result.duplicate_of:
                    errors.append(f"missed duplicate: {record['text'][:90]!r}")
            elif result.duplicate_of:
                false_dup += 1
                errors.append(f"false duplicate of {result.duplicate_of}: {record['text'][:90]!r}")
            if record.get("conflict"):
                conf_total += 1
                conf_found += bool(result.conflict)
                if not result.conflict:
                    errors.append(f"missed conflict: {record['text'][:90]!r}")
            elif result.conflict:
                false_conf += 1
                errors.append(f"false conflict with {result.conflict}: {record['text'][:90]!r}")
        print(f"{len(findings)} findings ({sum(1 for r in records if r.get('seed'))} seeds), rules only")
        for surface in SURFACES:
            if total[surface]:
                print(f"  {surface:10} {right[surface]:3}/{total[surface]:<3} {right[surface] / total[surface]:.2f}")
        print(f"routing accuracy      {sum(right.values()) / len(findings):.3f}")
        print(f"duplicates found      {dup_found}/{dup_total} = {dup_found / max(1, dup_total):.3f}"
              f"   (false duplicates: {false_dup} of {len(findings) - dup_total})")
        print(f"conflicts found       {conf_found}/{conf_total} = {conf_found / max(1, conf_total):.3f}"
              f"   (false conflicts: {false_conf} of {len(findings) - conf_total})")
        if args.show_errors:
            print("\n".join(errors))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
