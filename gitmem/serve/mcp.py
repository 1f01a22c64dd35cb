"""``gitmem mcp``: the memory as MCP tools over stdio (the official ``mcp`` SDK).

The tools are layered so an agent spends context only on what it reads: ``memory_search`` returns an index of
rows (id, title, kind, age, a one-line snippet and what the whole memory would cost in tokens), ``memory_get``
returns the memories the agent picked, ``memory_history`` their commits. Writes go through the same library
calls as the CLI (validation, redaction, one commit each); ``memory_remember`` defaults to the project of the
folder the server was started in, as ``gitmem remember`` does, and a retried call returns the memory it stored.
A :class:`~gitmem.errors.GitmemError` becomes a tool error carrying the CLI's one-line message and hint, arguments
that do not fit a tool's schema one naming each argument and what is wrong with it (as the HTTP API says it), an
argument the tool does not take one naming it and the arguments the tool takes; anything else is logged and
reported without a traceback.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import pydantic
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, InputRequiredResult, TextContent, ToolAnnotations
from pydantic import Field

from gitmem import __version__
from gitmem.errors import GitmemError, NotFoundError
from gitmem.serve.service import MemoryService, memory_view
from gitmem.store.wikipage import CATEGORIES as WIKI_CATEGORIES
from gitmem.store.wikipage import CONFIDENCES
from gitmem.text.counted import counted

F = TypeVar("F", bound=Callable[..., Any])
MemoryType = Literal["user", "feedback", "project", "reference"]
Category = Literal["background", "decision", "preference", "constraint", "correction"]
Scope = Literal["project", "global", "session"]

INSTRUCTIONS = (
    "Long-term memory of this user and their projects, kept in a git repository. Before acting on a task, "
    "call memory_search with what the task is about; read only the rows that matter with memory_get. Store a "
    "lasting rule, preference or decision with memory_remember; deprecate a wrong one with memory_forget. "
    "The project wiki holds longer notes (architecture, debugging, decisions): wiki_query searches it, "
    "wiki_ingest adds to a page."
)
#: a memory whose whole text costs at most this many tokens is shown whole in a search row
INLINE_TOKENS = 40
# descriptions of arguments are module constants: the SDK evaluates the annotations in the module's namespace
PROJECT_HELP = "Project id (default: the project of the folder the server was started in)."
REMEMBER_PROJECT_HELP = ("Project id, for a project-only memory (default: the code project the server was started "
                         "in; none outside one).")
SEARCH_PROJECT_HELP = ("This project's memories plus the global ones (default: the code project the server was "
                       "started in; \"*\": every project).")
SCOPE_HELP = ("global: holds in every project; project (the default with a project): only there; session: "
              "only there, and it expires.")
WIKI_CATEGORY_HELP = f"One of {', '.join(WIKI_CATEGORIES)} (default for a new page: reference)."
CONFIDENCE_HELP = f"How sure: one of {', '.join(CONFIDENCES)} (default: medium)."
READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


class _Server(MCPServer):
    """The SDK's server, with arguments that do not fit a tool's schema reported in one line, and arguments a tool
    does not take refused.

    The SDK validates the arguments with the tool's pydantic model and raises a :class:`ToolError` whose text is
    pydantic's multi-line dump (the model's name, the rejected value, a link to pydantic's documentation) and
    whose ``__cause__`` is the :class:`pydantic.ValidationError`. :meth:`call_tool` is the SDK's public entry
    for every call (its request handler and in-process callers go through it), so the text is replaced there;
    the cause is kept, so the SDK still logs only the rejected fields' names. The model ignores a key it has no
    field for, so a misspelt filter (``projet``) or another tool's name for an argument (``limit`` for ``k``)
    ran as if it were absent; such keys are refused there too, before the tool runs, against the properties of
    the input schema the client lists (the context the SDK injects is not one of them)."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
                        ) -> CallToolResult | InputRequiredResult:
        accepted = await self._accepted_arguments(name)
        if accepted is not None and (unknown := [key for key in arguments if key not in accepted]):
            raise ToolError(f"Error executing tool {name}: {unknown_arguments(unknown, accepted)}")
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(exc, UnexpectedToolError) or not isinstance(cause, pydantic.ValidationError):
                raise
            raise ToolError(f"Error executing tool {name}: {argument_problems(cause)}") from cause

    async def _accepted_arguments(self, name: str) -> list[str] | None:
        """The arguments tool ``name`` takes, in the order it declares them, as its listed input schema names
        them; None for a tool the server does not have (the SDK reports it)."""
        for tool in await self.list_tools():
            if tool.name == name:
                return list(tool.input_schema.get("properties") or {})
        return None


