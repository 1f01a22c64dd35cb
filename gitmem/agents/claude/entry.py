"""The hook process: ``gitmem-hook <event>`` (or ``python -m gitmem.agents.claude.entry <event>``, or
``gitmem hook <event>``).

Reads the event's JSON on stdin, runs :func:`gitmem.agents.claude.handlers.dispatch`, prints the answer on stdout.
It never hurts
the agent: bad input, an unknown event, no memory repository, a locked or read-only repository or any exception
ends with exit status 0, one line on stderr and the details in ``<repo>/local/gitmem.log`` (or
``~/.local/state/gitmem/gitmem.log`` without a repository). Slow events have a deadline after which the process
exits 0 on its own, well before Claude Code's hook timeout.

This module avoids click and imports the handlers' dependencies only when an event needs them, so the
per-tool-call hook costs little more than starting Python: ``pre-tool-use`` and ``post-tool-use`` first try the
fast path of :mod:`gitmem.agents.claude.toolcall` (``os`` and the observation log only), and load the general
machinery below (the handlers, the configuration) only when it declines. Neither path imports ``pathlib``,
``threading`` (the watchdog is a ``_thread`` waiting on a lock) or ``signal`` (which loads ``enum``).
"""

from __future__ import annotations

import os
import sys

from gitmem.agents.claude import toolcall
from gitmem.text import quickjson

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs every tool call's hook process
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, NoReturn, TextIO

    from gitmem.config import StrPath

#: seconds after which a slow hook gives up and exits 0 (override with GITMEM_HOOK_DEADLINE); every event has one
#: (in the events table), so nothing (a locked file system, a pathological input) can hold the agent for Claude
#: Code's whole hook timeout
DEFAULT_DEADLINE = 10.0
MAX_INPUT = 16 * 1024 * 1024


def _parse(data: bytes) -> dict[str, Any]:
    from gitmem.agents.claude.handlers import HookInputError

    if len(data) > MAX_INPUT:
        raise HookInputError(f"the hook input is larger than {MAX_INPUT} bytes", "nothing was recorded")
    try:
        payload = quickjson.loads_input(data)
    except RecursionError:
        raise HookInputError("the hook input is JSON nested too deeply", "nothing was recorded") from None
    except ValueError as exc:  # json.JSONDecodeError: say where
        where = f" ({exc.msg} at {exc.pos})" if hasattr(exc, "msg") and hasattr(exc, "pos") else ""
        raise HookInputError(f"the hook input is not JSON{where}", "nothing was recorded") from None
    if not isinstance(payload, dict):
        raise HookInputError("the hook input is not a JSON object", "nothing was recorded")
    return payload


def _report(event: str, exc: BaseException, ctx: Any, env: Mapping[str, str], home: StrPath, err: TextIO) -> None:
    import traceback

    from gitmem.agents.claude.context import append_log, log_path
    from gitmem.errors import GitmemError
    from gitmem.store.local import now_iso

    stamp = now_iso()
    try:
        repo = ctx.repo_dir if ctx is not None and ctx.exists else None
    except Exception:
        repo = None
    detail = "".join(traceback.format_exception(exc)).rstrip("\n") if not isinstance(exc, GitmemError) else str(exc)
    session = getattr(ctx, "session_id", "") if ctx is not None else ""
    path = append_log(repo, env, home, f"{stamp} hook {event} session={session}: {detail}")
    if isinstance(exc, GitmemError):
        message = str(exc)
    elif isinstance(exc, OSError) and exc.filename:  # a read-only or full disk: a place, not a bug
        message = f"cannot write {exc.filename}: {exc.strerror or exc}; this call's record is lost, nothing else"
    else:
        message = f"internal error: {type(exc).__name__}: {exc}"
    where = f"details in {path}" if path else f"no log could be written: {log_path(repo, env, home)}"
    line = " ".join(f"gitmem hook {event}: {message} ({where})".split())
    try:
        err.write(line[:600] + "\n")
        err.flush()
    except (OSError, ValueError):
        pass


def _watchdog(event: str, env: Mapping[str, str], out: TextIO) -> Any:
    """Start the timer that ends the process (exit 0) at the event's deadline; returns the lock whose release
    cancels it, or None.

    The timer is a thread of :mod:`_thread` (the documented primitive :mod:`threading` is built on) that waits on
    a held lock for ``deadline`` seconds: released in time, it returns; not, it ends the process. ``threading``
    (~4 ms) and ``signal.setitimer`` (``signal`` imports ``enum``: ~9 ms) would cost every prompt's hook more."""
    import _thread

    from gitmem.agents.claude.events import DEADLINES

    deadline: float | None = DEADLINES.get(event, DEFAULT_DEADLINE)
    try:
        deadline = float(env.get("GITMEM_HOOK_DEADLINE") or deadline or 0)
    except ValueError:
        deadline = DEADLINES.get(event, DEFAULT_DEADLINE)
    if not deadline:
        return None
    cancel = _thread.allocate_lock()
    cancel.acquire()

    def expire(seconds: float) -> None:
        if cancel.acquire(timeout=seconds):
            return  # the call ended in time
        try:
            sys.stderr.write(f"gitmem hook {event}: gave up after {seconds:g} s\n")
            sys.stderr.flush()
            out.flush()
        finally:
            os._exit(0)

    _thread.start_new_thread(expire, (min(deadline, _thread.TIMEOUT_MAX),))
    return cancel


