"""``gitmem serve --ui``: a web viewer to browse and curate memories, server-rendered with Jinja2.

Pages: the list (filters: project, type, category, tag, deprecated; a search box using the same ranking as
``gitmem search``), a memory with its whole history (each commit's date, op, source and diff) and a deprecate or
restore form, the conflicts waiting for ``gitmem resolve``, the pending review (what ``gitmem review`` prints:
the local changes the remote branch does not have yet), the instincts with their confidence over time (a small
inline SVG chart), and the project wikis (pages by project, one page with its links). Every asset ships in the
package (no CDN, no script); pages read on a phone.
Writes are plain form posts answered with a redirect, so the page after a change is the memory with its new
commit on top. A request the viewer cannot take (a filter value that does not parse) is answered with a page too,
never with the API's problem details.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, FastAPI, Form, Request
from fastapi.exception_handlers import request_validation_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from markupsafe import Markup, escape

from gitmem.errors import GitmemError, NotFoundError
from gitmem.serve.http import invalid_request, verb_in_id
from gitmem.serve.service import MemoryService, age
from gitmem.store.document import CATEGORIES, TYPES
from gitmem.sync.review import SECTIONS, pending_review

HERE = Path(__file__).resolve().parent
STATIC_PATH = "/ui/static"
MAX_INSTINCT_CHARTS = 50



def id_in_path(memory_id: str) -> str:
    """A memory id as one segment of a link: every "/" encoded too ("../../escape" as ``..%2F..%2Fescape``), or a
    browser would resolve the id's own dot segments and slashes as the URL's and open another page."""
    return quote(memory_id, safe="")

def sparkline(values: list[float], width: int = 120, height: int = 28) -> str:
    """An SVG polyline of ``values`` (confidences 0..1, oldest first) as the ``points`` attribute; the vertical
    scale spans the values' range, at least 0.2 wide, so a rise from 0.5 to 0.6 is visible without making noise
    look like a trend."""
    if not values:
        return ""
    if len(values) == 1:
        values = values * 2
    low, high = min(values), max(values)
    if high - low < 0.2:
        middle = min(max((high + low) / 2, 0.1), 0.9)
        low, high = middle - 0.1, middle + 0.1
    step = width / (len(values) - 1)
    margin = 2
    return " ".join(f"{i * step:.1f},{margin + (high - v) / (high - low) * (height - 2 * margin):.1f}"
                    for i, v in enumerate(values))


def diff_lines(diff: str) -> list[tuple[str, str]]:
    """(css class, line) for each line of a unified diff."""
    rows = []
    for line in diff.splitlines():
        if line.startswith(("+++", "---")):
            kind = "file"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        else:
            kind = "ctx"
        rows.append((kind, line))
    return rows


_INLINE = re.compile(r"\*\*(.+?)\*\*|`([^`]+)`")


def inline_markdown(text: str) -> Markup:
    """The bold and code spans of one line of a review summary as HTML (the rest escaped as text)."""
    out: list[str] = []
    last = 0
    for match in _INLINE.finditer(text):
        out.append(str(escape(text[last:match.start()])))
        bold, code = match.groups()
        out.append(f"<strong>{escape(bold)}</strong>" if bold is not None else f"<code>{escape(code)}</code>")
        last = match.end()
    out.append(str(escape(text[last:])))
    return Markup("".join(out))


_HEADING = re.compile(r"^(#{1,6}) +(.+?) *#*$")


def page_blocks(body: str) -> list[tuple[str, str]]:
    """A wiki page's body as ("heading", text) for its Markdown headings (outside code fences) and ("text",
    lines) for what lies between them, so a page's sections read as sections; the text is shown as written."""
    blocks: list[tuple[str, str]] = []
    lines: list[str] = []
    fenced = False
    for line in body.splitlines():
        fenced ^= line.lstrip().startswith(("```", "~~~"))
        match = None if fenced else _HEADING.match(line)
        if match:
            if "\n".join(lines).strip():
                blocks.append(("text", "\n".join(lines).strip("\n")))
            blocks.append(("heading", match.group(2)))
            lines = []
        else:
            lines.append(line)
    if "\n".join(lines).strip():
        blocks.append(("text", "\n".join(lines).strip("\n")))
    return blocks


