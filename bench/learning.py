"""Quality of the learning loop: rules-only extraction and instincts from synthetic observation streams.

    python bench/learning.py [--seed 7] [--sessions 20] [--json]

Extraction: a labelled set of conversation sentences (English and Chinese), half of which should become memories
(with the expected category) and half noise (greetings, thanks, questions, one-off requests, chit-chat). Reports
precision, recall and category accuracy of :func:`gitmem.learn.capture.classify`.

Instincts: synthetic sessions written to a real memory repository's observation log, one session a day, learned
with :func:`gitmem.learn.instincts.learn` after every session. Projects "alpha" and "beta" plant patterns (each planted
behaviour shows in a session with probability 0.8, between random calls); project "noise" has only random calls
(reads, edits, searches, test and lint runs, commits, failures) with no behaviour planted. Reports which instincts
were found, their confidence after 1, 5 and 20 sessions, and every false instinct with its highest confidence.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gitmem.config import Config  # noqa: E402
from gitmem.learn.capture import classify  # noqa: E402
from gitmem.learn.instincts import learn, list_instincts  # noqa: E402
from gitmem.store.layout import init_repo  # noqa: E402
from gitmem.store.local import append_line  # noqa: E402
from gitmem.store.memories import MemoryRepo  # noqa: E402

# (sentence, expected category or None for noise)
LABELLED: list[tuple[str, str | None]] = [
    # decisions
    ("We decided to use PostgreSQL instead of MySQL for the orders service.", "decision"),
    ("我们决定用 PostgreSQL 而不是 MySQL", "decision"),
    ("We switched to pnpm because npm installs were too slow.", "decision"),
    ("After the benchmark we went with FastAPI over Flask.", "decision"),
    ("我们改用 Redis 做会话存储。", "decision"),
    ("The team agreed to drop Python 3.9 support in the next release.", "decision"),
    ("采用 monorepo 结构，所有服务放在一个仓库里。", "decision"),
    ("We settled on trunk-based development with short-lived branches.", "decision"),
    ("放弃 Webpack，统一用 Vite 构建前端。", "decision"),
    ("We chose JWT for service-to-service auth.", "decision"),
    # preferences
    ("I prefer small pull requests with one change each.", "preference"),
    ("I like type hints on every public function.", "preference"),
    ("Don't use print for debugging, use the logger.", "preference"),
    ("我喜欢用 pytest 的 fixture，而不是 setUp 方法。", "preference"),
    ("我习惯先写测试再写实现。", "preference"),
    ("不要用 lodash，原生方法就够了。", "preference"),
    ("We prefer f-strings over format().", "preference"),
    ("别用 var，统一用 const 和 let。", "preference"),
    # constraints
    ("Never push directly to main.", "constraint"),
    ("All API responses must stay under 200 ms at p95.", "constraint"),
    ("You must run the migrations before starting the server.", "constraint"),
    ("生产环境的配置不能提交到仓库。", "constraint"),
    ("必须先跑测试再提交。", "constraint"),
    ("Always pin dependency versions in requirements.txt.", "constraint"),
    ("The Lambda package is limited to 50 MB, so keep dependencies small.", "constraint"),
    ("单个文件最多 500 行。", "constraint"),
    ("Never log customer email addresses.", "constraint"),
    ("接口限制每分钟 100 次请求。", "constraint"),
    # corrections
    ("No, the staging database is on port 5433, not 5432.", "correction"),
    ("That's wrong: the config lives in settings/base.py.", "correction"),
    ("不对，时间要用 UTC 存储。", "correction"),
    ("应该是 snake_case，不是 camelCase。", "correction"),
    ("Actually, it should call the v2 endpoint.", "correction"),
    ("把超时改成 30 秒。", "correction"),
    ("You're wrong about the cache: it is per request, not global.", "correction"),
    # noise: thanks, greetings, questions, one-off requests, chit-chat, status
    ("thanks!", None),
    ("what time is it?", None),
    ("Hi, good morning.", None),
    ("Thank you so much, that works.", None),
    ("Can you run the tests?", None),
    ("Why is the build failing?", None),
    ("Please fix the typo in the README.", None),
    ("Let's look at the logs first.", None),
    ("Rename this variable to user_id.", None),
    ("Show me the diff.", None),
    ("谢谢！", None),
    ("你好", None),
    ("这个报错是什么意思？", None),
    ("帮我看一下这个函数。", None),
    ("好的，继续。", None),
    ("你能解释一下这段代码吗", None),
    ("Looks good to me.", None),
    ("Hmm, interesting.", None),
    ("I like it!", None),
    ("For now just skip that test.", None),
    ("This time, only change the first file.", None),
    ("We hit the rate limit again, retry in a minute.", None),
    ("Never mind, I found it.", None),
    ("Could you also update the changelog?", None),
    ("Don't worry about the lint warnings.", None),
    ("这次先不用管测试。", None),
    ("运行一下 npm install。", None),
    ("I never thought this would work.", None),
    ("Add a docstring to the parse function.", None),
    ("Is there a faster way to do this?", None),
    ("Great job!", None),
    # added after the rules were first written; the first run missed all four (precision 0.897), the noise rules
    # for epistemic "must have", time-bound one-offs and descriptive always/never were added after
    ("We must have missed something in the last deploy.", None),
    ("I decided to take a break, back in ten minutes.", None),
    ("我们决定明天再看这个问题。", None),
    ("The tests always take forever on this machine.", None),
]

#: written with the noise fixes above already planned (their first run scored precision 0.667: the three noise
#: sentences the fixes then covered); see FRESH for a set that never influenced the rules
HELD_OUT: list[tuple[str, str | None]] = [
    ("Let's standardize on black for formatting across all repos.", "decision"),
    ("以后接口返回统一用 JSON 格式。", "decision"),
    ("Please never commit the .env file.", "constraint"),
    ("我更喜欢用 Poetry 管理依赖。", "preference"),
    ("No, the cron job runs at 2 am UTC, not local time.", "correction"),
    ("Deployments must go through the staging environment first.", "constraint"),
    ("We must be close to fixing it now.", None),
    ("Can we always just restart it?", None),
    ("I'll decide after lunch.", None),
    ("今天必须把这个 bug 修完。", None),
    ("The server never responds on the first try.", None),
    ("好的，我明白了。", None),
]

#: written after the rules were final, run once, never used to change anything
FRESH: list[tuple[str, str | None]] = [
    ("We're moving the CI from Jenkins to GitHub Actions.", "decision"),
    ("我们选择了 gRPC 作为内部通信协议。", "decision"),
    ("I'd rather have explicit imports than wildcard imports.", "preference"),
    ("Secrets must never appear in log output.", "constraint"),
    ("每个 PR 至少要有一个人审核。", "constraint"),
    ("That's not right, the bucket is in eu-west-1.", "correction"),
    ("改为使用 UTF-8 编码。", "correction"),
    ("Ok let me check.", None),
    ("What does this error mean?", None),
    ("Run the linter on this file.", None),
    ("太好了，谢谢你！", None),
    ("It always works on my machine.", None),
    ("Open the dashboard and tell me what you see.", None),
    ("这个函数是干什么用的？", None),
]


def extraction(labelled: list[tuple[str, str | None]] = LABELLED) -> dict[str, Any]:
    tp = fp = fn = tn = right = 0
    errors: list[dict[str, Any]] = []
    for sentence, expected in labelled:
        got = classify(sentence)
        if expected and got:
            tp += 1
            right += got == expected
            if got != expected:
                errors.append({"sentence": sentence, "expected": expected, "got": got})
        elif expected:
            fn += 1
            errors.append({"sentence": sentence, "expected": expected, "got": None})
        elif got:
            fp += 1
            errors.append({"sentence": sentence, "expected": None, "got": got})
        else:
            tn += 1
    positives = sum(1 for _, e in labelled if e)
    return {"sentences": len(labelled), "memories": positives, "noise": len(labelled) - positives,
            "chinese": sum(1 for s, _ in labelled if any("\u4e00" <= ch <= "\u9fff" for ch in s)),
            "precision": round(tp / (tp + fp), 3) if tp + fp else 0.0,
            "recall": round(tp / (tp + fn), 3) if tp + fn else 0.0,
            "category_accuracy": round(right / tp, 3) if tp else 0.0,
            "tp": tp, "fp": fp, "fn": fn, "tn": tn, "errors": errors}


# -- synthetic observation streams ----------------------------------------------------------------------
FILES = [f"src/mod{i}.py" for i in range(12)]
NOISE_CMDS = ["ls -la", "cat README.md", "git log --oneline -5", "npm install", "echo done", "python script.py",
              "git branch", "docker ps", "curl -s localhost:8000/health", "du -sh .", "pytest -x", "ruff check .",
              "git commit -m wip", "make build", "pip list"]
PLANTED = {
    "alpha": ["read-before-edit", "test-after-edit", "status-before-commit", "check-missing-cli"],
    "beta": ["read-before-edit", "search-before-edit", "lint-after-edit", "no-blind-retry"],
}
ALL_PATTERNS = ("read-before-edit", "search-before-edit", "test-after-edit", "lint-after-edit", "status-before-commit",
                "check-missing-cli", "no-blind-retry")


class Session:
    def __init__(self, rng: random.Random, sid: str, project: str, when: datetime) -> None:
        self.rng, self.sid, self.project, self.when = rng, sid, project, when
        self.rows: list[dict[str, Any]] = []
        self.n = 0

    def call(self, tool: str, output: str = "ok", **inp: Any) -> None:
        self.n += 1
        stamp = (self.when + timedelta(seconds=self.n)).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.rows.append({"session": self.sid, "time": stamp, "phase": "post", "tool": tool,
                          "input": json.dumps(inp, separators=(",", ":")), "output": output, "cwd": "/code",
                          "project": self.project, "tool_use_id": f"{self.sid}-{self.n}"})

    def noise(self, count: int) -> None:
        """Random calls: unrelated reads/edits (an edit is of an unread file), commands, failures then a fix."""
        for _ in range(count):
            kind = self.rng.random()
            if kind < 0.3:
                self.call("Read", file_path=self.rng.choice(FILES[:6]))
            elif kind < 0.45:
                self.call("Edit", file_path=self.rng.choice(FILES[6:]), old_string="a", new_string="b")
            elif kind < 0.55:
                self.call("Grep", output='{"filenames":["docs/notes.md"],"numFiles":1}', pattern="TODO")
            elif kind < 0.9:
                self.call("Bash", command=self.rng.choice(NOISE_CMDS))
            else:
                self.call("Bash", output='{"stderr":"error: build failed","exit_code":1}', command="make build")
                self.call("Bash", command="make clean && make build")


def plant(s: Session, pattern: str) -> None:
    rng = s.rng
    if pattern == "read-before-edit":
        for name in rng.sample(FILES, 3):
            s.call("Read", file_path=name)
            s.noise(rng.randint(0, 1))
            s.call("Edit", file_path=name, old_string="x", new_string="y")
    elif pattern == "search-before-edit":
        for name in rng.sample(FILES, 2):
            s.call("Grep", output=f'{{"filenames":["{name}"],"numFiles":1}}', pattern=name.split("/")[-1][:-3])
            s.call("Read", file_path=name)
            s.call("Edit", file_path=name, old_string="x", new_string="y")
    elif pattern in ("test-after-edit", "lint-after-edit"):
        command = "python -m pytest -q" if pattern == "test-after-edit" else "ruff check --fix . && ruff format ."
        for _ in range(2):
            s.call("Write", file_path=f"src/new{rng.randint(0, 99)}.py", content="...")
            s.call("Bash", command=command)
    elif pattern == "status-before-commit":
        s.call("Bash", command="git status")
        s.call("Bash", command="git diff --staged")
        s.call("Bash", command="git commit -m 'feature'")
    elif pattern == "check-missing-cli":
        s.call("Bash", output='{"stderr":"bash: gh: command not found"}', command="gh pr create")
        s.call("Bash", command="which gh")
    elif pattern == "no-blind-retry":
        for _ in range(2):
            s.call("Bash", output='{"stderr":"Error: connection refused","exit_code":1}', command="npm run e2e")
        s.call("Bash", output='{"stderr":"Error: connection refused","exit_code":1}', command="npm run e2e")


def instincts(seed: int, sessions: int, checkpoints: tuple[int, ...] = (1, 5, 20)) -> dict[str, Any]:
    rng = random.Random(seed)
    start = datetime(2026, 10, 1, 9, 0, tzinfo=UTC)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "mem"
        init_repo(path)
        repo = MemoryRepo(Config(repo=path))
        table: dict[str, dict[str, float]] = {}
        false_max: dict[str, float] = {}
        for day in range(1, sessions + 1):
            when = start + timedelta(days=day)
            rows: list[dict[str, Any]] = []
            for project in ("alpha", "beta", "noise"):
                s = Session(rng, f"{project}-{day}", project, when)
                s.noise(rng.randint(5, 15))
                for pattern in PLANTED.get(project, []):
                    if rng.random() < 0.8:
                        plant(s, pattern)
                        s.noise(rng.randint(1, 6))
                rows += s.rows
            for row in rows:
                append_line(path / "local" / "observations.jsonl", row)
            learn(repo, now=when + timedelta(hours=8))
            current = {i.id: i for i in list_instincts(path)}
            for item in current.values():
                planted = item.project in PLANTED and item.pattern in PLANTED[item.project]
                if not planted and item.project:
                    false_max[item.id] = max(false_max.get(item.id, 0.0), item.confidence)
            if day in checkpoints:
                for project, patterns in PLANTED.items():
                    for pattern in patterns:
                        key = f"{project}/{pattern}"
                        hit = current.get(f"{pattern}--{project}")
                        table.setdefault(key, {})[str(day)] = hit.confidence if hit and not hit.deprecated \
                            else 0.0
        promoted = sorted(i.id for i in list_instincts(path) if i.scope == "global")
    planted_total = sum(len(p) for p in PLANTED.values())
    found = sum(1 for row in table.values() if row.get(str(sessions), 0.0) > 0)
    return {"sessions": sessions, "planted": planted_total, "found": found, "confidence": table,
            "false_instincts": false_max, "false_above_0.7": sorted(k for k, v in false_max.items() if v > 0.7),
            "promoted_global": promoted}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--seeds", type=int, default=1, help="Repeat the instinct run with this many seeds.")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result: dict[str, Any] = {"extraction": extraction(), "held_out": extraction(HELD_OUT),
              "fresh": extraction(FRESH),
              "instincts": [instincts(args.seed + i, args.sessions) for i in range(args.seeds)]}
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=2))
        return
    for name in ("extraction", "held_out", "fresh"):
        ex = result[name]
        print(f"{name}: {ex['sentences']} sentences ({ex['memories']} memories, {ex['noise']} noise, "
              f"{ex['chinese']} Chinese)")
        print(f"  precision {ex['precision']:.3f}  recall {ex['recall']:.3f}  category accuracy "
              f"{ex['category_accuracy']:.3f}  (tp {ex['tp']}, fp {ex['fp']}, fn {ex['fn']}, tn {ex['tn']})")
        for err in ex["errors"]:
            print(f"  miss: {err['sentence']!r}: expected {err['expected']}, got {err['got']}")
    for run in result["instincts"]:
        print(f"instincts: {run['found']}/{run['planted']} planted found after {run['sessions']} sessions; "
              f"false instincts above 0.7: {run['false_above_0.7'] or 'none'}")
        for key, row in sorted(run["confidence"].items()):
            print(f"  {key:34} " + "  ".join(f"{n:>2} sessions: {c:.2f}" for n, c in row.items()))
        for key, value in sorted(run["false_instincts"].items()):
            print(f"  false: {key} max {value:.2f}")
        print(f"  promoted to global: {', '.join(run['promoted_global']) or 'none'}")


if __name__ == "__main__":
    main()
