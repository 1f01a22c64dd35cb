"""The HTTP API of ``gitmem serve``: store, retrieve, read, history, deprecate, recall, health (FastAPI).

Errors are RFC 9457 problem details (``application/problem+json``) whose ``detail`` is the CLI's one-line
message and whose ``hint`` says what to do. With a token, every request needs ``Authorization: Bearer <token>``
(the web viewer may send it as a cookie instead). Bodies over ``max_body`` bytes are refused with 413 before
they are read. Ids may hold "/": ``/memory/q%2Fhistory`` (the slash before the verb percent-encoded) is memory
"q/history", and so is ``GET /memory/q/history`` when that memory exists; neither reads or changes memory "q".
The app has no CORS headers and no documentation pages that load scripts from a CDN; the OpenAPI
document is at ``/openapi.json``. Memory text and queries are never logged at info level.
"""

from __future__ import annotations

import hmac
import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from http import HTTPStatus
from typing import Annotated, Any, Literal
from urllib.parse import quote, unquote_to_bytes

from fastapi import FastAPI, Query, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from gitmem import __version__
from gitmem.errors import GitmemError, LockTimeoutError, NotFoundError, RepoNotFoundError, ValidationError
from gitmem.serve.service import MemoryService, memory_view
from gitmem.store.local import MAX_ID_CHARS

log = logging.getLogger("gitmem.serve")
PROBLEM = "application/problem+json"
DEFAULT_MAX_BODY = 256 * 1024
TOKEN_COOKIE = "gitmem_token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
LOGIN_PATH = "/ui/login"
STATIC_PREFIX = "/ui/static/"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MemoryType = Literal["user", "feedback", "project", "reference"]
Category = Literal["background", "decision", "preference", "constraint", "correction"]


# -- models -----------------------------------------------------------------------------------------------
class StoreRequest(BaseModel):
    """A new memory: the text and the fields ``gitmem remember`` takes."""

    model_config = ConfigDict(extra="forbid")
    text: str = Field(description="The memory: a rule, a fact or a preference (at most 16 KiB).")
    type: MemoryType | None = Field(None, description="Kind (default: project with a project, else user).")
    category: Category | None = Field(None, description="What it is (default: background).")
    # strict: a JSON true would pass as 1 (and "3" as 3) before the library's own check could refuse it
    importance: int | None = Field(None, ge=1, le=5, strict=True,
                                   description="1 (trivia) to 5 (must never be missed), a JSON integer.")
    tags: list[str] | None = Field(None, description="Tags.")
    scope: Literal["global", "project", "session"] | None = None
    project: str | None = Field(None, description="The project id the memory belongs to.")
    name: str | None = Field(None, description="A short title (default: the first line).")
    why: str | None = Field(None, description="Why this holds.")
    how: str | None = Field(None, description="How to apply it.")
    id: str | None = Field(None, description="Use this id instead of a generated one.")


class StoreResponse(BaseModel):
    id: str
    commit: str
    path: str
    redacted: list[str] = Field(description="Kinds of secrets removed before the commit.")


