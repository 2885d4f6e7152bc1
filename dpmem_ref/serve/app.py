"""The FastAPI application of `dpmem serve` (imported only when serving: extra `serve`).

Routes:
- `POST /v1/turns` (application token): one turn of the runtime in that application's budget
  scope for that user: 200 {"response", "control", "remaining", "route", "views"};
  `"respond": false` releases the views without the service's answer;
- `POST /v1/turns/stream`, `GET /v1/budget`, `POST /v1/chat/completions` (dpmem_ref.serve.chat)
  and, with `mcp`, the MCP server at /v1/mcp/ (dpmem_ref.serve.mcp_server): application token;
- `POST /v1/users/{user}/memory`, `GET|PUT|DELETE /v1/users/{user}/memory/{item_id}`,
  `GET /v1/users/{user}/memory`, `GET /v1/users/{user}/export`,
  `GET /v1/users/{user}/ledgers` (owner token only);
- `GET /healthz`, `GET /openapi.json`, `GET /docs` (no token).

Status codes: 401 missing or unknown token (dpmem_ref.serve.gate, before the body is read),
403 a token of the wrong kind or an application asking for a user it may not query, 413 a
body over the bound, 422 a malformed body or a runtime input error (one line naming the
field, never the value), 503 the ledger store unavailable, a contract check refusing, or the
LLM channel failing after the charge (`"field": "llm"`, naming the channel: a retry with the
same `Idempotency-Key` header regenerates from the recorded views at no new charge). Every
error is `{"error": ..., "field": ...}` on one line.

Concurrency: turn routes are asynchronous (dpmem_ref.serve.turns: the kernel's turn in a worker
thread, the release deadline as an asyncio wait, then the channel). Turns of one (user,
application) scope are serialised (one lock per scope: the scope's history grows in one order,
as in one chat); turns of different scopes run in parallel (the runtime is thread-safe for
that; each charge goes through the ledger store's own transaction, C5 re-checked on the
committed ledgers, as between replicas). Owner routes run in the thread pool. The LLM
channel is called by one thread at a time (`SerialChannel`, installed by `serve_one`).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Annotated, Any, Protocol

import anyio.to_thread
from fastapi import Depends, FastAPI, Header, Path, Query, Request, Security
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.exceptions import HTTPException

from dpmem_ref.core.errors import ContractViolation, InputError, one_line
from dpmem_ref.ledger.contract import LedgerStoreError
from dpmem_ref.mechanism.timing import DEFAULT_DURABLE_TURN_DEADLINE_S
from dpmem_ref.serve.gate import PRINCIPAL, Gate, log
from dpmem_ref.serve.keys import Keys, Principal
from dpmem_ref.serve.models import (
    NAME_PATTERN,
    Budget,
    Done,
    ErrorBody,
    Health,
    LedgerList,
    MemoryAdd,
    MemoryCreated,
    MemoryItemOut,
    MemoryItems,
    MemoryUpdate,
    ScopeLedgers,
    TurnRequest,
    TurnResponse,
    ViewsTurnRequest,
)
from dpmem_ref.serve.turns import TurnService, turn_response

ITEM_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
"""Memory item ids (dpmem_ref.runtime.memory)."""


class Runtime(Protocol):
    """What the service needs of dpmem_ref.runtime.AgentRuntime."""

    channel: Any
    channel_name: str

    def turn(
        self, user: str, app: str, interaction: str, query: str, respond: bool = True, turn_id: str | None = None
    ) -> Any: ...
    def remaining(self, user: str, app: str) -> dict[str, str]: ...
    def view_texts(self, turn: Any) -> list[tuple[str, str]]: ...
    def memory_items(self, user: str) -> list[Any]: ...
    def add_memory(self, user: str, slot: str, text: str) -> str: ...
    def update_memory(self, user: str, item_id: str, text: str) -> None: ...
    def delete_memory(self, user: str, item_id: str) -> None: ...
    def ledgers(self, user: str) -> list[dict[str, Any]]: ...


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    return {code: {"model": ErrorBody} for code in codes}


APP_TOKEN = HTTPBearer(auto_error=False, scheme_name="applicationToken", description="an application's bearer token")
OWNER_TOKEN = HTTPBearer(auto_error=False, scheme_name="ownerToken", description="the owner's bearer token")


def _principal(request: Request) -> Principal:
    principal = request.scope.get(PRINCIPAL)
    if not isinstance(principal, Principal):  # the gate answers 401 first; kept for direct mounts
        raise HTTPException(401, "missing or unknown bearer token")
    return principal


def as_application(
    request: Request, _: Annotated[HTTPAuthorizationCredentials | None, Security(APP_TOKEN)]
) -> Principal:
    principal = _principal(request)
    if principal.kind != "app":
        raise HTTPException(403, "this endpoint takes an application token")
    return principal


def as_owner(request: Request, _: Annotated[HTTPAuthorizationCredentials | None, Security(OWNER_TOKEN)]) -> Principal:
    principal = _principal(request)
    if principal.kind != "owner":
        raise HTTPException(403, "this endpoint takes the owner token")
    return principal


ApplicationPrincipal = Annotated[Principal, Depends(as_application)]
OwnerPrincipal = Annotated[Principal, Depends(as_owner)]
User = Annotated[str, Path(pattern=NAME_PATTERN, description="a user id")]
ItemId = Annotated[str, Path(pattern=ITEM_PATTERN, description="a memory item id")]


def _field(location: tuple[Any, ...]) -> str:
    return ".".join(one_line(str(part))[:64] for part in location) or "body"


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def malformed(_: Request, error: RequestValidationError) -> JSONResponse:
        first = error.errors()[0] if error.errors() else {}
        if first.get("type") == "json_invalid":  # loc is ("body", character offset)
            return JSONResponse({"error": "body: expected valid JSON", "field": "body"}, status_code=422)
        field = _field(tuple(first.get("loc", ())))
        # pydantic's msg states the rule ("String should have at most 4096 characters"),
        # never the input; the input itself is dropped.
        message = one_line(str(first.get("msg", "malformed request")))[:200]
        return JSONResponse({"error": f"{field}: {message}", "field": field}, status_code=422)

    @app.exception_handler(HTTPException)
    async def refused(_: Request, error: HTTPException) -> JSONResponse:
        if error.status_code == 400:  # FastAPI's "error parsing the body": bytes that are not JSON text
            return JSONResponse({"error": "body: expected UTF-8 JSON", "field": "body"}, status_code=422)
        return JSONResponse({"error": one_line(str(error.detail)), "field": None}, status_code=error.status_code, headers=error.headers)

    @app.exception_handler(InputError)
    async def bad_input(_: Request, error: InputError) -> JSONResponse:
        # field and expectation only: `found` may quote what was sent.
        return JSONResponse({"error": f"{error.field}: expected {error.expected}", "field": error.field}, status_code=422)

    from dpmem_ref.runtime.agent import ChannelUnavailable

    @app.exception_handler(ChannelUnavailable)
    async def channel_down(_: Request, error: ChannelUnavailable) -> JSONResponse:
        # The turn was charged and its views recorded: the client's input is not at fault.
        retry = "retry with the same Idempotency-Key: no new charge"
        return JSONResponse({"error": f"{error.field}: unavailable ({retry})", "field": "llm"}, status_code=503)

    @app.exception_handler(LedgerStoreError)
    async def store_down(_: Request, error: LedgerStoreError) -> JSONResponse:
        log.error("ledger store: %s", one_line(str(error)))  # store messages redact passwords
        return JSONResponse({"error": "ledger store unavailable", "field": None}, status_code=503)

    @app.exception_handler(Exception)
    async def internal(_: Request, error: Exception) -> JSONResponse:
        # Starlette re-raises after this answer; the gate logs type and origin, never the message.
        return JSONResponse({"error": "internal error", "field": None}, status_code=500)

    @app.exception_handler(ContractViolation)
    async def contract(_: Request, error: ContractViolation) -> JSONResponse:
        log.error("contract violation %s", error.code)
        return JSONResponse({"error": f"refused by contract check {error.condition}", "field": None}, status_code=503)


def create_app(
    runtime: Runtime,
    keys: Keys,
    *,
    title: str = "dpmem serve",
    mcp: bool = False,
    deadline_s: float | None = DEFAULT_DURABLE_TURN_DEADLINE_S,
    workers: int | None = None,
) -> Any:
    """The ASGI application (the FastAPI app wrapped in the gate) serving `runtime`; `mcp`
    mounts the MCP server at /v1/mcp (dpmem_ref.serve.mcp_server)."""
    turns = TurnService(runtime, deadline_s, workers)
    lifespan = None
    mount = None
    if mcp:
        from dpmem_ref.serve.mcp_server import mcp_app

        mount, lifespan = mcp_app(turns)  # its own import of the turn answer: no cycle back to here
    api = FastAPI(
        title=title,
        version="1",
        description="DP-MemView behind HTTP: applications query, the owner manages memory (docs/serve.md).",
        docs_url="/docs",
        redoc_url=None,
        lifespan=lifespan,
    )
    _install_error_handlers(api)

    @api.post("/v1/turns", response_model=TurnResponse, responses=_errors(401, 403, 413, 422, 503))
    async def post_turn(
        body: ViewsTurnRequest,
        principal: ApplicationPrincipal,
        idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key", pattern=NAME_PATTERN)] = None,
    ) -> TurnResponse:
        """One turn in the calling application's budget scope (user, application); `respond: false`
        returns the released views only (for an application that prompts its own model)."""
        if not principal.may_query(body.user):
            raise HTTPException(403, "this application may not query this user")
        result, texts, answer = await turns.turn(
            body.user, principal.name, body.interaction, body.query, body.respond, turn_id=idempotency_key
        )
        return turn_response(result, texts, answer)

    install_front_doors(api, runtime, turns)
    if mount is not None:
        api.mount("/v1/mcp", mount)

    @api.post(
        "/v1/users/{user}/memory", status_code=201, response_model=MemoryCreated, responses=_errors(401, 403, 413, 422, 503)
    )
    def add_memory(user: User, body: MemoryAdd, _: OwnerPrincipal) -> MemoryCreated:
        """Add a memory item to a declared slot (owner only)."""
        return MemoryCreated(id=runtime.add_memory(user, body.slot, body.text))

    @api.put("/v1/users/{user}/memory/{item_id}", response_model=Done, responses=_errors(401, 403, 413, 422, 503))
    def update_memory(user: User, item_id: ItemId, body: MemoryUpdate, _: OwnerPrincipal) -> Done:
        """Replace a memory item's text (owner only)."""
        runtime.update_memory(user, item_id, body.text)
        return Done(ok=True)

    @api.delete("/v1/users/{user}/memory/{item_id}", response_model=Done, responses=_errors(401, 403, 422, 503))
    def delete_memory(user: User, item_id: ItemId, _: OwnerPrincipal) -> Done:
        """Delete a memory item (owner only)."""
        runtime.delete_memory(user, item_id)
        return Done(ok=True)

    @api.get("/v1/users/{user}/ledgers", response_model=LedgerList, responses=_errors(401, 403, 422, 503))
    def get_ledgers(user: User, _: OwnerPrincipal) -> LedgerList:
        """Every budget scope of the user with its ledgers and caps as exact fractions (owner only)."""
        scopes = runtime.ledgers(user)
        return LedgerList(user=user, scopes=[ScopeLedgers(**scope) for scope in scopes])

    @api.get("/healthz", response_model=Health)
    def healthz() -> Health:
        """Liveness (no token)."""
        return Health(status="ok")

    return Gate(api, keys)


