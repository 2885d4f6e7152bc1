"""The Model Context Protocol server of `dpmem serve --mcp` (official `mcp` SDK, extra `serve`).

Mounted at `/v1/mcp/` (streamable HTTP, stateless, JSON answers) behind the same gate as every
`/v1/` route: the MCP client sends the application's token as `Authorization: Bearer ...`,
and the tools act with that application's scope and budget, exactly as `POST /v1/turns`
and `GET /v1/budget` (the same TurnService, the same C5 charge before release).

Tools:
- `ask(user, query, interaction="mcp", respond=true)`: one turn; returns response, route,
  control, remaining and the released views (`respond=false`: views only);
- `budget(user)`: the application's remaining budget for the user (free).
DNS-rebinding protection of the SDK is off: every request already needs a bearer token that
a rebinding page does not have (threat model: docs/serve.md).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings

from dpmem_ref.core.errors import InputError
from dpmem_ref.serve.gate import PRINCIPAL
from dpmem_ref.serve.keys import Principal
from dpmem_ref.serve.turns import turn_response


def _principal(ctx: Context) -> Principal:
    request = ctx.request_context.request
    principal = getattr(request, "scope", {}).get(PRINCIPAL)
    if not isinstance(principal, Principal) or principal.kind != "app":
        raise ToolError("this tool takes an application token")
    return principal


def _may(principal: Principal, user: str) -> None:
    if not principal.may_query(user):
        raise ToolError("this application may not query this user")


def mcp_app(turns: Any) -> tuple[Any, Any]:
    """(the ASGI app to mount at /v1/mcp, the FastAPI lifespan that runs its session manager)."""
    logging.getLogger("mcp").setLevel(logging.WARNING)  # the SDK's INFO lines may name tool arguments
    server = MCPServer(name="dpmem", instructions="A personal agent behind DP-MemView: each ask spends this application's budget.")

    @server.tool(description="Ask the user's agent one question (one DP-MemView turn in this application's budget scope).")
    async def ask(user: str, query: str, ctx: Context, interaction: str = "mcp", respond: bool = True) -> dict[str, Any]:
        principal = _principal(ctx)
        _may(principal, user)
        try:
            result, texts, answer = await turns.turn(user, principal.name, interaction, query, respond)
        except InputError as error:  # field and expectation only, as over HTTP
            raise ToolError(f"{error.field}: expected {error.expected}") from None
        except Exception as error:  # the store or a contract check: the type only, never a message
            raise ToolError(f"refused ({type(error).__name__})") from None
        return turn_response(result, texts, answer).model_dump()

    @server.tool(description="This application's remaining budget for the user (free: no turn, no charge).")
    async def budget(user: str, ctx: Context) -> dict[str, Any]:
        principal = _principal(ctx)
        _may(principal, user)
        try:
            left = await anyio.to_thread.run_sync(lambda: turns.runtime.remaining(user, principal.name))
        except InputError as error:
            raise ToolError(f"{error.field}: expected {error.expected}") from None
        return {"user": user, "app": principal.name, "remaining": left}

    app = server.streamable_http_app(
        streamable_http_path="/",
        stateless_http=True,
        json_response=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )

    @contextlib.asynccontextmanager
    async def lifespan(_: Any) -> AsyncIterator[None]:
        async with server.session_manager.run():
            yield

    return app, lifespan
