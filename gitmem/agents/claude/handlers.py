"""Claude Code hook handlers: what gitmem does on each event, given the event's JSON payload.

Each handler returns the JSON object to print (Claude Code's hook output schema) or None to print nothing.
:mod:`gitmem.agents.claude.entry` is the process entry point around them: it reads stdin, calls :func:`dispatch`,
and turns
every failure into exit 0 plus one line on stderr. Events and what they do:

- ``session-start``: directives not committed yet, the Essentials and Relevant memories (:mod:`gitmem.recall`),
  the project summary (without lines the Essentials contradict), hot paths and how many more memories exist, as
  ``additionalContext``; once per project per session, again after ``compact``/``clear``.
- ``user-prompt-submit``: the memories the prompt needs that the session has not seen yet
  (:mod:`gitmem.briefing.prompt`); standing instructions become pending directives of the session; corrections
  are appended to ``local/candidates.jsonl``.
- ``pre-tool-use`` / ``post-tool-use``: one observation line per call, hot paths.
- ``pre-compact``: a ``systemMessage`` with the high-priority directives.
- ``stop`` / ``session-end``: the session's pending directives become one commit with a ``Gitmem-Session`` trailer;
  after a commit, a detached warm-up prepares the next session's recall block (:mod:`gitmem.agents.claude.inputs`).

Directives are memories with the tag ``directive`` (type ``feedback``, category ``constraint`` or ``preference``,
importance 5 for high priority and 4 for normal) under the project's memory folder, with an id derived from the
project and the normalised instruction, so the same instruction is stored once.

The per-tool-call path imports only the standard library and gitmem's light modules
(:mod:`gitmem.agents.claude.context`, :mod:`gitmem.store.local`, :mod:`gitmem.redact`); the configuration, the
store, recall and the session start's inputs (:mod:`gitmem.agents.claude.inputs`) load only for the events that need
them. The prompt's path names its files with the context's strings
(``ctx.local_dir``): no ``pathlib``.
"""

from __future__ import annotations

import os

from gitmem.agents.claude import events
from gitmem.agents.claude.context import Context, HookInputError, log, make_context, spawn_detached
from gitmem.agents.claude.events import CLAUDE_NAMES as EVENTS
from gitmem.agents.claude.events import event_name
from gitmem.errors import ConfigError, GitmemError
from gitmem.store import local as observe

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs every tool call's hook process
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["EVENTS", "Context", "HookInputError", "dispatch", "event_name", "make_context"]


# -- helpers ---------------------------------------------------------------------------------------------


def _context_output(event: str, text: str) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": EVENTS[event], "additionalContext": text}}


# -- handlers --------------------------------------------------------------------------------------------
def session_start(ctx: Context, payload: dict[str, Any]) -> dict[str, Any] | None:
    from gitmem.agents.claude.inputs import (
        auto_pull,
        conflict_note,
        pending_directives,
        project_summary,
        recall_block,
        render_hot_paths,
    )
    from gitmem.briefing.directives import render_directives

    ctx.require_repo()
    source = str(payload.get("source") or "startup")
    project = ctx.project
    session = observe.get_session(ctx.local_dir, ctx.session_id) if ctx.session_id else {}
    if project in session.get("injected", []) and source not in ("compact", "clear"):
        return None
    pulled = auto_pull(ctx) if source == "startup" else ""
    block = recall_block(ctx, project)
    pending = [(priority, text) for memory_id, priority, text in pending_directives(ctx, project)
               if memory_id not in block.ids]
    query = block.query or project
    footer = _footer(ctx, project, query, block.more, shown=bool(block.text or pending))
    from gitmem.wiki.lifecycle import session_start_note  # the wiki: overview, or breadcrumb after compaction

    parts = [render_directives(pending), block.text, project_summary(ctx, project, block.avoid),
             render_hot_paths(ctx, project), conflict_note(ctx), pulled,
             session_start_note(ctx.repo, project, query, source), footer]
    text = "\n".join(p for p in parts if p)
    if ctx.session_id:
        def mark(entry: dict[str, Any]) -> None:
            if source in ("compact", "clear"):  # a context that starts again (no pre-compact before a /clear)
                observe.forget_given(entry)
            injected = [p for p in entry.get("injected", []) if p != project]
            entry.update(injected=[*injected, project], project=project, cwd=ctx.cwd, source=source,
                         started=entry.get("started") or observe.now_iso())
            observe.record_given(entry, block.whole(), block.parts)

        _record(ctx, "the session's entry", lambda: observe.update_session(ctx.local_dir, ctx.session_id, mark))
    return _context_output("session-start", text)


