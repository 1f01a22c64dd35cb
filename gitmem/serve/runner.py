"""Running the HTTP server: bind, warm the index, record where it listens in ``local/server.json``, serve."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gitmem.errors import GitmemError
from gitmem.files.atomic import atomic_write
from gitmem.serve.service import MemoryService
from gitmem.store import local

SERVER_FILE = Path("local") / local.SERVER_FILE


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: a free one), or a clear error."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise GitmemError(f"cannot listen on {host}:{port}: {exc.strerror}",
                          "pick another --port, or stop the process that uses it") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def warm(service: MemoryService) -> None:
    """Open the index and load the embedding model now, so the first request does not pay for it."""
    with service.locked() as repo:
        repo.search("warm up", k=1)


def record(repo_path: Path, url: str) -> tuple[Path, bytes]:
    """Write where this server listens, so local tools can find it; returns the file and what it held before (the
    record of another server of the repository, or nothing)."""
    path = repo_path / SERVER_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        before = path.read_bytes()
    except OSError:
        before = b""
    atomic_write(path, json.dumps({"url": url, "pid": os.getpid()}).encode())
    return path, before


def forget_record(path: Path, before: bytes = b"") -> None:
    """Remove this server's record, or put back the one it replaced when that server still runs: a second server
    of the repository that stopped took the first one's record with it, and the hooks stopped using the first."""
    with contextlib.suppress(OSError, ValueError):
        if json.loads(path.read_text("utf-8")).get("pid") != os.getpid():
            return  # another server recorded itself since: its record stays
        if before and _alive(json.loads(before.decode("utf-8")).get("pid")):
            atomic_write(path, before)
        else:
            path.unlink()


def _alive(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: it runs
        return True
    return True


def run_server(service: MemoryService, *, host: str, port: int, token: str | None, ui: bool, max_body: int,
               announce: Callable[[str], Any] = print) -> None:
    """Serve until interrupted (Ctrl-C or SIGTERM)."""
    import uvicorn

    from gitmem.serve.http import LOOPBACK_NAMES, create_app

    sock = bind(host, port)
    bound_port = sock.getsockname()[1]
    shown = f"[{host.strip('[]')}]" if ":" in host else host
    url = f"http://{shown}:{bound_port}"
    loopback = host.strip("[]") in LOOPBACK_NAMES or host.startswith("127.")
    app = create_app(service, token=token, max_body=max_body, ui=ui,
                     hosts=LOOPBACK_NAMES | {host.strip("[]")} if loopback else None)
    warm(service)
    marker, before = record(service.repo.path, url)
    announce(url)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", server_header=False)
    # uvicorn shuts down gracefully on SIGTERM, then raises the signal again with the previous handler: make that
    # handler an exit, so the record above is removed instead of the process dying on the spot
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        forget_record(marker, before)
        sock.close()
        signal.signal(signal.SIGTERM, previous)
