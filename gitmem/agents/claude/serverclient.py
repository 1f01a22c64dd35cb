"""The hooks' way to a running ``gitmem serve``: session start and each prompt ask it for their memory block
when one accepts the connection within :data:`CONNECT_TIMEOUT` (50 ms), so the hook process loads neither the
index nor the embedding model; the answer may take up to :data:`READ_TIMEOUT`.

``gitmem serve`` records its URL and pid in ``local/server.json`` (:mod:`gitmem.serve.runner`). No record: the
hook works in-process without a word. A record whose process is gone, a refused connection, a timeout or an
error answer: the hook works in-process and writes one line to the local log. The server computes the block
with the same library function the hook would call, so the text injected is the same either way. With a token
configured (``GITMEM_TOKEN``, as ``gitmem serve --token`` reads it), the hook sends it.

Standard library only, loaded lazily by the two events that use it: the per-tool-call hooks never import it.
"""

from __future__ import annotations

import os

from gitmem.agents.claude.context import Context, log
from gitmem.store.local import SERVER_FILE
from gitmem.text import quickjson

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: see gitmem.agents.claude.handlers
if TYPE_CHECKING:
    from typing import Any

#: seconds the server may take to accept the connection: a server that does not is not used
CONNECT_TIMEOUT = 0.05
#: seconds a connected server may take to answer (``GITMEM_SERVER_TIMEOUT`` overrides): with the embedding model,
#: the server's session block takes longer than 50 ms, yet far less than the hook loading the model itself
READ_TIMEOUT = 2.0


def ask_server(ctx: Context, path: str, body: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON answer of the running server to ``POST path`` with ``body``; None when no server answers in time
    (then the caller works in-process)."""
    try:
        with open(os.path.join(ctx.local_dir, SERVER_FILE), encoding="utf-8") as fh:
            record = quickjson.loads(fh.read())
    except (OSError, ValueError, SystemError):  # SystemError: _json's scanner on some damaged text
        return None  # no server recorded: the usual case, not worth a log line
    from http.client import HTTPConnection
    from urllib.parse import urlsplit

    url = str(record.get("url", "")) if isinstance(record, dict) else ""
    connection: HTTPConnection | None = None
    try:
        _alive(int(record["pid"]))
        where = urlsplit(url)
        if where.scheme != "http" or not where.hostname or not where.port:
            raise ValueError(f"not an http URL: {url!r}")
        connection = HTTPConnection(where.hostname, where.port, timeout=CONNECT_TIMEOUT)
        connection.connect()
        assert connection.sock is not None
        connection.sock.settimeout(float(ctx.env.get("GITMEM_SERVER_TIMEOUT") or READ_TIMEOUT))
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        token = ctx.env.get("GITMEM_TOKEN")
        if token:
            headers["Authorization"] = f"Bearer {token}"
        connection.request("POST", path, body=quickjson.dumps(body).encode(), headers=headers)
        response = connection.getresponse()
        data = response.read()
        if response.status != 200:
            raise ValueError(f"HTTP {response.status}: {data[:200].decode('utf-8', 'replace')}")
        answer = quickjson.loads(data.decode("utf-8", "replace"))
        if not isinstance(answer, dict):
            raise ValueError("the answer is not a JSON object")
        return answer
    except Exception as exc:  # any failure of the server costs only its speed: the hook works in-process
        log(ctx, f"server {url or '?'} not used for {path}, working in-process: {type(exc).__name__}: {exc}")
        return None
    finally:
        if connection is not None:
            connection.close()


def _alive(pid: int) -> None:
    """Raise ProcessLookupError when no process ``pid`` runs (a server that died without removing its record)."""
    try:  # noqa: SIM105 - not contextlib: the prompt hook would import it for this line alone
        os.kill(pid, 0)
    except PermissionError:  # it runs, as another user
        pass
