"""``gitmem mcp`` driven by the MCP SDK's own client over stdio, as an agent would."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.helpers import GITMEM, PROJECT, assert_clean, code_repo, git, run_cli

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


def test_what_an_agent_reads_over_mcp_counts_as_used_for_gc(repo_path: Path) -> None:
    """gc retires low-importance memories nobody used; an agent that reaches gitmem only over MCP (Codex, Gemini,
    OpenCode) had every memory it searched or fetched counted as unused."""
    from gitmem.store.usage import read_usage

    stored = run_cli("--repo", str(repo_path), "remember", "Staging deploys run from the release branch",
                     "--importance", "1", "--json")
    memory_id = json.loads(stored.out)["id"]
    assert memory_id not in read_usage(repo_path)

    async def body(session: ClientSession) -> None:
        rows = (await call(session, "memory_search", query="which branch do staging deploys run from"))["results"]
        assert rows[0]["id"] == memory_id
        await call(session, "memory_get", ids=[memory_id])

    with_session(repo_path, body)
    assert read_usage(repo_path)[memory_id]["count"] == 2


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


def test_remember_defaults_to_the_servers_project_like_the_cli(repo_path: Path, tmp_path: Path) -> None:
    shop = code_repo(tmp_path)  # a code project with an origin: its project id is PROJECT
    plain = tmp_path / "notes"  # not a git checkout: no project for memories (the wiki still takes its name)
    plain.mkdir()
    seen: dict[str, Any] = {}

    async def in_project(session: ClientSession) -> None:
        seen["here"] = await call(session, "memory_remember", text="MCP says: use ruff for linting")
        seen["global"] = await call(session, "memory_remember", text="MCP says: answer in English",
                                    scope="global")
        seen["other"] = await call(session, "memory_remember", text="MCP says: billing closes on the 3rd",
                                   project="billing-svc")
        seen["both"] = await session.call_tool("memory_remember", {"text": "x", "scope": "global",
                                                                   "project": "billing-svc"})

    async def elsewhere(session: ClientSession) -> None:
        seen["plain"] = await call(session, "memory_remember", text="MCP says: coffee is in the kitchen")

    with_session(repo_path, in_project, cwd=shop)
    with_session(repo_path, elsewhere, cwd=plain)
    cli = run_cli("--repo", str(repo_path), "remember", "CLI says: use ruff for linting", "--json", cwd=shop)
    assert cli.code == 0, cli.err
    assert json.loads(cli.out)["project"] == PROJECT
    assert seen["here"]["path"].startswith(f"memories/{PROJECT}/")  # where the CLI puts it
    mine = run_cli("--repo", str(repo_path), "show", seen["here"]["id"], "--json")
    assert json.loads(mine.out)["project"] == PROJECT and json.loads(mine.out)["type"] == "project"
    assert seen["global"]["path"].startswith("memories/global/")
    assert seen["other"]["path"].startswith("memories/billing-svc/")
    assert seen["plain"]["path"].startswith("memories/global/")
    assert seen["both"].is_error and "contradict" in seen["both"].content[0].text
    assert_clean(repo_path)


def test_remember_retried_with_the_same_text_returns_the_stored_memory(repo_path: Path, tmp_path: Path) -> None:
    shop = code_repo(tmp_path)
    text = "Staging lives on port 8443; password: hunter2hunter2"
    seen: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        seen["tools"] = {t.name: t for t in (await session.list_tools()).tools}
        first = await call(session, "memory_remember", text=text, category="background")
        head = git(repo_path, "rev-parse", "HEAD").strip()
        retry = await call(session, "memory_remember", text=text, category="background")
        spaced = await call(session, "memory_remember", text=f"  {text}\n")
        assert git(repo_path, "rev-parse", "HEAD").strip() == head  # no new commit
        seen.update(first=first, retry=retry, spaced=spaced)
        seen["global"] = await call(session, "memory_remember", text=text, scope="global")  # another scope
        await call(session, "memory_forget", id=first["id"], reason="staging moved")
        seen["again"] = await call(session, "memory_remember", text=text)  # a deprecated one is not reused

    with_session(repo_path, body, cwd=shop)
    first, retry = seen["first"], seen["retry"]
    assert first["existing"] is False and first["commit"] and first["redacted"] == ["password"]
    assert retry == {"id": first["id"], "commit": "", "path": first["path"], "redacted": ["password"],
                     "existing": True}
    assert seen["spaced"]["id"] == first["id"]
    assert seen["tools"]["memory_remember"].annotations.idempotent_hint is True  # a retry changes nothing
    assert seen["global"]["id"] != first["id"] and seen["global"]["path"].startswith("memories/global/")
    assert seen["again"]["id"] not in (first["id"], seen["global"]["id"]) and seen["again"]["commit"]
    listed = run_cli("--repo", str(repo_path), "list", "--json", "--deprecated")
    assert len(json.loads(listed.out)) == 3
    assert_clean(repo_path)


def test_remember_refuses_a_project_that_is_a_path_like_the_wiki_tools(repo_path: Path) -> None:
    seen: dict[str, str] = {}

    async def body(session: ClientSession) -> None:
        for tool, arguments in (("memory_remember", {"text": "MCP says: use ruff"}), ("wiki_query", {"query": "x"}),
                                ("wiki_ingest", {"title": "x", "text": "y"})):
            result = await session.call_tool(tool, {**arguments, "project": "../../evil"})
            assert result.is_error
            seen[tool] = result.content[0].text  # type: ignore[union-attr]

    head = git(repo_path, "rev-parse", "HEAD").strip()
    with_session(repo_path, body)
    problem = seen["wiki_query"].removeprefix("Error executing tool wiki_query: ")
    assert problem.startswith("project '../../evil' contains a path separator")
    assert seen["memory_remember"] == f"Error executing tool memory_remember: {problem}"
    assert seen["wiki_ingest"] == f"Error executing tool wiki_ingest: {problem}"
    assert git(repo_path, "rev-parse", "HEAD").strip() == head
    assert not (repo_path / "memories" / "evil-1361ca8c02").exists()
    assert_clean(repo_path)


def test_argument_errors_are_one_line_naming_the_argument(repo_path: Path) -> None:
    seen: dict[str, str] = {}

    async def body(session: ClientSession) -> None:
        for tool, arguments in (("memory_search", {"query": "db", "k": -5}),
                                ("memory_forget", {"id": "x"}),
                                ("memory_get", {"ids": ["a", 7]}),
                                ("memory_remember", {"text": "x", "type": "gossip", "importance": 9})):
            result = await session.call_tool(tool, arguments)
            assert result.is_error
            seen[tool] = result.content[0].text  # type: ignore[union-attr]

    with_session(repo_path, body)
    assert seen["memory_search"] == "Error executing tool memory_search: k: Input should be greater than or equal to 1"
    assert seen["memory_forget"] == "Error executing tool memory_forget: reason: Field required"
    assert seen["memory_get"] == "Error executing tool memory_get: ids.1: Input should be a valid string"
    assert seen["memory_remember"] == (
        "Error executing tool memory_remember: type: Input should be 'user', 'feedback', 'project' or 'reference'; "
        "importance: Input should be less than or equal to 5")
    for text in seen.values():
        assert "\n" not in text and "pydantic" not in text and "Arguments" not in text


def test_an_argument_a_tool_does_not_take_is_refused_naming_the_ones_it_does(repo_path: Path) -> None:
    """A misspelt filter (`projet`) or another tool's name for an argument (`limit` for `k`) ran as if it were
    absent: the agent believed it had filtered or limited the search."""
    assert run_cli("--repo", str(repo_path), "remember", "Deploy the shop with make ship").code == 0
    assert run_cli("--repo", str(repo_path), "remember", "Deploy infra through Atlantis").code == 0
    seen: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        seen["accepted"] = {name: list(t.input_schema["properties"]) for name, t in tools.items()}
        for name in tools:  # every tool, before its own arguments are checked (none is given here)
            result = await session.call_tool(name, {"bogus": 1})
            assert result.is_error, name
            seen[name] = result.content[0].text  # type: ignore[union-attr]
        for key, arguments in (("typo", {"query": "deploy", "projet": "foo"}),
                               ("limit", {"query": "deploy", "limit": 1}),
                               ("several", {"query": "deploy", "projet": "foo", "limit": 1, "k": 1}),
                               ("both", {"query": "deploy", "k": 0, "limit": 1}),
                               ("line", {"query": "deploy", "a\nb": 1})):
            result = await session.call_tool("memory_search", arguments)
            assert result.is_error, key
            seen[key] = result.content[0].text  # type: ignore[union-attr]
        written = await session.call_tool("memory_remember", {"text": "Pin the CI image", "tag": "ci"})
        assert written.is_error
        seen["remember"] = written.content[0].text  # type: ignore[union-attr]
        seen["known"] = await call(session, "memory_search", query="deploy", k=1, project="*")

    head = git(repo_path, "rev-parse", "HEAD").strip()
    with_session(repo_path, body)
    accepted = seen["accepted"]
    assert accepted["memory_search"] == ["query", "k", "type", "category", "tags", "project", "include_deprecated"]
    search = "Error executing tool memory_search: unknown argument(s) {} (accepted: " + \
        ", ".join(accepted["memory_search"]) + ")"
    assert seen["typo"] == search.format("'projet'")
    assert seen["limit"] == search.format("'limit'")
    assert seen["several"] == search.format("'limit', 'projet'")
    assert seen["both"] == search.format("'limit'")  # refused before the values are checked
    assert seen["line"] == search.format("'a\\nb'")
    for name, names in accepted.items():
        assert seen[name] == (f"Error executing tool {name}: unknown argument(s) 'bogus' "
                              f"(accepted: {', '.join(names)})")
    assert seen["remember"] == ("Error executing tool memory_remember: unknown argument(s) 'tag' (accepted: "
                                "text, type, category, importance, tags, project, scope, name, why, how)")
    for text in (seen[key] for key in (*accepted, "typo", "limit", "several", "both", "line", "remember")):
        assert "\n" not in text and "ctx" not in text and "context" not in text
    assert len(seen["known"]["results"]) == 1  # k and project, spelt right, still count
    assert git(repo_path, "rev-parse", "HEAD").strip() == head  # the refused write wrote nothing
    assert_clean(repo_path)


def test_remember_takes_importance_as_an_integer_only_and_a_scope_or_a_project(repo_path: Path) -> None:
    """true is not importance 1 (pydantic would take it for 1 before the library could refuse it), and a global
    scope with a project is refused in the words the HTTP API uses: the shared service says it for both."""
    seen: dict[str, str] = {}

    async def body(session: ClientSession) -> None:
        for name, arguments in (("true", {"importance": True}), ("false", {"importance": False}),
                                ("text", {"importance": "3"}), ("both", {"scope": "global", "project": "shop"})):
            result = await session.call_tool("memory_remember", {"text": "Pin the CI image", **arguments})
            assert result.is_error, name
            seen[name] = result.content[0].text  # type: ignore[union-attr]

    head = git(repo_path, "rev-parse", "HEAD").strip()
    with_session(repo_path, body)
    for name in ("true", "false", "text"):
        assert seen[name] == "Error executing tool memory_remember: importance: Input should be a valid integer"
    assert seen["both"] == ("Error executing tool memory_remember: scope global and project contradict each other "
                            "(pass only one of them)")
    assert git(repo_path, "rev-parse", "HEAD").strip() == head
    assert_clean(repo_path)


def test_search_defaults_to_the_servers_project_as_the_hooks_do(repo_path: Path, tmp_path: Path) -> None:
    """An agent in the shop asking "how do we deploy?" got the infra project's deploy steps too."""
    shop = code_repo(tmp_path)
    r = ["--repo", str(repo_path)]
    assert run_cli(*r, "remember", "Deploy the shop with make ship", "--project", PROJECT).code == 0
    assert run_cli(*r, "remember", "Deploy infra changes through Atlantis", "--project", "acme-infra").code == 0
    assert run_cli(*r, "remember", "Deploys never happen on Fridays", "--scope", "global").code == 0
    seen: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        seen["default"] = await call(session, "memory_search", query="how do we deploy")
        seen["every"] = await call(session, "memory_search", query="how do we deploy", project="*")
        seen["other"] = await call(session, "memory_search", query="how do we deploy", project="acme-infra")

    with_session(repo_path, body, cwd=shop)

    def texts(key: str) -> set[str]:
        return {row.get("text") or row.get("title") for row in seen[key]["results"]}

    assert texts("default") == {"Deploy the shop with make ship", "Deploys never happen on Fridays"}
    assert "Deploy infra changes through Atlantis" in texts("every") and len(texts("every")) == 3
    assert texts("other") == {"Deploy infra changes through Atlantis", "Deploys never happen on Fridays"}
