"""The hook process: ``gitmem-hook <event>`` (or ``python -m gitmem.hookmain <event>``, or ``gitmem hook <event>``).

Reads the event's JSON on stdin, runs :func:`gitmem.hooks.dispatch`, prints the answer on stdout. It never hurts
the agent: bad input, an unknown event, no memory repository, a locked or read-only repository or any exception
ends with exit status 0, one line on stderr and the details in ``<repo>/local/gitmem.log`` (or
``~/.local/state/gitmem/gitmem.log`` without a repository). Slow events have a deadline after which the process
exits 0 on its own, well before Claude Code's hook timeout.

This module avoids click and imports the handlers' dependencies only when an event needs them, so the
per-tool-call hook costs little more than starting Python.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs every tool call's hook process
if TYPE_CHECKING:
    from typing import Any, TextIO

#: seconds after which a slow hook gives up and exits 0 (override with GITMEM_HOOK_DEADLINE); every event has one
#: (in the events table), so nothing (a locked file system, a pathological input) can hold the agent for Claude
#: Code's whole hook timeout
DEFAULT_DEADLINE = 10.0
MAX_INPUT = 16 * 1024 * 1024


def _parse(data: bytes) -> dict[str, Any]:
    from gitmem.hooks import HookInputError

    if len(data) > MAX_INPUT:
        raise HookInputError(f"the hook input is larger than {MAX_INPUT} bytes", "nothing was recorded")
    try:
        payload = json.loads(data.decode("utf-8", "replace") or "null")
    except json.JSONDecodeError as exc:
        raise HookInputError(f"the hook input is not JSON ({exc.msg} at {exc.pos})", "nothing was recorded") from None
    except RecursionError:
        raise HookInputError("the hook input is JSON nested too deeply", "nothing was recorded") from None
    if not isinstance(payload, dict):
        raise HookInputError("the hook input is not a JSON object", "nothing was recorded")
    return payload


def _report(event: str, exc: BaseException, ctx: Any, env: Mapping[str, str], home: Path, err: TextIO) -> None:
    import time
    import traceback

    from gitmem.errors import GitmemError

    def log_path(repo: Path | None) -> Path:
        if repo is not None:
            return repo / "local" / "gitmem.log"
        return Path(env.get("XDG_STATE_HOME") or home / ".local" / "state") / "gitmem" / "gitmem.log"

    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    try:
        repo = ctx.repo if ctx is not None and ctx.exists else None
    except Exception:
        repo = None
    path = log_path(repo)
    detail = "".join(traceback.format_exception(exc)) if not isinstance(exc, GitmemError) else f"{exc}\n"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as fh:
            session = getattr(ctx, "session_id", "") if ctx is not None else ""
            fh.write(f"{stamp} hook {event} session={session}: {detail}")
    except OSError:
        fallback = log_path(None)
        if fallback != path:
            try:
                fallback.parent.mkdir(parents=True, exist_ok=True)
                with fallback.open("a", encoding="utf-8") as fh:
                    fh.write(f"{stamp} hook {event}: {detail}")
                path = fallback
            except OSError:
                pass
    message = str(exc) if isinstance(exc, GitmemError) else f"internal error: {type(exc).__name__}: {exc}"
    line = " ".join(f"gitmem hook {event}: {message} (details in {path})".split())
    try:
        err.write(line[:600] + "\n")
        err.flush()
    except (OSError, ValueError):
        pass


def _watchdog(event: str, env: Mapping[str, str], out: TextIO) -> Any:
    """Start the timer that ends the process (exit 0) at the event's deadline; returns it, or None."""
    from gitmem.agents.claude.events import DEADLINES

    deadline: float | None = DEADLINES.get(event, DEFAULT_DEADLINE)
    try:
        deadline = float(env.get("GITMEM_HOOK_DEADLINE") or deadline or 0)
    except ValueError:
        deadline = DEADLINES.get(event, DEFAULT_DEADLINE)
    if not deadline:
        return None
    import threading

    def expire() -> None:
        try:
            sys.stderr.write(f"gitmem hook {event}: gave up after {deadline:g} s\n")
            sys.stderr.flush()
            out.flush()
        finally:
            os._exit(0)

    timer = threading.Timer(deadline, expire)
    timer.daemon = True
    timer.start()
    return timer


@contextlib.contextmanager
def _stdout_to_stderr(out: TextIO, err: TextIO) -> Iterator[None]:
    """Send everything written to stdout (by Python code or by native libraries) to stderr for a while."""
    try:
        fd, err_fd = out.fileno(), err.fileno()
    except (AttributeError, OSError, ValueError):  # not real files (tests, embedding): Python-level only
        fd = err_fd = -1
    saved = -1
    if fd >= 0:
        out.flush()
        saved = os.dup(fd)
        os.dup2(err_fd, fd)
    try:
        with contextlib.redirect_stdout(err):
            yield
    finally:
        if saved >= 0:
            err.flush()
            os.dup2(saved, fd)
            os.close(saved)


def run(event: str, data: bytes, *, env: Mapping[str, str], cwd: Path, home: Path,
        repo_option: Path | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Handle one hook call; always returns 0."""
    out = out or sys.stdout
    err = err or sys.stderr
    ctx: Any = None
    name = event
    timer: Any = None
    try:
        from gitmem.agents.claude.events import CLAUDE_NAMES
        from gitmem.hooks import HookInputError, dispatch, event_name, make_context

        known = event_name(event)
        if known is None:
            raise HookInputError(f"unknown event {event!r}", f"use one of: {', '.join(CLAUDE_NAMES)}")
        name = known
        timer = _watchdog(name, env, out)
        payload = _parse(data)
        ctx = make_context(payload, env=env, home=home, cwd=cwd, repo_option=repo_option)
        with _stdout_to_stderr(out, err):  # stdout carries exactly one JSON answer
            answer = dispatch(name, ctx, payload)
        if answer is not None:
            out.write(json.dumps(answer, ensure_ascii=False) + "\n")
            out.flush()
    except BaseException as exc:  # never hurt the agent: exit 0, one line, details in the log
        if ctx is None:  # find the repository for the log even when the payload was unusable
            try:
                from gitmem.hooks import make_context

                ctx = make_context({}, env=env, home=home, cwd=cwd, repo_option=repo_option)
            except BaseException:
                ctx = None
        _report(name, exc, ctx, env, home, err)
    finally:
        if timer is not None:  # the call is over: a process that runs more calls must not be ended later
            timer.cancel()
    return 0


def main(argv: list[str] | None = None) -> int:
    """Console-script entry point: ``gitmem-hook <event>``."""
    args = sys.argv[1:] if argv is None else argv
    event = args[0] if args else ""
    try:
        data = sys.stdin.buffer.read(MAX_INPUT + 1) if event else b""
    except (OSError, ValueError):
        data = b""
    env = dict(os.environ)
    try:
        cwd = Path.cwd()
    except OSError:
        cwd = Path(env.get("HOME") or "/")
    return run(event, data, env=env, cwd=cwd, home=Path(env.get("HOME") or Path.home()))


if __name__ == "__main__":
    sys.exit(main())
