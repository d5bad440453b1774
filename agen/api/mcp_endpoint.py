"""The Hub's MCP endpoint: ``/mcp``, MCP over streamable HTTP, one tool per API method (seed 000 §11).

The tools come from the same registry as the HTTP routes and the OpenAPI document: a tool is an RPC's
snake_case name, its description the RPC's doc and its input schema the request model's JSON schema, so
an MCP client, ``curl`` and the CLI can never see different APIs. Every call goes through the one
dispatch path (scope, drain, handler). The bearer token is checked before the MCP SDK sees the request:
no token or a bad one is a 401 in the API's error shape, ``tools/list`` shows only the tools the token
may call (the same rule as dispatch; the Nest's own calls are never tools), and a call without the
scope is refused as a tool error that says which scope it needs. A token holds at most
``MAX_STREAMS_PER_TOKEN`` open ``GET /mcp`` streams at once.

The SDK's streamable-HTTP session manager runs stateless (each POST stands alone; nothing to clean up
when a client goes away) and answers with JSON. Its task group lives in a task started by the first
request on the loop that serves it, and stops with :meth:`McpEndpoint.close`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

from agen.api.dispatch import dispatch, may_call
from agen.api.registry import RPCS, Rpc
from agen.errors import AgenError, InvalidError, RateLimitedError, internal_error
from agen.hub.auth import MACHINE_SCOPES

if TYPE_CHECKING:
    import mcp_types

    from agen.hub.auth import Principal
    from agen.hub.service import Hub

log = logging.getLogger("agen.api.mcp")
PRINCIPAL_KEY = "agen.principal"
MAX_STREAMS_PER_TOKEN = 4
"""Open ``GET /mcp`` event streams one token may hold at once: each is a connection held open until
the client leaves, so a token cannot pin down the Hub's connections by opening them without end."""


def tool_name(rpc_name: str) -> str:
    """``SubmitTask`` → ``submit_task``, ``CountA2ACall`` → ``count_a2a_call``: MCP tool names are
    snake_case (seed 000 §11); a run of capitals with digits is one word (A2A), as in the handlers."""
    words = re.findall(r"[A-Z][a-z]+|[A-Z0-9]+(?![a-z])", rpc_name)
    return "_".join(words).lower()


TOOLS: dict[str, Rpc[Any, Any]] = {
    tool_name(name): rpc for name, rpc in RPCS.items() if rpc.scope not in MACHINE_SCOPES
}
"""Every RPC but the Nest's own calls and EnrolNest: those are machine calls over /v1 with a Nest's
credential or a join token, never tools for a person or an agent."""


def _text(payload: Any) -> list[mcp_types.TextContent]:
    import mcp_types

    return [mcp_types.TextContent(type="text", text=json.dumps(payload, ensure_ascii=False))]


def _refusal(e: AgenError) -> mcp_types.CallToolResult:
    import mcp_types

    return mcp_types.CallToolResult(content=_text(e.to_dict()), is_error=True)