def _record(ctx: Context, what: str, write: Callable[[], object]) -> None:
    """One of the hook's own records (the session's entry, use counts, a candidate): a read-only or full disk costs
    the record, logged where a log can still be written, never the context the agent is given."""
    try:
        write()
    except OSError as exc:
        log(ctx, f"{what} not recorded: {type(exc).__name__}: {exc}")


def _footer(ctx: Context, project: str, query: str, more: int, *, shown: bool) -> str:
    """The session start's last line: how many memories it left out and how to search them, how to search the ones
    shown when it left none out, or that this project has none yet (a new repository)."""
    from gitmem.text.counted import counted  # here: the prompt's hook, which loads this module too, needs none of it

    where = f"(memory repo {ctx.repo_dir}; project {project})"
    words: list[str] = []
    for word in query.replace('"', " ").split():  # whole words, at most ~60 characters: a query, not a cut line
        if words and len(" ".join([*words, word])) > 60:
            break
        words.append(word)
    search = f'gitmem search "{" ".join(words)}"'
    if more:
        from gitmem.briefing.block import left_out_hint

        return f"{counted(more, 'more memory')} of {project} and global ones not shown; find them with: " \
               f"{left_out_hint(project)} {where}\n"
    if shown:
        return f"search the memories with: {search} {where}\n"
    return f"gitmem keeps no memories for {project} yet; they build up from sessions {where}\n"


#: prompts of a session kept as context for the next prompt's recall
PROMPT_CONTEXT = 2


def recall_for_prompt(ctx: Context, prompt: str, session: dict[str, Any]
                      ) -> tuple[str, list[str], list[tuple[str, int]]]:
    """(the block of the memories ``prompt`` needs that this session has not been given yet, the ids of those
    shown whole, ``(id, n)`` of the long ones shown by their part ``n``); ("", [], []) when none pass the gate.
    From a running ``gitmem serve`` when one answers (:mod:`gitmem.agents.claude.serverclient`), else in-process;
    ``session`` is the session's entry (what it was given, its previous prompts as context)."""
    seen = observe.read_ids(session.get("recalled"))
    seen_parts = observe.read_parts(session.get("parts"))
    previous = [str(p) for p in session.get("prompts", [])][-PROMPT_CONTEXT:]
    served = None
    if os.path.isfile(os.path.join(ctx.local_dir, observe.SERVER_FILE)):  # a gitmem serve recorded itself
        from gitmem.agents.claude.serverclient import ask_server

        request: dict[str, Any] = {"prompt": prompt, "project": ctx.project, "seen": seen, "previous": previous}
        if seen_parts:  # only then: a server older than parts refuses a field it does not know
            request["seen_parts"] = seen_parts
        served = ask_server(ctx, "/hook/prompt", request)
    if served is not None:
        return (str(served.get("text", "")), [str(i) for i in served.get("ids", [])],
                observe.read_parts(served.get("parts")))
    from gitmem.briefing.block import given
    from gitmem.briefing.prompt import prompt_recall

    text, hits = prompt_recall(ctx.indexed, prompt, project=ctx.project, seen=seen, previous=previous,
                               seen_parts=seen_parts)
    return (text, *given(hits))


def user_prompt_submit(ctx: Context, payload: dict[str, Any]) -> dict[str, Any] | None:
    """The memories the prompt needs; its standing instructions become pending directives of the session, a
    correction a candidate. The session's entry is written once: the prompt (as the next one's context), the
    memories given, the directives."""
    from gitmem.text.directives import detect_correction, detect_directives

    prompt = payload.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        return None
    ctx.require_repo()
    session = observe.get_session(ctx.local_dir, ctx.session_id) if ctx.session_id else {}
    unusable: GitmemError | None = None
    try:
        recalled, ids, parts = recall_for_prompt(ctx, prompt, session)
    except Exception as exc:  # a missing or busy index costs this prompt its memories, never the prompt itself
        log(ctx, f"prompt recall failed: {type(exc).__name__}: {exc}")
        recalled, ids, parts = "", [], []
        if isinstance(exc, ConfigError):  # the user's to mend (a broken gitmem.toml): raised once the prompt's
            unusable = exc  # own records below are kept
    directives = detect_directives(prompt)
    items: list[dict[str, Any]] = []
    if directives:
        from gitmem.text.directives import directive_key

        texts = [observe.summarise(d.text, 400, ctx.extra_patterns) for d in directives]
        items = [{"text": text, "priority": d.priority, "category": d.category,  # key: of the redacted text
                  "key": directive_key(text), "project": ctx.project, "time": observe.now_iso()}
                 for d, text in zip(directives, texts, strict=True)]

    def mark(entry: dict[str, Any]) -> None:
        if ctx.session_id:
            entry["prompts"] = [*entry.get("prompts", []), observe.summarise(prompt, 300, ctx.extra_patterns)][
                -PROMPT_CONTEXT:]
            observe.record_given(entry, ids, parts)
        if items:
            pending = [p for p in entry.get("pending", []) if isinstance(p, dict)]
            keys = {(p.get("project"), p.get("key")) for p in pending}
            for item in items:
                if (item["project"], item["key"]) not in keys:
                    pending.append(item)
                else:  # restated: keep the higher priority
                    for p in pending:
                        if (p.get("project"), p.get("key")) == (item["project"], item["key"]) and \
                                item["priority"] == "high":
                            p["priority"] = "high"
            entry["pending"] = pending

    if ctx.session_id or items:
        _record(ctx, "the session's entry",
                lambda: observe.update_session(ctx.local_dir, ctx.session_id or "unknown", mark))
    if ids or parts:
        from gitmem.store.usage import bump_usage

        used = list(dict.fromkeys([*ids, *(memory_id for memory_id, _n in parts)]))
        _record(ctx, "the use counts", lambda: bump_usage(ctx.repo_dir, used))
    correction = detect_correction(prompt)
    if correction is not None:
        _record(ctx, "a correction", lambda: observe.append_line(os.path.join(ctx.local_dir, "candidates.jsonl"), {
            "kind": "correction", "session": ctx.session_id, "time": observe.now_iso(), "project": ctx.project,
            "cwd": ctx.cwd, "text": observe.summarise(correction, 500, ctx.extra_patterns),
        }))
    if unusable is not None:
        raise unusable  # the entry says it in one line and exits 0; every prompt gets no memories until it is mended
    return _context_output("user-prompt-submit", recalled) if recalled else None