class _StdoutToStderr:
    """Send everything written to stdout (by Python code or by native libraries) to stderr for a while."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out, self.err = out, err
        self.saved = -1
        self.python_stdout: TextIO | None = None

    def __enter__(self) -> None:
        try:
            self.fd, err_fd = self.out.fileno(), self.err.fileno()
        except (AttributeError, OSError, ValueError):  # not real files (tests, embedding): Python-level only
            self.fd = err_fd = -1
        if self.fd >= 0:
            self.out.flush()
            self.saved = os.dup(self.fd)
            os.dup2(err_fd, self.fd)
        self.python_stdout, sys.stdout = sys.stdout, self.err

    def __exit__(self, *exc: object) -> None:
        sys.stdout = self.python_stdout or sys.__stdout__
        if self.saved >= 0:
            self.err.flush()
            os.dup2(self.saved, self.fd)
            os.close(self.saved)


def run(event: str, data: bytes, *, env: Mapping[str, str], cwd: StrPath, home: StrPath,
        repo_option: StrPath | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Handle one hook call; always returns 0."""
    out = out or sys.stdout or _nowhere()  # None: the agent started the hook with that stream closed
    err = err or sys.stderr or _nowhere()
    ctx: Any = None
    name = event
    timer: Any = None
    try:
        from gitmem.agents.claude.events import CLAUDE_NAMES
        from gitmem.agents.claude.handlers import HookInputError, dispatch, event_name, make_context

        known = event_name(event)
        if known is None:
            raise HookInputError(f"unknown event {event!r}", f"use one of: {', '.join(CLAUDE_NAMES)}")
        name = known
        timer = _watchdog(name, env, out)
        payload = _parse(data)
        ctx = make_context(payload, env=env, home=home, cwd=cwd, repo_option=repo_option)
        with _StdoutToStderr(out, err):  # stdout carries exactly one JSON answer
            answer = dispatch(name, ctx, payload)
        if answer is not None:
            out.write(quickjson.dumps(answer) + "\n")
            out.flush()
    except BaseException as exc:  # never hurt the agent: exit 0, one line, details in the log
        if ctx is None:  # find the repository for the log even when the payload was unusable
            try:
                from gitmem.agents.claude.handlers import make_context

                ctx = make_context({}, env=env, home=home, cwd=cwd, repo_option=repo_option)
            except BaseException:
                ctx = None
        _report(name, exc, ctx, env, home, err)
    finally:
        if timer is not None:  # the call is over: a process that runs more calls must not be ended later
            timer.release()
    return 0


def _nowhere() -> TextIO:
    """Where the output of a stream the hook was started without goes."""
    return open(os.devnull, "w", encoding="utf-8")  # the process's own until it ends


def read_input(event: str) -> bytes:
    """The event's JSON from stdin, at most ``MAX_INPUT`` + 1 bytes (more is refused as too large); nothing when
    there is no event, or no stdin to read (closed: ``sys.stdin`` is None, or a read fails)."""
    stdin = getattr(sys.stdin, "buffer", None)
    if not event or stdin is None:
        return b""
    try:
        data: bytes = stdin.read(MAX_INPUT + 1)
    except (OSError, ValueError):
        return b""
    return data


def main(argv: list[str] | None = None) -> int:
    """The hook process: ``gitmem-hook <event>`` (the script ``hooks/gitmem-hook``) and
    ``python -m gitmem.agents.claude.entry <event>``."""
    args = sys.argv[1:] if argv is None else argv
    event = args[0] if args else ""
    if event in ("-h", "--help"):  # a person at a terminal, not the agent: usage, no stdin read, nothing logged
        from gitmem.agents.claude.events import CLAUDE_NAMES

        print(f"usage: gitmem-hook EVENT < payload.json\n\nthe command Claude Code runs for each hook event; "
              f"EVENT is one of: {', '.join(CLAUDE_NAMES)}\n(gitmem install claude writes the settings that run it)")
        return 0
    data = read_input(event)
    env = dict(os.environ)
    home = env.get("HOME") or os.path.expanduser("~")
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = env.get("HOME") or "/"
    if event in toolcall.EVENTS:
        try:
            if toolcall.record(event, data, env=env, home=home, cwd=cwd):
                return 0
        except BaseException as exc:  # never hurt the agent: exit 0, one line, details in the log
            from gitmem.agents.claude.handlers import make_context

            try:
                ctx = make_context({}, env=env, home=home, cwd=cwd)
            except BaseException:
                ctx = None
            _report(event, exc, ctx, env, home, sys.stderr or _nowhere())
            return 0
    return run(event, data, env=env, cwd=cwd, home=home)


def end(status: int) -> NoReturn:
    """End the hook process with ``status`` once its output is flushed, without the interpreter's teardown.

    The teardown (every module's objects freed one by one, a last collection of cycles) cost a prompt's hook
    ~8 ms of CPU and more of wall time, after its answer was written. Nothing of a hook needs it: every file it
    writes is written whole (atomic writes, appended lines) and closed before the handler returns, its locks are
    the process's own (released when it exits) and what it hands on runs in detached processes, as when the
    watchdog ends a slow hook the same way."""
    for stream in (sys.stdout, sys.stderr):
        try:  # not contextlib.suppress: importing it costs the hook more than these lines
            if stream is not None:  # None: started with that stream closed
                stream.flush()
        except (OSError, ValueError):  # a closed pipe: the agent stopped listening, the hook still exits
            pass
    os._exit(status)


if __name__ == "__main__":
    end(main())
