"""A real ``gitmem serve`` process on a free loopback port, for the tests that need one."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import httpx

from tests.helpers import GITMEM


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def running_server(repo: Path, *args: str, env: Mapping[str, str] | None = None,
                   token: str | None = None) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """Start ``gitmem --repo REPO serve ARGS`` and yield (process, base URL) once it has recorded itself in
    ``local/server.json`` and answers ``/health``; stderr stays readable after the process ends."""
    port = free_port()
    proc = subprocess.Popen([GITMEM, "--repo", str(repo), "serve", *args, "--port", str(port)],
                            env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        deadline = time.monotonic() + 60
        while not (repo / "local" / "server.json").exists() or not _healthy(base, headers):
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            assert time.monotonic() < deadline, "the server did not answer within 60 s"
            time.sleep(0.2)
        yield proc, base
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def _healthy(base: str, headers: Mapping[str, str]) -> bool:
    try:
        return httpx.get(f"{base}/health", timeout=1, headers=dict(headers)).status_code == 200
    except httpx.TransportError:
        return False