def _observe(ctx: Context, payload: dict[str, Any], phase: str) -> None:
    """The general path of the per-tool-call hook (:mod:`gitmem.agents.claude.toolcall` is the fast one)."""
    from gitmem.agents.claude.toolcall import observe_call

    ctx.require_repo()
    observe_call(ctx.local_dir, payload, phase, session=ctx.session_id, cwd=ctx.cwd, project=ctx.project,
                 extra_patterns=ctx.extra_patterns)


def pre_tool_use(ctx: Context, payload: dict[str, Any]) -> dict[str, Any] | None:
    _observe(ctx, payload, "pre")
    return None


def post_tool_use(ctx: Context, payload: dict[str, Any]) -> dict[str, Any] | None:
    _observe(ctx, payload, "post")
    return None


def pre_compact(ctx: Context, payload: dict[str, Any]) -> dict[str, Any] | None:
    ctx.require_repo()
    project = ctx.project
    if ctx.session_id:
        def mark(entry: dict[str, Any]) -> None:
            entry["compacted"] = [*entry.get("compacted", []), observe.now_iso()][-20:]
            # the context is about to go: the next SessionStart injects again, and a prompt may bring again what
            # earlier prompts brought (left as given, the memories a prompt had added never came back)
            entry["injected"] = []
            observe.forget_given(entry)

        # a read-only repository (a team's shared clone) cannot keep the mark: the rules still go to the agent
        _record(ctx, "the session's entry", lambda: observe.update_session(ctx.local_dir, ctx.session_id, mark))
    from gitmem.agents.claude.inputs import directives_for

    high = [(p, t) for p, t in directives_for(ctx, project) if p == "high"]
    from gitmem.wiki.lifecycle import breadcrumb  # the wiki survives compaction as one line

    crumb = breadcrumb(ctx.repo, project)
    if not high and not crumb:
        return None
    lines = "\n".join(f"- {' '.join(text.split())}" for _, text in high)
    message = f"gitmem: standing instructions for {project} (kept across compaction):\n{lines}" if high else ""
    return {"systemMessage": "\n".join(p for p in (message, f"gitmem: {crumb}" if crumb else "") if p)}


def commit_session(ctx: Context) -> str:
    """Commit the session's pending directives as one commit, then those other sessions left pending (their stop
    and end met a busy repository); returns the session's commit SHA ("" when there was nothing)."""
    from gitmem.briefing.directives import commit_pending

    ctx.require_repo()
    made = commit_pending(ctx.repository, ctx.local_dir, [ctx.session_id, *observe.pending_sessions(ctx.local_dir)])
    return made.get(ctx.session_id, "")


def _busy(exc: GitmemError, then: str) -> GitmemError:
    """The one line a stop or session end says when the repository stayed busy: nobody re-runs a hook, so it says
    what becomes of the directives instead of "try again"."""
    return GitmemError(f"{exc.message}; the session's directives stay pending and {then} commits them")


def stop(ctx: Context, payload: dict[str, Any]) -> dict[str, Any] | None:
    from gitmem.errors import LockTimeoutError

    try:
        committed = commit_session(ctx) if ctx.session_id else ""
    except LockTimeoutError as exc:
        raise _busy(exc, "the next stop or session end (of any session)") from exc
    if committed:
        from gitmem.agents.claude.inputs import spawn_warm

        spawn_warm(ctx)
    return None