def mount_ui(app: FastAPI, service: MemoryService) -> None:
    """Add the viewer's pages under ``/ui`` and its stylesheet under ``/ui/static``."""
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    templates.env.globals.update(types=TYPES, categories=CATEGORIES, quote=id_in_path, age=age)
    templates.env.filters["diff_lines"] = diff_lines
    templates.env.filters["inline_markdown"] = inline_markdown
    templates.env.filters["page_blocks"] = page_blocks
    app.mount(STATIC_PATH, StaticFiles(directory=str(HERE / "static")), name="ui-static")
    router = APIRouter(prefix="/ui", include_in_schema=False)

    def page(request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
        return templates.TemplateResponse(request, name, context, status_code=status)

    # a query or form value that does not fit a viewer page's parameters (?deprecated=maybe) is answered with a
    # page, as a value the library refuses (?type=bogus) is; the API's requests keep their problem details
    api_invalid = app.exception_handlers.get(RequestValidationError, request_validation_exception_handler)

    async def invalid(request: Request, exc: Exception) -> Response:
        path = request.scope["path"]
        if not isinstance(exc, RequestValidationError) or not (path == "/ui" or path.startswith("/ui/")):
            answer = api_invalid(request, exc)
            return answer if isinstance(answer, Response) else await answer
        return page(request, "error.html", 422, title="Invalid request", message=invalid_request(exc))

    app.add_exception_handler(RequestValidationError, invalid)

    def not_an_action(request: Request, memory_id: str) -> HTMLResponse:
        """The answer to a form post whose whole path is a memory's id (``/ui/memory/r%2Frestore`` names memory
        "r/restore"): its page is read, not posted to; acting on the id before the slash would change another
        memory."""
        response = page(request, "error.html", 405, title="Not an action",
                        message=f"memory '{memory_id}' is a page to read: deprecate or restore it from that page")
        response.headers["Allow"] = "GET"
        return response

    @router.get("/", response_class=HTMLResponse)
    def memories(request: Request, q: str = "", project: str = "", type: str = "", category: str = "",
                 tag: str = "", deprecated: bool = False) -> HTMLResponse:
        filters = {"q": q, "project": project, "type": type, "category": category, "tag": tag,
                   "deprecated": deprecated}
        error = ""
        rows: list[dict[str, Any]] = []
        try:
            if q.strip():
                rows = service.search(q, k=50, type=type or None, category=category or None,
                                      tags=[tag] if tag else None, project=project or None,
                                      include_deprecated=deprecated)
            else:
                rows = [{"id": m.id, "title": m.title, "type": m.type, "category": m.category,
                         "importance": m.importance, "project": m.project, "age": age(m.updated),
                         "snippet": "", "deprecated": m.deprecated, "tags": list(m.tags)}
                        for m in service.list_memories(type=type or None, category=category or None,
                                                       tag=tag or None, project=project or None,
                                                       deprecated=deprecated)]
        except GitmemError as exc:
            error = str(exc)
        return page(request, "list.html", 422 if error else 200, rows=rows, filters=filters, error=error,
                    searching=bool(q.strip()))

    @router.get("/memory/{memory_id:path}", response_class=HTMLResponse)
    def memory(request: Request, memory_id: str) -> HTMLResponse:
        return _memory_page(request, memory_id)

    def _memory_page(request: Request, memory_id: str, error: str = "", status: int = 200) -> HTMLResponse:
        try:
            found = service.get(memory_id)
            history = service.history(memory_id)
        except NotFoundError as exc:
            return page(request, "error.html", 404, message=str(exc))
        return page(request, "memory.html", status, memory=found, history=[h.to_dict() for h in history],
                    error=error)

    @router.post("/memory/{memory_id:path}/deprecate", response_model=None)
    def deprecate(request: Request, memory_id: str, reason: str = Form("")) -> Response:
        if verb_in_id(request, "deprecate"):
            return not_an_action(request, f"{memory_id}/deprecate")
        try:
            service.forget(memory_id, reason, source="ui")
        except GitmemError as exc:
            return _memory_page(request, memory_id, str(exc), 422)
        return RedirectResponse(f"/ui/memory/{id_in_path(memory_id)}", status_code=303)

    @router.post("/memory/{memory_id:path}/restore", response_model=None)
    def restore(request: Request, memory_id: str) -> Response:
        if verb_in_id(request, "restore"):
            return not_an_action(request, f"{memory_id}/restore")
        try:
            service.restore(memory_id, source="ui")
        except GitmemError as exc:
            return _memory_page(request, memory_id, str(exc), 422)
        return RedirectResponse(f"/ui/memory/{id_in_path(memory_id)}", status_code=303)

    @router.get("/conflicts", response_class=HTMLResponse)
    def conflicts(request: Request) -> HTMLResponse:
        rows = [m for m in service.list_memories(deprecated=True) if m.conflicted]
        return page(request, "conflicts.html", rows=rows)

    @router.get("/instincts", response_class=HTMLResponse)
    def instincts(request: Request) -> HTMLResponse:
        from gitmem.learn.instincts import history, list_instincts

        def load(repo: Any) -> list[dict[str, Any]]:
            items = sorted(list_instincts(repo.path, deprecated=True), key=lambda i: -i.confidence)
            rows = []
            for number, item in enumerate(items):
                points = [r["confidence"] for r in history(repo, item) if "confidence" in r][::-1]
                rows.append({"item": item, "points": sparkline(points) if number < MAX_INSTINCT_CHARTS else "",
                             "changes": len(points)})
            return rows

        return page(request, "instincts.html", rows=service.run(load))

    @router.get("/review", response_class=HTMLResponse)
    def review(request: Request) -> HTMLResponse:
        try:
            found = service.run(pending_review)
        except GitmemError as exc:
            return page(request, "review.html", review=None, notice=str(exc))
        sections = [(name, found.sections[name]) for name in SECTIONS if found.sections[name]]
        return page(request, "review.html", review=found, sections=sections, notice="")

    @router.get("/wiki", response_class=HTMLResponse)
    def wiki_projects(request: Request) -> HTMLResponse:
        return page(request, "wiki.html", projects=service.wiki_projects())

    @router.get("/wiki/{project}", response_class=HTMLResponse)
    def wiki_pages(request: Request, project: str) -> HTMLResponse:
        try:
            pages = service.run(lambda repo: repo.wiki(project).pages())
        except GitmemError as exc:
            return page(request, "error.html", 404, message=str(exc))
        return page(request, "wiki.html", project=project, pages=pages)

    @router.get("/wiki/{project}/{name}", response_class=HTMLResponse)
    def wiki_page(request: Request, project: str, name: str) -> HTMLResponse:
        try:
            found = service.run(lambda repo: repo.wiki(project).read(name))
        except GitmemError as exc:
            return page(request, "error.html", 404, message=str(exc))
        return page(request, "wiki_page.html", project=project, wiki_page=found)

    @router.get("/login", response_class=HTMLResponse)
    def login_form(request: Request) -> HTMLResponse:
        return page(request, "login.html")

    @router.post("/login", response_model=None)
    def login(token: str = Form("")) -> Response:
        # the guard checks the cookie on every later request; a wrong token simply leads back here
        response = RedirectResponse("/ui/", status_code=303)
        response.set_cookie("gitmem_token", token, httponly=True, samesite="strict")
        return response

    app.include_router(router)
