"""The per-tool-call hook (``PreToolUse`` / ``PostToolUse``) on its fast path.

A coding agent runs this hook before and after every tool call, so it must cost little more than starting Python:
it records one observation line (:mod:`gitmem.store.local`) and the hot path of the file the call touched, loading
nothing but ``os``, the C JSON accelerator and gitmem's light modules (:mod:`gitmem.store.local`,
:mod:`gitmem.redact`): no ``json``, ``pathlib``, configuration or ``threading``, and ``re`` only when the input holds
something a redaction rule must check (each costs the process milliseconds).

:func:`record` answers False when it cannot tell cheaply where and how to write: a ``.memrepo`` file above the
working directory, a settings file that sets ``repo``, ``project`` or ``extra_patterns``, a working directory whose
project is not cached yet, no memory repository (a folder without ``.git`` or without ``gitmem.toml``), an input it
cannot read or that is large.
:mod:`gitmem.agents.claude.entry` then runs the general handler
(:func:`gitmem.agents.claude.handlers.post_tool_use`), which reads the configuration, reports errors and caches the
project, so the next call in that directory takes this path."""

from __future__ import annotations

import os

from gitmem.files.places import REPO_CONFIG_NAME as REPO_CONFIG_NAME
from gitmem.files.places import derived_dir, is_memory_repo, user_cache_home, user_config_file
from gitmem.store import local as observe
from gitmem.text import quickjson

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs every tool call's hook process
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

#: events this module handles
EVENTS = ("pre-tool-use", "post-tool-use")
#: the keys of a tool's input that name the file it works on
FILE_KEYS = ("file_path", "notebook_path", "path")
#: inputs larger than this take the general path, whose watchdog bounds the time their redaction may take
MAX_FAST_INPUT = 256 * 1024
_SETTINGS = (b"repo", b"project", b"extra_patterns")


def names_a_setting(data: bytes) -> bool:
    """Whether a TOML file sets ``repo``, ``project`` or ``extra_patterns`` (at any table or dotted key): the
    settings that change where a hook writes or what it redacts. Errs towards yes, which only costs time."""
    for line in data.splitlines():
        key, equals, _ = line.partition(b"=")
        if equals and key.strip().rsplit(b".", 1)[-1].strip(b" \t\"'") in _SETTINGS:
            return True
    return False


def fast_repo(env: Mapping[str, str], home: str, cwd: str, repo_option: str | None = None) -> str | None:
    """The memory repository's path when it can be found without parsing any TOML, else None."""
    if repo_option is not None:
        repo = os.path.realpath(os.path.expanduser(repo_option))
    elif env.get("GITMEM_REPO"):
        repo = os.path.realpath(os.path.expanduser(env["GITMEM_REPO"]))
    else:
        repo = os.path.join(home, ".gitmem")
    directory = cwd
    while True:
        if os.path.isfile(os.path.join(directory, ".memrepo")):
            return None
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    for settings in (user_config_file(env, home), os.path.join(repo, "gitmem.toml")):
        try:
            with open(settings, "rb") as fh:
                if names_a_setting(fh.read()):
                    return None
        except FileNotFoundError:
            continue
        except OSError:
            return None
    return repo


def session_id(value: Any) -> str:
    """A session id safe in file names and logs ("" when the payload has none)."""
    if not isinstance(value, str | int):
        return ""
    # what re.sub(r"[^\w.:-]", "_", ...) gives, without importing re on the per-tool-call path
    return "".join(c if c.isalnum() or c in "_.:-" else "_" for c in str(value)[:100])


def working_directory(payload: Mapping[str, Any], cwd: str) -> str:
    """The payload's ``cwd`` with links resolved; when that folder is gone (deleted while the session ran), the
    nearest folder above it that is still there, not the hook process's own folder (another place altogether,
    which was then scanned as the session's project); the process's when the payload names none."""
    where = payload.get("cwd")
    if not (isinstance(where, str) and where and os.path.isabs(where)):
        return os.path.realpath(cwd)
    where = os.path.normpath(where)
    while not os.path.isdir(where) and os.path.dirname(where) != where:
        where = os.path.dirname(where)
    return os.path.realpath(where)


def observe_call(local: str | os.PathLike[str], payload: Mapping[str, Any], phase: str, *, session: str, cwd: str,
                 project: str, extra_patterns: tuple[str, ...] = ()) -> None:
    """Append the observation of one tool call (``phase`` "pre" or "post") and, after a call on a file, count
    that file as a hot path of ``project``."""
    tool_input = payload.get("tool_input")
    record: dict[str, Any] = {
        "session": session, "time": observe.now_iso(), "phase": phase, "tool": str(payload.get("tool_name", "")),
        "input": observe.summarise(tool_input, observe.SUMMARY_CHARS, extra_patterns),
    }
    if phase == "post":
        record["output"] = observe.summarise(payload.get("tool_response"), observe.SUMMARY_CHARS, extra_patterns)
    record.update(cwd=cwd, project=project)
    for key in ("tool_use_id", "agent_id"):
        if payload.get(key):
            record[key] = str(payload[key])
    observe.append_observation(local, record)
    if phase == "post" and isinstance(tool_input, dict):
        path = next((tool_input[k] for k in FILE_KEYS if isinstance(tool_input.get(k), str)), None)
        if path:
            from gitmem.store import hotpaths  # here: a call that names no file (most Bash calls) needs none of it

            hotpaths.touch_hot_path(local, project, path)


def record(event: str, data: bytes, *, env: Mapping[str, str], home: str, cwd: str) -> bool:
    """Handle ``event`` (one of :data:`EVENTS`) for the JSON ``data`` on the fast path; False when the general
    path must (see the module's docstring), having written nothing."""
    if event not in EVENTS or len(data) > MAX_FAST_INPUT:
        return False
    try:
        payload = quickjson.loads_input(data)
    except (ValueError, RecursionError):
        return False
    if not isinstance(payload, dict):
        return False
    where = working_directory(payload, cwd)
    repo = fast_repo(env, home, where)
    if repo is None or not is_memory_repo(repo):  # the general path refuses it: one line, the user's log
        return False
    local = os.path.join(repo, "local")
    project = observe.cached_project(derived_dir(repo, user_cache_home(env, home)), where)
    if project is None:
        return False
    observe_call(local, payload, "pre" if event == "pre-tool-use" else "post", session=session_id(
        payload.get("session_id")), cwd=where, project=project)
    return True
