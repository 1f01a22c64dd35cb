"""Project wiki figures: ``wiki query`` latency at N pages, the session-start overview, and the session-end log.

    python bench/wiki.py [--pages 1000] [--runs 200]

Builds a wiki of N pages (English and Chinese, ~1.5 KB each, written as files and committed once), then prints:

- the cold first query (builds the keyword index under ``.cache/wiki/``),
- a query after one page was rewritten (the index re-indexes that page only, its chunks included),
- warm queries in one process (the index stays open; the target is <= 20 ms), median and p95 of the wall time and
  the median CPU time, for English and Chinese queries, with and without a category filter,
- a ``gitmem wiki query`` process end to end (interpreter start and imports included),
- :func:`gitmem.wiki.lifecycle.overview` (SessionStart) and :func:`~gitmem.wiki.lifecycle.capture_session_log`
  (SessionEnd, 3 s budget): a new page for a session of 200 tool calls, commit included.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gitmem.config import Config
from gitmem.files.atomic import atomic_write
from gitmem.store import local as observe
from gitmem.store import wikipage as wp
from gitmem.store.layout import init_repo
from gitmem.store.memories import MemoryRepo
from gitmem.wiki.lifecycle import capture_session_log, overview
from gitmem.wiki.store import Wiki

_EN_WORDS = ("deploy pipeline staging rollback database migration cache invalidation payment retry webhook queue "
      "worker timeout connection pool index schema release checklist feature flag metrics alert dashboard logging "
      "trace latency budget container image registry secret rotation backup restore replica shard partition")
EN = _EN_WORDS.split()
_ZH_WORDS = ("部署 流水线 回滚 数据库 迁移 缓存 失效 支付 重试 队列 超时 连接池 索引 发布 检查 功能 开关 指标 告警 "
      "日志 链路 延迟 镜像 仓库 密钥 轮换 备份 恢复 副本 分片")
ZH = _ZH_WORDS.split()


def build(repo: MemoryRepo, project: str, pages: int, rng: random.Random) -> None:
    folder = repo.path / "wiki" / project
    folder.mkdir(parents=True)
    for i in range(pages):
        words = ZH if i % 4 == 0 else EN
        title = f"{' '.join(rng.sample(words, 3))} {i}"
        sep = "" if words is ZH else " "
        body = "\n\n".join(sep.join(rng.choices(words, k=40)) + ("。" if words is ZH else ".") for _ in range(6))
        page = wp.make_page(wp.page_slug(title), title, body, category=wp.CATEGORIES[i % len(wp.CATEGORIES)],
                            tags=rng.sample(EN, 2))
        (folder / f"{page.name}.md").write_text(wp.dumps(page), "utf-8")
    Wiki(repo, project).regenerate()
    subprocess.run(["git", "-C", str(repo.path), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo.path), "commit", "-qm", "bench pages"], check=True)


def timed(call: object, runs: int) -> list[tuple[float, float]]:
    """(wall, CPU) milliseconds of each run: on a shared machine the CPU time is the steadier figure (for a
    process started by the call, only the wall time means anything)."""
    out = []
    for _ in range(runs):
        start, cpu = time.perf_counter(), time.process_time()
        call()  # type: ignore[operator]
        out.append(((time.perf_counter() - start) * 1000, (time.process_time() - cpu) * 1000))
    return out


def show(label: str, runs: list[tuple[float, float]]) -> None:
    ms = sorted(wall for wall, _cpu in runs)
    p95 = ms[min(len(ms) - 1, int(len(ms) * 0.95))]
    cpu = statistics.median(c for _wall, c in runs)
    print(f"{label:44} median {statistics.median(ms):8.2f} ms   p95 {p95:8.2f} ms   cpu {cpu:7.2f} ms   (n={len(ms)})")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    rng = random.Random(14)
    tmp = Path(tempfile.mkdtemp(prefix="gitmem-wiki-bench-"))
    try:
        init_repo(tmp / "mem")
        repo = MemoryRepo(Config(repo=tmp / "mem"))
        build(repo, "shop", args.pages, rng)
        book = Wiki(repo, "shop")
        start = time.perf_counter()
        hits = book.query("database migration rollback")
        print(f"{args.pages} pages; first query (builds the index): {(time.perf_counter() - start) * 1000:.0f} ms, "
              f"{len(hits)} hits; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        pages = sorted(p for p in (repo.path / "wiki" / "shop").glob("*.md") if p.name != "index.md")
        edits = iter(rng.sample(pages, min(len(pages), 20)))

        def edit_and_query() -> None:
            page = next(edits)  # rewritten by rename, as a wiki write does: the folder's mtime moves
            atomic_write(page, page.read_bytes() + b"\nOne more line about the release checklist.\n")
            book.query("release checklist")

        show("query after one page changed (re-indexes it)", timed(edit_and_query, min(len(pages), 20)))
        queries = [" ".join(rng.sample(EN, 2)) for _ in range(20)]
        zh = ["".join(rng.sample(ZH, 2)) for _ in range(20)]
        show("warm query, English (2 words)", timed(lambda: book.query(rng.choice(queries)), args.runs))
        show("warm query, Chinese (2 words)", timed(lambda: book.query(rng.choice(zh)), args.runs))
        show("warm query, English + --category decision",
             timed(lambda: book.query(rng.choice(queries), category="decision"), args.runs))
        found = book.query(zh[0])
        print(f"  e.g. {zh[0]!r} → {found[0].name if found else '-'} ({found[0].score:.2f})" if found else "")
        cli = shutil.which("gitmem", path=str(Path(sys.executable).parent)) or "gitmem"
        show("gitmem wiki query (a process)", timed(lambda: subprocess.run(
            [cli, "--repo", str(repo.path), "wiki", "query", "cache invalidation", "--project", "shop", "--json"],
            check=True, capture_output=True), 10))
        show("overview (session start)", timed(lambda: overview(repo.path, "shop", "deploy pipeline"), args.runs))
        local = observe.local_dir(repo.path)
        sessions = [f"bench{i}" for i in range(5)]
        for session in sessions:
            for n in range(200):
                tool = "Bash" if n % 2 else "Edit"
                field = f'"command":"pytest -x tests/test_{n}.py"' if n % 2 else f'"file_path":"/code/src/m{n}.py"'
                observe.append_observation(local, {"session": session, "phase": "post", "tool": tool,
                                                   "input": "{" + field + "}", "output": "ok", "project": "shop",
                                                   "cwd": "/code"})
        queue = list(sessions)
        show("session-log page (new page, 200 calls)", timed(
            lambda: capture_session_log(repo, session=queue.pop(), project="shop", local=local), len(sessions) - 1))
        code = tmp / "shop"  # a code directory whose project id is "shop"
        code.mkdir()
        env = {**os.environ, "GITMEM_REPO": str(repo.path), "GITMEM_LEARN": "0", "GITMEM_WARM": "0",
               "GITMEM_PROJECT_SCAN": "0"}
        data = json.dumps({"session_id": queue[0], "cwd": str(code), "hook_event_name": "SessionEnd",
                           "reason": "exit"}).encode()
        show("session-end hook process (writes the page)", timed(lambda: subprocess.run(
            [sys.executable, "-m", "gitmem.agents.claude.entry", "session-end"], input=data, env=env, cwd=code,
            check=True,
            capture_output=True), 1))
        print(f"  session-log pages: {len(list((repo.path / 'wiki' / 'shop').glob('session-*.md')))}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
