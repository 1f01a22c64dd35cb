"""``gitmem serve`` under load: retrieve latency with 1, 10 and 50 concurrent loopback clients, and the RSS.

    python bench/serve_http.py [--size 10000] [--requests 300] [--clients 1,10,50] [--embed random|real]
                               [--mode hybrid|bm25]

Builds a memory repository of ``--size`` synthetic English/Chinese memories (``bench/scale.py``'s generator;
``--embed random`` fills the vector cache with random unit vectors of the real model's shape, as ``scale.py``
does, so hybrid queries cost what they cost with real vectors; the query itself is embedded by the real model),
starts ``gitmem serve`` as a user would (its own process, 127.0.0.1, a free port) and waits for ``/health``.
Then for each client count, that many concurrent clients (asyncio + httpx, one connection each) send
``GET /memory/retrieve`` with the queries of ``scale.py`` until ``--requests`` requests are done; prints the
p50/p95/max latency a client sees, the throughput, and the server's RSS (current and peak, from /proc).
``--mode bm25`` starts the server with ``[embedding] model = "none"``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale import ENV, QUERIES, fill_random_vectors, pct, synthetic  # type: ignore[import-not-found]

from gitmem.config import Config
from gitmem.search.index import Index
from gitmem.store.layout import init_repo
from gitmem.store.memories import MemoryRepo


def build(root: Path, size: int, embed: str, mode: str) -> Path:
    from gitmem.embeddings.runtime import EmbedSpec, load_embedder

    path = root / f"mem{size}"
    init_repo(path, author="bench <b@x>")
    if mode == "bm25":
        (path / "gitmem.toml").write_text('[embedding]\nmodel = "none"\n')
    repo = MemoryRepo(Config(repo=path, author="bench <b@x>"))
    started = time.perf_counter()
    repo.import_records(synthetic(size), origin="bench")
    Index(repo, embedder=None).rebuild(vectors=False)
    if mode == "hybrid":
        embedder = load_embedder(EmbedSpec())
        hybrid = Index(repo, embedder=embedder)
        if embed == "real":
            hybrid.rebuild(vectors=True)
        else:
            fill_random_vectors(hybrid, embedder)
    print(f"{size} memories imported and indexed in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return path


def rss_mb(pid: int) -> tuple[float, float]:
    """(current, peak) resident set size of ``pid`` in MB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


async def load(base: str, clients: int, requests: int) -> tuple[list[float], float]:
    latencies: list[float] = []
    queue = list(range(requests))

    async def client(number: int) -> None:
        async with httpx.AsyncClient(base_url=base, timeout=60) as http:
            while queue:
                n = queue.pop()
                query = QUERIES[(n + number) % len(QUERIES)]
                started = time.perf_counter()
                response = await http.get("/memory/retrieve", params={"query": query, "top_k": 10})
                latencies.append(time.perf_counter() - started)
                response.raise_for_status()

    started = time.perf_counter()
    await asyncio.gather(*(client(i) for i in range(clients)))
    return latencies, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--clients", default="1,10,50")
    parser.add_argument("--embed", choices=["random", "real"], default="random")
    parser.add_argument("--mode", choices=["hybrid", "bm25"], default="hybrid")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="gitmem-serve-bench-"))
    gitmem = shutil.which("gitmem", path=str(Path(sys.executable).parent)) or "gitmem"
    try:
        path = build(root, args.size, args.embed, args.mode)
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        env = {**ENV, "GITMEM_WARM": "0", "HOME": str(root)}
        started = time.perf_counter()
        server = subprocess.Popen([gitmem, "--repo", str(path), "serve", "--port", str(port)], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        base = f"http://127.0.0.1:{port}"
        while True:
            try:
                if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if server.poll() is not None:
                raise SystemExit(server.stderr.read().decode() if server.stderr else "the server stopped")
            time.sleep(0.1)
        ready = time.perf_counter() - started
        idle, _ = rss_mb(server.pid)
        print(f"\nserver ready in {ready:.1f} s (index opened, model loaded); RSS idle {idle:.0f} MB")
        print(f"{args.size} memories, mode {args.mode}, {args.requests} requests per level, loopback, "
              f"{os.cpu_count()} CPUs")
        print(f"{'clients':>7} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'req/s':>7} {'RSS MB':>7} {'peak MB':>8}")
        try:
            asyncio.run(load(base, 1, 20))  # warm-up: first queries fill caches
            for clients in (int(c) for c in args.clients.split(",")):
                latencies, wall = asyncio.run(load(base, clients, args.requests))
                now, peak = rss_mb(server.pid)
                print(f"{clients:7d} {pct(latencies, 0.5) * 1000:8.1f} {pct(latencies, 0.95) * 1000:8.1f} "
                      f"{max(latencies) * 1000:8.1f} {len(latencies) / wall:7.1f} {now:7.0f} {peak:8.0f}")
        finally:
            server.terminate()
            server.wait(timeout=30)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
