"""Memory as a service: the MCP server (``gitmem mcp``), the HTTP API and the web viewer (``gitmem serve``).

Owns: the shared read/write views all three doors answer with (:mod:`~gitmem.serve.service`), the MCP tools
(:mod:`~gitmem.serve.mcp`), the HTTP app (:mod:`~gitmem.serve.http`), the HTML viewer (:mod:`~gitmem.serve.ui`,
with its templates and static assets shipped in the package) and the writers of each agent's MCP configuration
(:mod:`~gitmem.serve.agents`).

May import: the library (:mod:`gitmem.api` and what it builds on), and the packages of the ``serve`` extra
(``mcp``, ``fastapi``, ``uvicorn``, ``jinja2``, ``tomlkit``). Nothing below the CLI imports this package, and
the hook path never loads it.
"""
