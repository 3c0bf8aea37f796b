"""CLI command `engram mcp`: serve the memory tools to an MCP host (stdio or local HTTP), bound to one tenant."""

from __future__ import annotations

from typing import Annotated

import typer


def mcp_cmd(
    user: Annotated[str | None, typer.Option("--user", help="Tenant (user_id) every tool call is bound to "
                                             "(default: ENGRAM_MCP_USER_ID).")] = None,
    http: Annotated[int | None, typer.Option("--http", min=1, max=65535, help="Serve streamable HTTP on "
                                             "http://127.0.0.1:PORT/mcp instead of stdio (bearer token: "
                                             "ENGRAM_MCP_TOKEN or <db_path>.mcp-token; see docs/mcp.md).")] = None,
) -> None:
    """Serve the engram MCP tools over stdio (add_memory, search_memory, ask, why, ...) for one user."""
    from engram.cli.app import fail, settings_or_exit
    from engram.errors import EngramError, InvalidInput
    from engram.mcp.server import run_http, run_stdio

    settings = settings_or_exit()
    user_id = user or settings.mcp_user_id
    if not user_id or not user_id.strip():
        fail(InvalidInput("user: give --user or set ENGRAM_MCP_USER_ID (the server serves one tenant)"))
    try:
        if http is None:
            run_stdio(settings, user_id)
        else:
            run_http(settings, user_id, http)
    except EngramError as exc:
        fail(exc)
    except KeyboardInterrupt:
        pass


def register(app: typer.Typer) -> None:
    """Add `engram mcp` to the CLI."""
    app.command("mcp")(mcp_cmd)