def unknown_arguments(unknown: list[str], accepted: list[str]) -> str:
    """The arguments a tool does not take and those it does, on one line, as the HTTP API refuses a field it does
    not take (``unknown argument(s) 'limit' (accepted: query, k, ...)``); a name is quoted as Python would, so
    one holding a line break stays on the line."""
    names = ", ".join(repr(key) for key in sorted(set(unknown)))
    return f"unknown argument(s) {names} (accepted: {', '.join(accepted) or 'none'})"


def argument_problems(error: pydantic.ValidationError) -> str:
    """Each argument that does not fit and what is wrong with it, on one line, as the HTTP API says it
    (``k: Input should be greater than or equal to 1``); the rejected values are the caller's own data."""
    problems: list[str] = []
    for item in error.errors(include_url=False, include_input=False):
        where = ".".join(str(part) for part in item["loc"]) or "arguments"
        problem = f"{where}: {item['msg']}"
        if problem not in problems:
            problems.append(problem)
    return "; ".join(problems)


def _tool_errors(func: F) -> F:
    """Report library errors as tool errors with the CLI's message (the SDK prefixes the tool's name)."""
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except GitmemError as exc:
            raise ToolError(str(exc)) from None

    return wrapper  # type: ignore[return-value]


def _result(data: dict[str, Any], text: str | None = None) -> CallToolResult:
    """The data for clients that read structured results, and a compact text for the model: every token of it
    lands in the agent's context, so no indentation."""
    if text is None:
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def _concise_text(memory: dict[str, Any]) -> str:
    """A memory as a short Markdown block; the title only when it is a name, not the text's own first line."""
    named = not memory["text"].startswith(memory["title"].rstrip("…"))
    lines = [f"## {memory['title'] + ' ' if named else ''}(id: {memory['id']}; {memory['type']}/{memory['category']}, "
             f"importance {memory['importance']})", memory["text"]]
    lines += [f"{label}: {memory[key]}" for key, label in (("why", "Why"), ("how", "How to apply"),
                                                          ("project", "Project"), ("deprecated_reason", "Deprecated"))
              if memory.get(key)]
    if memory.get("tags"):
        lines.append("Tags: " + ", ".join(memory["tags"]))
    return "\n".join(lines)


def _row(row: dict[str, Any]) -> dict[str, Any]:
    """A search row as the agent sees it: a short memory whole (reading it costs about what a title and snippet
    would, and saves a memory_get), a longer one as its title, the snippet when it says more, and the cost of
    reading it in full."""
    out = {"id": row["id"], "kind": f"{row['type']}/{row['category']}", "age": row["age"]}
    if row["tokens"] <= INLINE_TOKENS:
        out["text"] = " ".join(row["text"].split())
    else:
        out["title"] = row["title"]
        if row["snippet"] and row["snippet"] != row["title"]:
            out["snippet"] = row["snippet"]
        out["tokens"] = row["tokens"]
    if row["deprecated"]:
        out["deprecated"] = True
    return out


def _line(row: dict[str, Any]) -> str:
    if "text" in row:
        body = f"full | {row['text']}"
    else:
        body = f"{row['tokens']} tok | {row['title']}" + (f" — {row['snippet']}" if "snippet" in row else "")
    return f"{row['id']} | {row['kind']} | {row['age']} | {body}" + (" [deprecated]" if "deprecated" in row else "")


