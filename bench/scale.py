"""Search index cost at scale: synthetic English/Chinese memories.

    python bench/scale.py [--sizes 10000] [--with-100k] [--queries 200] [--embed real|random] [--cold-runs 7]

Per size it prints: full BM25 index build, embedding (or filling the vector cache), the refresh after one new
memory (BM25 part and the one embedding), warm in-process query latency p50/p95 for BM25 and hybrid, cold
``gitmem search`` process time (BM25 only, and hybrid with the model load), and peak RSS.

``--embed real`` embeds every memory with the packaged model (about 10 ms each on 2 cores: ~2 min at 10k);
``--embed random`` fills the vector cache with random unit vectors instead (the same matrix size, so the same
query cost, minus the wait). 100k uses random vectors unless ``--embed real`` is given.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gitmem.config import Config
from gitmem.search.build import ensure_vectors
from gitmem.search.index import Index
from gitmem.store.layout import init_repo
from gitmem.store.memories import MemoryRepo

_EN = ("database cache deploy migration schema index query latency timeout retry queue worker service api client "
      "server config secret token branch commit review test fixture mock lint format build release docker image "
      "kubernetes cluster node pod volume backup restore monitor alert log trace metric dashboard feature flag "
      "payment invoice order customer account login session cookie password hash encrypt python rust go java "
      "typescript react vue postgres mysql redis kafka elasticsearch nginx terraform ansible grafana sentry")
_ZH = ("数据库 缓存 部署 迁移 索引 查询 延迟 超时 重试 队列 服务 接口 客户端 配置 密钥 分支 提交 评审 测试 发布 镜像 "
      "集群 节点 备份 恢复 监控 告警 日志 指标 支付 订单 用户 登录 会话 密码 加密 性能 稳定 安全 文档 规范")
EN, ZH = _EN.split(), _ZH.split()
QUERIES = ["why did we choose postgres over mysql", "how do we deploy the payment service", "redis cache timeout",
           "为什么不用 MySQL", "数据库 迁移 规范", "kafka queue retry policy", "部署 前 需要 评审 吗",
           "what is the release process for docker images", "告警 日志 监控", "login session cookie security",
           "terraform backup restore", "上周 的 发布 决定", "python lint format rules", "订单 支付 超时"]
ENV = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "bench",
       "GIT_COMMITTER_EMAIL": "b@x"}


def synthetic(n: int, seed: int = 7) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        if rng.random() < 0.4:
            text = "".join(rng.choice(ZH) for _ in range(rng.randint(4, 12))) + " " + rng.choice(EN)
        else:
            text = " ".join(rng.choice(EN) for _ in range(rng.randint(8, 24)))
        out.append({"id": f"mem-{i:06d}", "text": f"{text} #{i}", "importance": rng.randint(1, 5),
                    "category": rng.choice(["background", "decision", "preference", "constraint", "correction"]),
                    "tags": [rng.choice(EN)], "source": f"session-{i // 12}",
                    "created": f"2026-{1 + (i * 11) // n:02d}-{1 + i % 28:02d}T10:{i % 60:02d}:00Z"})
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def fill_random_vectors(index: Index, embedder: Any) -> None:
    """Put random unit vectors in the cache for every indexed memory (same shapes as real ones)."""
    import numpy as np

    from gitmem.search.build import OK, SHA, load_state
    from gitmem.search.semantic import store as vector_store

    loaded = load_state(index)
    state = loaded[0] if loaded else {}
    shas = sorted({e[SHA] for e in state.values() if e[OK]})
    rng = np.random.default_rng(1)
    matrix = rng.standard_normal((len(shas), embedder.dim)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    store = vector_store(index, embedder.model_id)
    store.add(shas, matrix)
    store.complete.write_text(index._current_head())


def cold(cmd: list[str], runs: int) -> tuple[float, float]:
    """Median wall seconds and peak RSS (MB, from /usr/bin/time when present) of a command run ``runs`` times."""
    times, rss = [], 0.0
    timer = shutil.which("time") or ("/usr/bin/time" if Path("/usr/bin/time").exists() else None)
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, env=ENV)
        times.append(time.perf_counter() - started)
    if timer:
        done = subprocess.run([timer, "-f", "%M", *cmd], check=True, capture_output=True, env=ENV, text=True)
        rss = int(done.stderr.strip().splitlines()[-1]) / 1024
    return statistics.median(times), rss


def measure(size: int, queries: int, embed: str, cold_runs: int, root: Path) -> None:
    from gitmem.embeddings.runtime import EmbedSpec, load_embedder

    path = root / f"mem{size}"
    init_repo(path, author="bench <b@x>")
    repo = MemoryRepo(Config(repo=path, author="bench <b@x>"))
    started = time.perf_counter()
    repo.import_records(synthetic(size), origin="bench")
    print(f"\n== {size} memories (import commit {time.perf_counter() - started:.1f} s)")

    index = Index(repo, embedder=None)
    started = time.perf_counter()
    stats = index.rebuild(vectors=False)
    print(f"full BM25 build:               {time.perf_counter() - started:8.2f} s ({stats.indexed} docs)")

    embedder = load_embedder(EmbedSpec())
    hybrid = Index(repo, embedder=embedder)
    started = time.perf_counter()
    if embed == "real":
        hybrid.rebuild(vectors=True)
        print(f"embed all (real model):        {time.perf_counter() - started:8.2f} s")
    else:
        fill_random_vectors(hybrid, embedder)
        print(f"vector cache (random vectors): {time.perf_counter() - started:8.2f} s")

    repo.remember("A brand new memory about the zebra migration to 新 集群", tags="bench")
    started = time.perf_counter()
    stats = index.refresh()
    bm25_refresh = time.perf_counter() - started
    started = time.perf_counter()
    embedded = ensure_vectors(hybrid, hybrid._current_head())
    embed_refresh = time.perf_counter() - started
    print(f"refresh after 1 new memory:    {bm25_refresh * 1000:8.1f} ms BM25 ({stats.indexed} doc) "
          f"+ {embed_refresh * 1000:.1f} ms vectors ({embedded} embedded)")
    started = time.perf_counter()
    for _ in range(100):
        index.refresh()
    print(f"refresh, nothing changed:      {(time.perf_counter() - started) * 10:8.2f} ms")

    rng = random.Random(3)
    sample = [rng.choice(QUERIES) for _ in range(queries)]
    for mode, ix in (("bm25", index), ("hybrid", hybrid)):
        ix.search(sample[0], mode=mode)  # warm
        times = []
        for q in sample:
            started = time.perf_counter()
            ix.search(q, k=10, mode=mode)
            times.append(time.perf_counter() - started)
        print(f"{mode:6} query, warm:           p50 {pct(times, 0.5) * 1000:6.2f} ms   p95 "
              f"{pct(times, 0.95) * 1000:6.2f} ms")
    print(f"peak RSS (this process):       {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:8.0f} MB")

    gitmem = shutil.which("gitmem", path=str(Path(sys.executable).parent)) or "gitmem"
    seconds, _ = cold([sys.executable, "-c", "pass"], cold_runs)
    print(f"cold `python -c pass`:         {seconds * 1000:8.0f} ms")
    seconds, rss = cold([gitmem, "--repo", str(path), "search", "--mode", "bm25", "数据库 迁移 why"], cold_runs)
    print(f"cold `gitmem search --mode bm25`: {seconds * 1000:5.0f} ms (peak RSS {rss:.0f} MB)")
    code = ("import sys; from pathlib import Path; from gitmem.config import Config; from gitmem.store.memories import "
            "MemoryRepo; from gitmem.search.index import open_index; "
            "open_index(MemoryRepo(Config(repo=Path(sys.argv[1]))), embedder=None).search(sys.argv[2], mode='bm25')")
    seconds, rss = cold([sys.executable, "-c", code, str(path), "数据库 迁移 why"], cold_runs)
    print(f"cold python -c open+search (BM25): {seconds * 1000:4.0f} ms (peak RSS {rss:.0f} MB)")
    seconds, rss = cold([gitmem, "--repo", str(path), "search", "数据库 迁移 why"], max(3, cold_runs // 2))
    print(f"cold `gitmem search` (hybrid): {seconds * 1000:8.0f} ms (peak RSS {rss:.0f} MB, includes the model load)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000")
    parser.add_argument("--with-100k", action="store_true", help="also run 100k (several minutes)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--embed", choices=["real", "random"], default=None)
    parser.add_argument("--cold-runs", type=int, default=7)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if args.with_100k and 100_000 not in sizes:
        sizes.append(100_000)
    root = Path(tempfile.mkdtemp(prefix="gitmem-scale-"))
    try:
        for size in sizes:
            embed = args.embed or ("real" if size <= 10_000 else "random")
            measure(size, args.queries, embed, args.cold_runs, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
