"""Does directive detection tell a standing rule from a task?

    python bench/directives.py [--errors]

``bench/data/directives.jsonl`` holds prompts labelled ``rule`` (a standing instruction the user wants kept for
later sessions) or ``task`` (work to do now): real pull-request titles that read like rules ("Don't swallow
ImportError in temporary_directory()", "Always use getfixturemarker() ..."), the first prompts of
``bench/sessions.py`` (English and Chinese), and written prompts in both languages. A prompt counts as detected
when :func:`gitmem.text.directives.detect_directives` finds at least one directive in it. Prints precision and recall
of ``rule``, overall and per language; ``--errors`` lists the misclassified prompts.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gitmem.text.directives import detect_directives

DATA = Path(__file__).resolve().parent / "data" / "directives.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--errors", action="store_true", help="list the misclassified prompts")
    args = parser.parse_args()
    rows = [json.loads(line) for line in DATA.read_text("utf-8").splitlines() if line.strip()]
    for row in rows:
        row["found"] = bool(detect_directives(row["prompt"]))
    print(f"{len(rows)} prompts: {sum(r['label'] == 'rule' for r in rows)} rules, "
          f"{sum(r['label'] == 'task' for r in rows)} tasks")
    print(f"{'set':8} {'n':>4} {'precision':>10} {'recall':>8}")
    for name, subset in (("all", rows), ("en", [r for r in rows if r["lang"] == "en"]),
                         ("zh", [r for r in rows if r["lang"] == "zh"])):
        tp = sum(r["found"] and r["label"] == "rule" for r in subset)
        fp = sum(r["found"] and r["label"] == "task" for r in subset)
        fn = sum(not r["found"] and r["label"] == "rule" for r in subset)
        precision = tp / (tp + fp) if tp + fp else float("nan")
        recall = tp / (tp + fn) if tp + fn else float("nan")
        print(f"{name:8} {len(subset):>4} {precision:>10.3f} {recall:>8.3f}")
    if args.errors:
        for row in rows:
            if row["found"] != (row["label"] == "rule"):
                kind = "false rule" if row["found"] else "missed rule"
                print(f"{kind:12} {row['prompt']}")


if __name__ == "__main__":
    main()