def build_server(service: MemoryService, *, memory_project: str = "") -> MCPServer:
    """An MCP server whose tools answer from ``service``; ``memory_remember`` without a project or a global scope
    stores in ``memory_project`` (none: a global memory), and ``memory_search`` without a project searches that
    project's memories and the global ones."""
    server: MCPServer = _Server(name="gitmem", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")

    @server.tool(annotations=READ)
    @_tool_errors
    def memory_search(
        query: Annotated[str, Field(description="What the task is about, in English, Chinese or both.")],
        k: Annotated[int, Field(ge=1, le=50, description="How many rows to return.")] = 8,
        type: Annotated[MemoryType | None, Field(description="Only memories of this type.")] = None,
        category: Annotated[Category | None, Field(description="Only this category.")] = None,
        tags: Annotated[list[str] | None, Field(description="Only memories with all these tags.")] = None,
        project: Annotated[str | None, Field(description=SEARCH_PROJECT_HELP)] = None,
        include_deprecated: bool = False,
    ) -> CallToolResult:
        """Find memories relevant to a task. Returns one row per memory, best first: its id, type/category and age;
        a short memory's whole text, or a longer one's title, a one-line snippet and `tokens`, the cost of reading
        it in full with memory_get. Read only the rows that matter; most tasks need two or three. Only memories
        related to the query come back (sharing a word with it, or near it in meaning): none means nothing is
        remembered about it."""
        # the code project the server runs in, as the hooks search it: another project's deploy steps are not
        # this one's ("*": every project)
        where = None if project == "*" else project or memory_project or None
        rows = service.search(query, k=k, type=type, category=category, tags=tags, project=where,
                              include_deprecated=include_deprecated)
        found = [_row(r) for r in rows]
        head = (f"{counted(len(found), 'memory')} (id | kind | age | full text, or tokens to read it | title — "
                "snippet); read the others with memory_get")
        return _result({"results": found}, "\n".join([head, *map(_line, found)]) if found else "no memories match")

    @server.tool(annotations=READ)
    @_tool_errors
    def memory_get(
        ids: Annotated[list[str], Field(min_length=1, max_length=20, description="Ids from memory_search.")],
        response_format: Annotated[Literal["concise", "detailed"], Field(
            description="concise: text, why, how and kind; detailed: every frontmatter field.")] = "concise",
    ) -> CallToolResult:
        """Read whole memories by id: the text, why it holds and how to apply it (concise), or every field
        including dates, source and deprecation (detailed)."""
        found: list[dict[str, Any]] = []
        missing: list[str] = []
        for memory_id in ids:
            try:
                found.append(memory_view(service.get(memory_id), detailed=response_format == "detailed"))
            except NotFoundError:
                missing.append(memory_id)
        if not found:
            raise NotFoundError(f"no memory with id {', '.join(repr(m) for m in missing)}",
                                "use the ids memory_search returns")
        data = {"memories": found, **({"missing": missing} if missing else {})}
        if response_format == "detailed":
            return _result(data)
        text = "\n\n".join(_concise_text(m) for m in found)
        return _result(data, text + (f"\n\nnot found: {', '.join(missing)}" if missing else ""))

    @server.tool(annotations=READ)
    @_tool_errors
    def memory_history(
        id: Annotated[str, Field(description="A memory id.")],
        limit: Annotated[int, Field(ge=1, le=100, description="At most this many commits, newest first.")] = 10,
        include_diff: Annotated[bool, Field(description="Add each commit's diff of the memory file.")] = False,
    ) -> CallToolResult:
        """The commits that changed a memory, newest first: operation (add, update, deprecate, restore, ...),
        date, source (cli, hook, commit, import, ...), subject and a diff summary (lines added/removed)."""
        entries = service.history(id, limit=limit)
        return _result({"id": id, "history": [e.to_dict(with_diff=include_diff) for e in entries]})

    # idempotent: the same text again returns the memory already stored (an agent retries a call whose answer it
    # lost), so repeating a call adds nothing
    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                                             open_world_hint=False))
    @_tool_errors
    def memory_remember(
        text: Annotated[str, Field(description="One rule, fact, preference or decision, stated so it can be "
                                               "acted on later without this conversation.")],
        type: Annotated[MemoryType | None, Field(description="user (about the user), feedback (how to work), "
                                                             "project, reference (where things are).")] = None,
        category: Annotated[Category | None, Field(description="What kind of statement it is.")] = None,
        # strict: true would pass as 1 before the library's own check could refuse it
        importance: Annotated[int | None, Field(ge=1, le=5, strict=True,
                                                description="1 trivia ... 5 must never be missed.")] = None,
        tags: list[str] | None = None,
        project: Annotated[str | None, Field(description=REMEMBER_PROJECT_HELP)] = None,
        scope: Annotated[Scope | None, Field(description=SCOPE_HELP)] = None,
        name: Annotated[str | None, Field(description="A short title.")] = None,
        why: Annotated[str | None, Field(description="Why this holds.")] = None,
        how: Annotated[str | None, Field(description="How to apply it.")] = None,
    ) -> CallToolResult:
        """Store a new long-term memory as one git commit (secrets are redacted first; `redacted` lists the kinds
        removed). It belongs to the code project the server runs in unless scope is global. The same text again
        returns the memory already stored (`existing`, no commit). Search first: do not store what is already
        there."""
        # without a project or a global scope the memory belongs to the project the server was started in (the
        # service refuses a global scope with a project, as the CLI does)
        if scope != "global" and not (project or "").strip():
            project = memory_project or None
        return _result(service.remember(text, type=type, category=category, importance=importance, tags=tags,
                                        project=project, scope=scope, name=name, why=why, how=how, source="api",
                                        reuse_same_text=True))

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False,
                                             open_world_hint=False))
    @_tool_errors
    def memory_forget(
        id: Annotated[str, Field(description="The memory to deprecate.")],
        reason: Annotated[str, Field(min_length=1, description="Why it is wrong or obsolete (kept in the commit).")],
    ) -> CallToolResult:
        """Deprecate a wrong or obsolete memory: a commit marks it deprecated with the reason, so it is no longer
        recalled; history keeps it and `gitmem restore` brings it back."""
        return _result(service.forget(id, reason))

    @server.tool(annotations=READ)
    @_tool_errors
    def wiki_query(
        query: Annotated[str, Field(description="Words to find in the project's wiki pages (English or Chinese).")],
        project: Annotated[str | None, Field(description=PROJECT_HELP)] = None,
        k: Annotated[int, Field(ge=1, le=50, description="How many pages to return.")] = 5,
        category: Annotated[str | None, Field(description="Only pages of this category. " + WIKI_CATEGORY_HELP)
                            ] = None,
        tags: Annotated[list[str] | None, Field(description="Only pages with these tags.")] = None,
    ) -> CallToolResult:
        """Search the project wiki (longer curated notes: architecture, decisions, debugging, conventions,
        session logs), best first: page name, title, category and a snippet around the matched words. The same
        search as `gitmem wiki query`; read a whole page with `gitmem wiki read PAGE`."""
        found = service.wiki_query(query, project=project, k=k, category=category, tags=tags)
        lines = [f"{h['page']} | {h['category']} | {h['title']} — {' '.join(h['snippet'].split())}"
                 for h in found["results"]]
        text = (f"{len(lines)} wiki pages of {found['project']} (page | category | title — snippet)\n"
                + "\n".join(lines)) if lines else f"no wiki page of {found['project']} matches"
        return _result(found, text)

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                                             open_world_hint=False))
    @_tool_errors
    def wiki_ingest(
        title: Annotated[str, Field(description="The page's title; an existing page with the same name gets the "
                                                "text as a new section.")],
        text: Annotated[str, Field(description="Markdown to add: what was learned, stated for a later reader.")],
        project: Annotated[str | None, Field(description=PROJECT_HELP)] = None,
        category: Annotated[str | None, Field(description="Kind of page. " + WIKI_CATEGORY_HELP)] = None,
        tags: list[str] | None = None,
        confidence: Annotated[str | None, Field(description=CONFIDENCE_HELP)] = None,
        sources: Annotated[list[str] | None, Field(description="Where it came from (commit SHAs, ticket ids).")
                           ] = None,
    ) -> CallToolResult:
        """Add text to the project wiki page for a title, as `gitmem wiki ingest` does: a new page, or a new
        timestamped section of the existing page (text already there word for word is not added twice). Secrets
        are redacted first (`redacted` lists the kinds); one git commit (`commit` is empty when nothing changed).
        Query first and add to the page that exists rather than starting a near-duplicate."""
        return _result(service.wiki_ingest(title, text, project=project, category=category, tags=tags,
                                           confidence=confidence, sources=sources, source="api"))

    @server.tool(annotations=READ)
    @_tool_errors
    def instincts_list(
        min_confidence: Annotated[float, Field(ge=0.0, le=1.0, description="Leave out weaker instincts.")] = 0.0,
        include_deprecated: bool = False,
    ) -> CallToolResult:
        """Behaviour rules learned from past sessions (trigger -> action) with their confidence (0-1)."""
        from gitmem.learn.instincts import list_instincts

        items = service.run(lambda repo: list_instincts(repo.path, deprecated=include_deprecated))
        return _result({"instincts": [{"id": i.id, "trigger": i.trigger, "action": i.action, "domain": i.domain,
                                       "confidence": round(i.confidence, 3), "project": i.project}
                                      for i in items if i.confidence >= min_confidence]})

    return server


def run_stdio(service: MemoryService) -> None:
    """Serve MCP on stdin/stdout until the client closes the pipe. A memory remembered without a project belongs
    to the code project of the working directory (an agent starts its MCP servers in the project it works on),
    found as ``gitmem remember`` finds it: the configured project, else the git remote's slug; none outside a
    git checkout or in the memory repository (unlike the wiki's default, which falls back to the folder's
    name)."""
    from gitmem.projects.identity import project_at

    repo = service.repo
    build_server(service, memory_project=project_at(Path.cwd(), repo.config.project, repo.path)).run("stdio")