class McpEndpoint:
    """The ASGI app mounted at ``/mcp`` for one Hub."""

    def __init__(self, hub: Hub) -> None:
        self.hub = hub
        self._manager: Any = None
        self._runner: asyncio.Task[None] | None = None
        self._ready: asyncio.Event | None = None
        self._stop: asyncio.Event | None = None
        self._streams: dict[str, int] = {}
        """Open GET streams per token id (MAX_STREAMS_PER_TOKEN)."""

    def _server(self) -> Any:
        import mcp_types
        from mcp.server.lowlevel import Server

        from agen import __version__

        async def list_tools(ctx: Any, params: Any) -> mcp_types.ListToolsResult:
            principal = _principal(ctx)
            tools = [
                mcp_types.Tool(
                    name=name,
                    description=f"{rpc.doc} (API method {rpc.name}; scope {rpc.scope})",
                    input_schema=rpc.request.model_json_schema(),
                )
                for name, rpc in TOOLS.items()
                if may_call(principal, rpc)
            ]
            return mcp_types.ListToolsResult(tools=tools)

        async def call_tool(
            ctx: Any, params: mcp_types.CallToolRequestParams
        ) -> mcp_types.CallToolResult:
            principal = _principal(ctx)
            rpc = TOOLS.get(params.name)
            try:
                if principal.on_behalf:  # per call: the task comes in _meta (or the header)
                    meta: dict[str, Any] = dict(params.meta or {})
                    task = meta.get("agen/taskId") or ctx.request.headers.get("x-agen-task")
                    principal = await self.hub.auth.act_for_task(principal, task)
                if rpc is None:
                    raise InvalidError(
                        f"no tool {params.name!r} on this Hub; tools/list shows the ones your token may call",
                        tool=params.name,
                    )
                principal.require(rpc.scope, rpc.name)
                try:
                    request = rpc.request.model_validate(params.arguments or {}, strict=True)
                except ValidationError as e:
                    problems = [
                        f"{'.'.join(str(x) for x in err['loc']) or '(arguments)'}: {err['msg']}"
                        for err in e.errors()
                    ]
                    raise InvalidError(
                        f"{params.name}: invalid arguments: {'; '.join(problems)}",
                        problems=problems,
                    ) from None
                result = await dispatch(self.hub, principal, rpc, request)
            except AgenError as e:
                return _refusal(e)
            except Exception:  # the log keeps the traceback; the caller gets an id to quote
                return _refusal(internal_error(log, f"MCP tool {params.name}"))
            data = result.model_dump(mode="json")
            return mcp_types.CallToolResult(content=_text(data), structured_content=data)

        return Server(
            "agen-hub",
            version=__version__,
            instructions="The agen Hub's API as tools: one per API method, filtered by your token's scopes.",
            on_list_tools=list_tools,
            on_call_tool=call_tool,
        )

    async def _run(self) -> None:
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

        assert self._ready is not None and self._stop is not None
        # The bearer token is required before the SDK sees a request, so the SDK's DNS-rebinding
        # Host check (which would refuse a Hub listening on a non-loopback address) is not needed.
        self._manager = StreamableHTTPSessionManager(
            app=self._server(), json_response=True, stateless=True
        )
        async with self._manager.run():
            self._ready.set()
            await self._stop.wait()

    async def _started(self) -> Any:
        if self._runner is None:
            self._ready, self._stop = asyncio.Event(), asyncio.Event()
            self._runner = asyncio.create_task(self._run(), name="agen-mcp-door")
        assert self._ready is not None
        ready = asyncio.ensure_future(self._ready.wait())
        await asyncio.wait({ready, self._runner}, return_when=asyncio.FIRST_COMPLETED)
        if not ready.done():
            ready.cancel()
            self._runner.result()  # the manager failed to start: raise why
        return self._manager

    async def close(self) -> None:
        if self._runner is None:
            return
        assert self._stop is not None
        self._stop.set()
        await asyncio.gather(self._runner, return_exceptions=True)
        self._runner = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        from starlette.datastructures import Headers

        from agen.api.peer_cert import peer_certificate
        from agen.hub.auth import bearer_token

        try:
            principal = await self.hub.auth.authenticate(
                bearer_token(Headers(scope=scope)), self.hub.clock(), peer_certificate(scope)
            )
        except AgenError as e:
            await _refuse(e, scope, receive, send)
            return
        manager = await self._started()
        if scope.get("method") != "GET":
            await manager.handle_request({**scope, PRINCIPAL_KEY: principal}, receive, send)
            return
        held = self._streams.get(principal.id, 0)
        if held >= MAX_STREAMS_PER_TOKEN:
            refused = RateLimitedError(
                f"this token already holds {held} open GET /mcp event streams, the most one token "
                f"may hold ({MAX_STREAMS_PER_TOKEN}); close one first (tool calls are POST /mcp and "
                "need no stream)",
                limit=MAX_STREAMS_PER_TOKEN,
            )
            await _refuse(refused, scope, receive, send)
            return
        self._streams[principal.id] = held + 1
        try:
            await manager.handle_request({**scope, PRINCIPAL_KEY: principal}, receive, send)
        finally:
            left = self._streams.pop(principal.id) - 1
            if left:
                self._streams[principal.id] = left


async def _refuse(e: AgenError, scope: Scope, receive: Receive, send: Send) -> None:
    """The API's error shape, before the MCP SDK sees the request."""
    response = JSONResponse(
        e.to_dict(),
        status_code=e.http_status,
        headers={"WWW-Authenticate": "Bearer"} if e.http_status == 401 else None,
    )
    await response(scope, receive, send)


def _principal(ctx: Any) -> Principal:
    """The caller the door authenticated, carried on the ASGI scope of the HTTP request."""
    request = ctx.request
    principal: Principal = request.scope[PRINCIPAL_KEY]
    return principal
