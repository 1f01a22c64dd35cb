"""Recall and false-positive rate of secret redaction on the bench corpus (``bench/data/secrets/``).

    python bench/redaction.py [--show-misses]

A positive counts as found when its exact secret no longer appears in the redacted text; a negative counts as a
false positive when redaction changes it at all. Prints one line per kind, then the totals and the time per
item. Regenerate the corpus with ``python bench/data/secrets/generate.py``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gitmem.redact.engine import redact

DATA = Path(__file__).resolve().parent / "data" / "secrets"


def load(name: str) -> list[dict[str, str]]:
    with (DATA / name).open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show-misses", action="store_true", help="print every miss and false positive")
    args = parser.parse_args()
    positives, negatives = load("positives.jsonl"), load("negatives.jsonl")
    found: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    flagged: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    start = time.perf_counter()
    for item in positives:
        hit = item["secret"] not in redact(item["text"]).text
        found[item["kind"]][0] += hit
        found[item["kind"]][1] += 1
        if not hit and args.show_misses:
            print(f"MISS {item['kind']}: {item['text']!r}")
    for item in negatives:
        result = redact(item["text"])
        changed = result.text != item["text"]
        flagged[item["kind"]][0] += changed
        flagged[item["kind"]][1] += 1
        if changed and args.show_misses:
            print(f"FALSE POSITIVE {item['kind']}: {item['text']!r} -> {result.text!r}")
    elapsed = time.perf_counter() - start
    print(f"{'positive kind':34} recall")
    for kind, (hit, total) in sorted(found.items()):
        print(f"  {kind:32} {hit}/{total}  {hit / total:.2f}")
    print(f"{'negative family':34} false positives")
    for kind, (bad, total) in sorted(flagged.items()):
        print(f"  {kind:32} {bad}/{total}")
    hits = sum(h for h, _ in found.values())
    bad = sum(b for b, _ in flagged.values())
    print(f"recall {hits}/{len(positives)} = {hits / len(positives):.3f} over {len(found)} kinds; "
          f"false positives {bad}/{len(negatives)} = {bad / len(negatives):.3%}; "
          f"{elapsed / (len(positives) + len(negatives)) * 1000:.2f} ms per item")


if __name__ == "__main__":
    main()
