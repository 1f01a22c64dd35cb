"""``gitmem mcp`` driven by the MCP SDK's own client over stdio, as an agent would."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.helpers import GITMEM, assert_clean, git, run_cli

Session = Callable[[ClientSession], Awaitable[None]]


def with_session(repo_path: Path, body: Session, cwd: Path | None = None) -> None:
    params = StdioServerParameters(command=GITMEM, args=["--repo", str(repo_path), "mcp"], cwd=cwd,
                                   env={"GITMEM_WARM": "0", "HOME": str(Path.home())})

    async def main() -> None:
        async with stdio_client(params) as streams, ClientSession(*streams) as session:
            await session.initialize()
            await body(session)

    anyio.run(main)


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return dict(result.structured_content)


def test_tools_search_get_history_remember_and_errors(repo_path: Path) -> None:
    assert run_cli("--repo", str(repo_path), "remember", "Use PostgreSQL for every new service database",
                   "--category", "decision", "--why", "JSON queries are faster").code == 0
    assert run_cli("--repo", str(repo_path), "remember", "Deploy with make ship from the main branch").code == 0
    runbook = "Incident runbook: " + " ".join(f"step {n}: check the pager, the dashboards and the queue depth"
                                               for n in range(1, 6))
    assert run_cli("--repo", str(repo_path), "remember", runbook).code == 0
    seen: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert {"memory_search", "memory_get", "memory_history", "memory_remember", "memory_forget",
                "instincts_list"} <= set(tools)
        assert tools["memory_search"].annotations.read_only_hint is True  # type: ignore[union-attr]
        assert tools["memory_forget"].annotations.destructive_hint is True  # type: ignore[union-attr]
        assert "query" in tools["memory_search"].input_schema["required"]
        assert all(t.description for t in tools.values())

        rows = (await call(session, "memory_search", query="which database for a new service"))["results"]
        assert rows[0]["kind"] == "user/decision" and rows[0]["age"].endswith("s")
        # a short memory is shown whole in its row; a long one as a title with the cost of reading it
        assert rows[0]["text"] == "Use PostgreSQL for every new service database Why: JSON queries are faster"
        long_rows = (await call(session, "memory_search", query="incident runbook pager"))["results"]
        assert long_rows[0]["title"].startswith("Incident runbook") and long_rows[0]["tokens"] > 40
        assert "text" not in long_rows[0]
        listing = await session.call_tool("memory_search", {"query": "incident runbook pager"})
        assert f"{long_rows[0]['id']} | user/background |" in listing.content[0].text  # type: ignore[union-attr]
        got = (await call(session, "memory_get", ids=[rows[0]["id"]]))["memories"][0]
        assert got["text"] == "Use PostgreSQL for every new service database"
        assert got["why"] == "JSON queries are faster" and "created" not in got
        detailed = (await call(session, "memory_get", ids=[rows[0]["id"]], response_format="detailed"))
        assert "created" in detailed["memories"][0]
        history = (await call(session, "memory_history", id=rows[0]["id"]))["history"]
        assert [h["op"] for h in history] == ["add"] and history[0]["source"] == "cli"

        made = await call(session, "memory_remember", text="Staging lives on port 8443; password: hunter2hunter2",
                          category="background", tags=["staging"])
        seen["made"] = made
        forgotten = await call(session, "memory_forget", id=made["id"], reason="staging moved")
        seen["forgotten"] = forgotten

        bad = await session.call_tool("memory_get", {"ids": ["no-such-memory"]})
        assert bad.is_error
        seen["missing"] = bad.content[0].text  # type: ignore[union-attr]
        empty = await session.call_tool("memory_remember", {"text": "   "})
        assert empty.is_error
        seen["empty"] = empty.content[0].text  # type: ignore[union-attr]
        no_reason = await session.call_tool("memory_forget", {"id": rows[0]["id"]})
        assert no_reason.is_error and "reason" in no_reason.content[0].text  # type: ignore[union-attr]

    with_session(repo_path, body)
    made = seen["made"]
    assert made["redacted"] == ["password"]
    log = git(repo_path, "log", "--format=%H %s")
    assert f"{made['commit']} remember: Staging lives on port 8443" in log
    assert git(repo_path, "show", f"{made['commit']}:{made['path']}").count("hunter2hunter2") == 0
    assert "Gitmem-Op: deprecate" in git(repo_path, "log", "-1", "--format=%B")
    assert seen["forgotten"]["commit"] == git(repo_path, "rev-parse", "HEAD").strip()
    assert "no memory with id 'no-such-memory'" in seen["missing"] and "Traceback" not in seen["missing"]
    cli = run_cli("--repo", str(repo_path), "remember", "   ")
    assert cli.err.strip().removeprefix("gitmem: error: ") in seen["empty"]  # the CLI's one line, as is
    assert_clean(repo_path)


def test_wiki_tools_write_and_search_the_same_wiki_as_the_cli(repo_path: Path, tmp_path: Path) -> None:
    project_dir = tmp_path / "shop-api"  # not a git checkout: its project id is the folder's name
    project_dir.mkdir()
    seen: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert tools["wiki_query"].annotations.read_only_hint is True  # type: ignore[union-attr]
        assert tools["wiki_ingest"].annotations.read_only_hint is False  # type: ignore[union-attr]
        assert {"title", "text"} <= set(tools["wiki_ingest"].input_schema["required"])
        assert "debugging" in str(tools["wiki_ingest"].input_schema["properties"]["category"])

        first = await call(session, "wiki_ingest", title="Deploy runbook", category="debugging", tags=["deploy"],
                           text="Roll back with make rollback; the deploy token is ghp_" + "a1B2" * 9)
        again = await call(session, "wiki_ingest", title="Deploy runbook",
                           text="Canary first: watch the error rate for ten minutes.")
        same = await call(session, "wiki_ingest", title="Deploy runbook",
                          text="Canary first: watch the error rate for ten minutes.")
        seen.update(first=first, again=again, same=same)
        other = await call(session, "wiki_ingest", title="Billing", text="Invoices close on the 3rd.",
                           project="billing-svc")
        assert other["project"] == "billing-svc"

        found = await call(session, "wiki_query", query="canary rollback")
        assert found["project"] == "shop-api"
        assert [r["page"] for r in found["results"]] == ["deploy-runbook"]
        assert found["results"][0]["category"] == "debugging"
        text = (await session.call_tool("wiki_query", {"query": "canary"})).content[0].text  # type: ignore[union-attr]
        assert text.splitlines()[1].startswith("deploy-runbook | debugging | Deploy runbook")
        assert (await call(session, "wiki_query", query="invoices"))["results"] == []
        assert (await call(session, "wiki_query", query="invoices", project="billing-svc"))["results"]

        bad = await session.call_tool("wiki_ingest", {"title": "x", "text": "y", "category": "gossip"})
        assert bad.is_error
        seen["bad"] = bad.content[0].text  # type: ignore[union-attr]
        reserved = await session.call_tool("wiki_ingest", {"title": "index", "text": "y"})
        assert reserved.is_error and "generated page" in reserved.content[0].text  # type: ignore[union-attr]

    with_session(repo_path, body, cwd=project_dir)
    first, again, same = seen["first"], seen["again"], seen["same"]
    assert first["page"] == "deploy-runbook" and first["merged"] is False and first["redacted"]
    assert again["merged"] is True and again["commit"] and same["commit"] == ""  # the same text is not added twice
    assert git(repo_path, "log", "-1", "--skip=1", "--format=%H").strip() == again["commit"]
    page = run_cli("--repo", str(repo_path), "wiki", "read", "deploy-runbook", "--project", "shop-api")
    assert page.code == 0 and "make rollback" in page.out and "Canary first" in page.out
    assert "a1B2a1B2" not in git(repo_path, "show", f"{first['commit']}:{first['path']}")
    cli = run_cli("--repo", str(repo_path), "wiki", "query", "canary", "--project", "shop-api", "--json")
    assert [h["page"] for h in json.loads(cli.out)] == ["deploy-runbook"]
    assert "unknown category 'gossip'" in seen["bad"] and "use one of: architecture" in seen["bad"]
    assert "Traceback" not in seen["bad"]
    assert_clean(repo_path)