def install_front_doors(api: FastAPI, runtime: Runtime, turns: TurnService) -> None:
    """The budget read, the streamed turn, the owner's memory reads and the OpenAI-compatible facade."""
    from dpmem_ref.serve.chat import install_chat

    @api.get("/v1/budget", response_model=Budget, responses=_errors(401, 403, 422, 503))
    async def get_budget(
        principal: ApplicationPrincipal, user: Annotated[str, Query(pattern=NAME_PATTERN, description="a user id")]
    ) -> Budget:
        """The calling application's remaining budget for `user` (free: no turn, no charge)."""
        if not principal.may_query(user):
            raise HTTPException(403, "this application may not query this user")
        left = await anyio.to_thread.run_sync(lambda: runtime.remaining(user, principal.name))
        return Budget(user=user, app=principal.name, remaining=left)

    @api.post(
        "/v1/turns/stream",
        responses={
            200: {"content": {"text/event-stream": {"schema": {}}}, "description": "server-sent events (docs/serve.md)"},
            **_errors(401, 403, 413, 422, 503),
        },
    )
    async def stream_turn(body: TurnRequest, principal: ApplicationPrincipal) -> StreamingResponse:
        """One turn answered as server-sent events: `released` (route, control, remaining, views) at
        the release deadline, then `delta` pieces of the answer, then `done`."""
        if not principal.may_query(body.user):
            raise HTTPException(403, "this application may not query this user")
        events = turns.stream(body.user, principal.name, body.interaction, body.query)
        first = await anext(events)  # errors (input, store) surface here as a JSON answer, not mid-stream
        return StreamingResponse(_sse(first, events), media_type="text/event-stream", headers={"cache-control": "no-store"})

    @api.get("/v1/users/{user}/memory", response_model=MemoryItems, responses=_errors(401, 403, 422, 503))
    def list_memory(user: User, _: OwnerPrincipal) -> MemoryItems:
        """The user's memory items with their text (owner only)."""
        return MemoryItems(user=user, items=[_item(e) for e in runtime.memory_items(user)])

    @api.get("/v1/users/{user}/memory/{item_id}", response_model=MemoryItemOut, responses=_errors(401, 403, 404, 422, 503))
    def read_memory(user: User, item_id: ItemId, _: OwnerPrincipal) -> MemoryItemOut:
        """One memory item (owner only)."""
        for entry in runtime.memory_items(user):
            if entry.item_id == item_id:
                return _item(entry)
        raise HTTPException(404, "item_id: no such memory item of this user")

    @api.get(
        "/v1/users/{user}/export",
        responses={200: {"content": {"application/x-ndjson": {"schema": {}}}, "description": "JSON lines"}, **_errors(401, 403, 422, 503)},
    )
    def export_memory(user: User, _: OwnerPrincipal) -> PlainTextResponse:
        """The user's memory items as JSON lines, the memory file's format (owner only)."""
        lines = "".join(json.dumps(e.to_json(), sort_keys=True) + "\n" for e in runtime.memory_items(user))
        return PlainTextResponse(lines, media_type="application/x-ndjson")

    install_chat(api, turns, as_application, _errors(401, 403, 413, 422, 503))


def _item(entry: Any) -> MemoryItemOut:
    return MemoryItemOut(**{k: v for k, v in entry.to_json().items() if k in MemoryItemOut.model_fields})


def sse_event(event: str, data: Any) -> bytes:
    """One server-sent event whose data is one line of JSON."""
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


async def _sse(first: tuple[str, Any], events: AsyncIterator[tuple[str, Any]]) -> AsyncIterator[bytes]:
    _, (result, texts) = first
    yield sse_event("released", turn_response(result, texts, "").model_dump(exclude={"response"}))
    async for kind, value in events:
        yield sse_event(kind, {"text": value})