class RetrievedMemory(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str
    text: str
    score: float
    tokens: int
    title: str
    type: str
    category: str
    importance: int
    tags: list[str]
    project: str
    explanation: dict[str, float] | None = None


class RetrieveResponse(BaseModel):
    memories: list[RetrievedMemory]
    tokens: int = Field(description="Tokens of the memories returned.")
    budget: int
    left_out: int = Field(description="Ranked memories that did not fit in the budget.")
    notice: str = ""


class HistoryItem(BaseModel):
    commit: str
    date: str
    author: str
    op: str
    source: str
    subject: str
    summary: str
    diff: str


class HistoryResponse(BaseModel):
    id: str
    history: list[HistoryItem]


class ForgetResponse(BaseModel):
    id: str
    deprecated: bool
    reason: str = ""
    commit: str


class RecallResponse(BaseModel):
    text: str
    tokens: int
    budget: int
    query: str
    project: str
    ids: list[str] = Field(description="Every memory in the block: its Essentials, then the relevant memories.")
    left_out: int


class SessionBlockRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    cwd: str = Field(min_length=1, max_length=4096, description="The code project's folder.")
    paths: list[Annotated[str, Field(max_length=4096)]] = Field(
        default_factory=list, max_length=50, description="Files the session is likely to touch (hot paths).")


class SessionBlockResponse(BaseModel):
    text: str
    query: str
    ids: list[str]
    more: int = Field(description="Memories of the project and global ones the block leaves out.")
    avoid: list[str] = Field(description="Words the Essentials say not to use.")
    pending: int = Field(0, description="Memories ranked without a vector: they await the background warm-up.")
    parts: list[tuple[str, int]] = Field(
        default_factory=list, description="[id, n]: the long memories the block shows by their part n only.")


class PromptBlockRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    prompt: str = Field(min_length=1, max_length=20_000)
    project: str = Field(max_length=200)
    seen: list[Annotated[str, Field(max_length=MAX_ID_CHARS)]] = Field(
        default_factory=list, max_length=1000, description="Memory ids the session was given already.")
    previous: list[Annotated[str, Field(max_length=2000)]] = Field(
        default_factory=list, max_length=10, description="The session's previous prompts, as context.")
    seen_parts: list[tuple[Annotated[str, Field(max_length=MAX_ID_CHARS)], int]] = Field(
        default_factory=list, max_length=1000,
        description="[id, n]: long memories the session was shown part n of, at its start or by a prompt.")


class PromptBlockResponse(BaseModel):
    text: str = Field(description="The block to inject; empty when no memory passes the relevance gate.")
    ids: list[str] = Field(description="The memories shown whole.")
    parts: list[tuple[str, int]] = Field(default_factory=list,
                                         description="[id, n]: long memories shown by their part n.")


class Health(BaseModel):
    status: Literal["ok"]
    version: str
    repo: str
    ui: bool


class Problem(BaseModel):
    """RFC 9457 problem details."""

    type: str = "about:blank"
    title: str
    status: int
    detail: str
    hint: str | None = None


_ERRORS = {status: {"model": Problem, "content": {PROBLEM: {}}} for status in (401, 403, 404, 413, 421, 422)}
#: a POST on a memory's path (the restore route's path with the verb's slash encoded) is 405 as well
_POST_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": Problem, "content": {PROBLEM: {}}} for status in (401, 403, 404, 405, 413, 421, 422)}


# -- errors -----------------------------------------------------------------------------------------------
def problem(status: int, detail: str, hint: str | None = None, headers: dict[str, str] | None = None) -> JSONResponse:
    body = Problem(title=HTTPStatus(status).phrase, status=status, detail=detail, hint=hint)
    return JSONResponse(body.model_dump(exclude_none=True), status_code=status, media_type=PROBLEM, headers=headers)


def _status(exc: GitmemError) -> int:
    if isinstance(exc, NotFoundError):
        return 404
    if isinstance(exc, ValidationError):
        return 422
    if isinstance(exc, (LockTimeoutError, RepoNotFoundError)):
        return 503
    return 400


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(GitmemError)
    async def gitmem_error(_request: Request, exc: GitmemError) -> JSONResponse:
        return problem(_status(exc), exc.message, exc.hint)

    @app.exception_handler(RequestValidationError)
    async def bad_request(_request: Request, exc: RequestValidationError) -> JSONResponse:
        return problem(422, invalid_request(exc), "see the OpenAPI document at /openapi.json")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return problem(exc.status_code, str(exc.detail), headers=dict(exc.headers or {}))

    @app.exception_handler(Exception)
    async def internal(_request: Request, exc: Exception) -> JSONResponse:
        log.error("internal error", exc_info=exc)
        return problem(500, f"internal error: {type(exc).__name__}", "details are in the server's log")


def invalid_request(exc: RequestValidationError) -> str:
    """The first value that does not fit, in one line: ``importance: Input should be a valid integer``."""
    first = exc.errors()[0] if exc.errors() else {}
    where = ".".join(str(p) for p in first.get("loc", ()) if p != "body") or "request"
    return f"{where}: {first.get('msg', 'invalid value')}"


def verb_in_id(request: Request, verb: str) -> bool:
    """Whether the ``/<verb>`` that ends the path arrived percent-encoded (``/memory/q%2Fhistory``) and so belongs
    to the memory's id (ids may hold "/"). Routes match the decoded path, where ``q%2Fhistory`` and ``q/history``
    look alike; the raw path, which uvicorn and the test client pass on, tells them apart. Without a raw path the
    verb is taken as the route's."""
    raw = request.scope.get("raw_path")
    if not isinstance(raw, bytes):
        return False
    return unquote_to_bytes(raw.split(b"?", 1)[0].rsplit(b"/", 1)[-1]) != verb.encode()


# -- middleware -------------------------------------------------------------------------------------------
class Guard:
    """Token check, body-size limit and one log line per request (method, path, status, time; no query)."""

    def __init__(self, app: ASGIApp, *, token: str | None, max_body: int, hosts: frozenset[str] | None) -> None:
        self.app, self.token, self.max_body, self.hosts = app, token, max_body, hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        state = {"status": 0, "too_large": False, "replaced": False}

        async def send_logged(message: Message) -> None:
            if state["too_large"]:  # the app answered a body cut short: the answer is 413, whatever it said
                if message["type"] == "http.response.start" and not state["replaced"]:
                    state["replaced"] = True
                    await self._too_large()(scope, receive, send_logged_plain)
                return
            await send_logged_plain(message)

        async def send_logged_plain(message: Message) -> None:
            if message["type"] == "http.response.start":
                state["status"] = message["status"]
            await send(message)

        async def limited() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                state["seen"] = int(state.get("seen", 0)) + len(message.get("body", b""))
                if state["seen"] > self.max_body:
                    state["too_large"] = True
                    raise _TooLarge
            return message

        try:
            refusal = self._refuse(scope)
            if refusal is not None:
                await refusal(scope, receive, send_logged_plain)
                return
            await self.app(scope, limited, send_logged)
        except _TooLarge:
            if not state["replaced"]:
                state["replaced"] = True
                await self._too_large()(scope, receive, send_logged_plain)
        finally:
            log.info("%s %s %s %.1f ms", scope["method"], scope["path"], state["status"],
                     (time.perf_counter() - started) * 1000)

    def _too_large(self) -> JSONResponse:
        return problem(413, f"the request body is larger than {self.max_body} bytes",
                       "send less, or start the server with a larger --max-body")

    def _refuse(self, scope: Scope) -> Response | None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        path = scope["path"]
        if self.hosts is not None and _hostname(headers.get("host", "")) not in self.hosts:
            # a loopback server answers only to loopback names: a page whose DNS name was rebound to
            # 127.0.0.1 cannot read or change memories
            return problem(421, f"this server does not answer to host {headers.get('host', '')!r}",
                           "use http://127.0.0.1:<port>/")
        origin = headers.get("origin")
        if scope["method"] not in SAFE_METHODS and origin and _hostport(origin) != headers.get("host", ""):
            return problem(403, f"cross-origin {scope['method']} from {origin} refused",
                           "call the API from the same origin or without a browser")
        if self.token is not None and not self._authorised(headers) and not _open_path(path):
            if path.startswith("/ui/") and scope["method"] in SAFE_METHODS:
                return RedirectResponse(LOGIN_PATH, status_code=303)
            return problem(401, "missing or wrong bearer token",
                           "send the header 'Authorization: Bearer <token>' with the server's --token",
                           headers={"WWW-Authenticate": "Bearer"})
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > self.max_body:
            return self._too_large()
        return None

    def _authorised(self, headers: dict[str, str]) -> bool:
        assert self.token is not None
        given = ""
        scheme, _, value = headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer":
            given = value.strip()
        else:
            for part in headers.get("cookie", "").split(";"):
                name, _, cookie = part.strip().partition("=")
                if name == TOKEN_COOKIE:
                    given = cookie
        return hmac.compare_digest(given.encode(), self.token.encode())


def _hostname(host: str) -> str:
    """``example.com`` from ``example.com:8765``, ``::1`` from ``[::1]:8765``."""
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _hostport(origin: str) -> str:
    return origin.split("://", 1)[-1].rstrip("/")


def _open_path(path: str) -> bool:
    """Pages a browser needs before it has the token cookie."""
    return path == LOGIN_PATH or path.startswith(STATIC_PREFIX)


class _TooLarge(Exception):
    """A chunked body grew past the limit while the app was reading it."""


def not_a_post(memory_id: str, verb: str) -> JSONResponse:
    """405 for a POST whose whole path is a memory's id: a memory takes GET and DELETE, its actions have a path of
    their own (answering with what ``/memory/{id}`` would say, rather than acting on the id before the slash)."""
    return problem(405, f"memory '{memory_id}' takes GET and DELETE, not POST",
                   f"to {verb} it: POST /memory/{quote(memory_id, safe='')}/{verb}", headers={"Allow": "GET, DELETE"})


# -- the app ----------------------------------------------------------------------------------------------
def create_app(service: MemoryService, *, token: str | None = None, max_body: int = DEFAULT_MAX_BODY,
               ui: bool = False, hosts: frozenset[str] | None = None) -> FastAPI:
    """The HTTP API over ``service`` (and the web viewer under ``/ui`` when ``ui``); with ``hosts``, requests
    whose ``Host`` names another machine are refused (421)."""
    app = FastAPI(title="gitmem", version=__version__, docs_url=None, redoc_url=None,
                  description="Git-native long-term memory: every write is a commit in the memory repository.")
    _install_error_handlers(app)
    _routes(app, service, ui)
    if ui:
        from gitmem.serve.ui import mount_ui

        mount_ui(app, service)
    app.add_middleware(Guard, token=token, max_body=max_body, hosts=hosts)
    return app


def _routes(app: FastAPI, service: MemoryService, ui: bool) -> None:
    @app.get("/health", response_model=Health, summary="Whether the server runs, and on which repository")
    def health() -> Health:
        return Health(status="ok", version=__version__, repo=str(service.repo.path), ui=ui)

    if ui:
        @app.get("/", include_in_schema=False)
        def root() -> RedirectResponse:
            return RedirectResponse("/ui/")

    @app.post("/memory/store", status_code=201, response_model=StoreResponse, responses=_ERRORS,  # type: ignore[arg-type]
              summary="Remember: one new memory, one commit (secrets redacted first)")
    def store(body: StoreRequest) -> dict[str, Any]:
        fields = body.model_dump(exclude_none=True)
        return service.remember(fields.pop("text"), **fields)

    @app.get("/memory/retrieve", response_model=RetrieveResponse, responses=_ERRORS,  # type: ignore[arg-type]
             response_model_exclude_none=True, summary="The best memories for a query, cut to a token budget")
    def retrieve(query: Annotated[str, Query(min_length=1, max_length=2000)],
                 top_k: Annotated[int, Query(ge=1, le=100)] = 10,
                 token_budget: Annotated[int | None, Query(ge=1, le=100_000)] = None,
                 project: Annotated[str | None, Query(max_length=200)] = None,
                 explain: bool = False) -> RetrieveResponse:
        found = service.retrieve(query, top_k=top_k, token_budget=token_budget, project=project, explain=explain)
        return RetrieveResponse(memories=[RetrievedMemory(**m) for m in found.memories], tokens=found.tokens,
                                budget=found.budget, left_out=found.left_out, notice=found.notice)

    @app.get("/memory", responses=_ERRORS, summary="List memories, newest first")  # type: ignore[arg-type]
    def list_memories(type: MemoryType | None = None, category: Category | None = None,
                      tag: Annotated[str | None, Query(max_length=64)] = None,
                      project: Annotated[str | None, Query(max_length=200)] = None,
                      deprecated: bool = False) -> list[dict[str, Any]]:
        memories = service.list_memories(type=type, category=category, tag=tag, project=project,
                                         deprecated=deprecated)
        return [memory_view(m, detailed=False) for m in memories]

    # ids are any printable text (an import keeps its source's ids, "a/b" among them): the routes take the rest of
    # the path, those that end in a verb first. A path whose whole rest is an id wins over the verb: "q/history"
    # sent as q%2Fhistory always (the client said the slash is the id's), and sent as q/history when a memory has
    # that id
    @app.get("/memory/{memory_id:path}/history", response_model=HistoryResponse, responses=_ERRORS,  # type: ignore[arg-type]
             summary="The commits of one memory with their diffs, newest first",
             description="A memory whose id is the whole path (one ending in /history) is answered as by "
                         "GET /memory/{memory_id}.")
    def history(request: Request, memory_id: str,
                limit: Annotated[int | None, Query(ge=1, le=1000)] = None) -> HistoryResponse | JSONResponse:
        whole = f"{memory_id}/history"
        try:  # the memory whose id is the whole path, read once; none by that id: the history of memory_id
            return JSONResponse(jsonable_encoder(memory_view(service.get(whole))))
        except NotFoundError:
            if verb_in_id(request, "history"):  # the client named the id with its slash: there is no such memory
                raise
        entries = service.history(memory_id, limit=limit)
        return HistoryResponse(id=memory_id, history=[HistoryItem(**e.to_dict()) for e in entries])

    @app.get("/memory/{memory_id:path}", responses=_ERRORS, summary="One memory with every field")  # type: ignore[arg-type]
    def get(memory_id: str) -> dict[str, Any]:
        return memory_view(service.get(memory_id))

    @app.delete("/memory/{memory_id:path}", response_model=ForgetResponse, responses=_ERRORS,  # type: ignore[arg-type]
                summary="Deprecate a memory (a commit; the file stays with the reason)")
    def forget(memory_id: str, reason: Annotated[str, Query(min_length=1, max_length=1000)]) -> dict[str, Any]:
        return service.forget(memory_id, reason)

    @app.post("/memory/{memory_id:path}/restore", response_model=ForgetResponse,
              responses=_POST_ERRORS,
              summary="Undo a deprecation (a commit)",
              description="A path whose whole rest is a memory's id (r%2Frestore: memory 'r/restore') is 405.")
    def restore(request: Request, memory_id: str) -> dict[str, Any] | JSONResponse:
        if verb_in_id(request, "restore"):  # POST /memory/r%2Frestore names memory "r/restore", not a restore of "r"
            return not_a_post(f"{memory_id}/restore", "restore")
        return service.restore(memory_id)

    @app.post("/hook/session-block", response_model=SessionBlockResponse, responses=_ERRORS,  # type: ignore[arg-type]
              summary="The block the session-start hook injects for a folder (the hook asks this when it runs)")
    def session_block(body: SessionBlockRequest) -> dict[str, Any]:
        return service.session_block(body.cwd, body.paths)

    @app.post("/hook/prompt", response_model=PromptBlockResponse, responses=_ERRORS,  # type: ignore[arg-type]
              summary="The memories the prompt hook injects for a prompt (the hook asks this when it runs)")
    def prompt_block(body: PromptBlockRequest) -> dict[str, Any]:
        return service.prompt_block(body.prompt, project=body.project, seen=body.seen, previous=body.previous,
                                    seen_parts=body.seen_parts)

    @app.get("/recall", response_model=RecallResponse, responses=_ERRORS,  # type: ignore[arg-type]
             summary="The memory block a session started in cwd would get")
    def recall(cwd: Annotated[str | None, Query(max_length=4096)] = None,
               budget: Annotated[int | None, Query(ge=1, le=100_000)] = None,
               query: Annotated[str | None, Query(max_length=2000)] = None) -> dict[str, Any]:
        return service.recall(cwd, budget=budget, query=query)