def session_end(ctx: Context, payload: dict[str, Any]) -> dict[str, Any] | None:
    from gitmem.errors import LockTimeoutError

    busy: LockTimeoutError | None = None
    if ctx.session_id:
        try:
            committed = commit_session(ctx)
        except LockTimeoutError as exc:  # the rest of the session end does not depend on it
            committed, busy = "", exc
        observe.update_session(ctx.local_dir, ctx.session_id,
                               lambda e: e.update(ended=observe.now_iso(), reason=str(payload.get("reason", ""))))
        wiki_session_log(ctx, payload)
        if not spawn_learning(ctx, payload) and committed:
            from gitmem.agents.claude.inputs import spawn_warm

            spawn_warm(ctx)  # the learner warms after its own commits; without it, warm here
    if ctx.exists and ctx.config.sync.auto:
        spawn_detached(ctx, ["sync", "--timeout", str(ctx.config.sync.timeout)])
    if busy is not None:
        learner = "the session's learner (or the next stop or session end)" \
            if ctx.env.get("GITMEM_LEARN", "1") != "0" else "the next stop or session end (of any session)"
        raise _busy(busy, learner) from busy
    return None


def wiki_session_log(ctx: Context, payload: dict[str, Any]) -> str:
    """The session-log page of the project wiki (``wiki.auto_capture``), within its 3 s budget; a failure is
    logged and never stops the rest of the session end."""
    if not ctx.config.wiki.auto_capture:
        return ""
    from gitmem.wiki.lifecycle import capture_session_log

    transcript = payload.get("transcript_path")
    try:
        return capture_session_log(ctx.repository, session=ctx.session_id, project=ctx.project, local=ctx.local,
                                   transcript=transcript if isinstance(transcript, str) else "",
                                   reason=str(payload.get("reason", "")))
    except Exception as exc:  # the session log is a nicety: the directives above are already committed
        log(ctx, f"wiki session log not written: {type(exc).__name__}: {exc}")
        return ""


#: seconds the detached session-end learner may run before it ends itself
LEARN_TIMEOUT = 60


def spawn_learning(ctx: Context, payload: dict[str, Any]) -> bool:
    """Hand the session's learning (instincts, capture from the transcript, evolve) to a detached process that
    ends itself after :data:`LEARN_TIMEOUT` seconds; the hook never waits for it. ``GITMEM_LEARN=0`` turns it off.
    The learner then warms the recall block of the session's directory (unless ``GITMEM_WARM=0``)."""
    if ctx.env.get("GITMEM_LEARN", "1") == "0":
        return False
    args = ["learn-session", "--session", ctx.session_id, "--project", ctx.project, "--timeout", str(LEARN_TIMEOUT)]
    if ctx.env.get("GITMEM_WARM", "1") != "0" and ctx.in_a_project:
        args += ["--warm-cwd", ctx.cwd]
    transcript = payload.get("transcript_path")
    if isinstance(transcript, str) and transcript:
        args += ["--transcript", transcript]
    spawn_detached(ctx, args)
    return True


def prompt_with_notepad(ctx: Context, payload: dict[str, Any]) -> dict[str, Any] | None:
    """UserPromptSubmit: the handler above, then the notepad's priority notes (gitmem.router.notepad) as
    context for this prompt."""
    answer = user_prompt_submit(ctx, payload)
    if not ctx.exists:
        return answer
    if not os.path.isdir(os.path.join(ctx.local_dir, observe.NOTEPAD_DIR)):  # no notepad here: nothing to load
        return answer
    from gitmem.router.notepad import prompt_context

    note = prompt_context(ctx.local_dir, ctx.project)
    if not note:
        return answer
    recalled = answer["hookSpecificOutput"]["additionalContext"] if answer else ""
    return _context_output("user-prompt-submit", "\n".join(p for p in (note, recalled) if p))


#: event → handler, as the events table names them
HANDLERS: dict[str, Callable[[Context, dict[str, Any]], dict[str, Any] | None]] = {
    event: globals()[handler] for event, handler in events.HANDLERS.items()}


def dispatch(event: str, ctx: Context, payload: dict[str, Any]) -> dict[str, Any] | None:
    """Run the handler of ``event`` (a key of :data:`EVENTS`), once the memory repository is known to be one: no
    event writes anything (session entries, observations, caches, its log) into a folder that is not a memory
    repository, each refuses with :class:`~gitmem.errors.RepoNotFoundError` (one line on stderr, the details in the
    user's log)."""
    ctx.require_repo()
    return HANDLERS[event](ctx, payload)
