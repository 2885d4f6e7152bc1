"""The OpenAI-compatible facade of `dpmem serve`: `POST /v1/chat/completions` (docs/serve.md).

An application that speaks the OpenAI chat API points its client at the service
(`base_url=http://HOST:PORT/v1`, `api_key=<its application token>`) and asks as usual:
- the **query** is the text of the last `user` message (earlier messages are not read: the
  agent's conversation state is the scope's own released history);
- the **user** is the request's `user` field, or the `X-DPMem-User` header;
- the **interaction** label is `dpmem.interaction` (extension field), or the
  `X-DPMem-Interaction` header, default "chat";
- `dpmem.respond: false` (extension field) releases the views without the service's answer;
- `model` is echoed back; sampling parameters (`temperature`, ...) are accepted and ignored.
The answer is a `chat.completion` (or, with `stream: true`, `chat.completion.chunk` server-sent
events ending in `data: [DONE]`) whose extension field `dpmem` carries `route`, `control`,
`remaining` and `views` (first chunk when streamed). The token, the scope and the budget
are exactly those of `POST /v1/turns`: the facade calls the same TurnService.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, Header
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException

from dpmem_ref.runtime.agent import MAX_QUERY_CHARS
from dpmem_ref.serve.keys import Principal
from dpmem_ref.serve.models import NAME_PATTERN
from dpmem_ref.serve.turns import turn_response

MAX_MESSAGES = 256


class ContentPart(BaseModel):
    model_config = ConfigDict(extra="ignore")
    type: str = Field(max_length=64)
    text: str | None = Field(default=None, max_length=MAX_QUERY_CHARS)


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")
    role: str = Field(max_length=32)
    content: str | list[ContentPart] | None = Field(default=None)


class DPMemOptions(BaseModel):
    """The request's extension field `dpmem`."""

    model_config = ConfigDict(extra="forbid", strict=True)
    interaction: str | None = Field(default=None, pattern=NAME_PATTERN)
    respond: bool = True


class ChatRequest(BaseModel):
    """An OpenAI chat completion request (the fields the facade reads; others are ignored)."""

    model_config = ConfigDict(extra="ignore")
    model: str = Field(default="dpmem", max_length=128)
    messages: list[ChatMessage] = Field(min_length=1, max_length=MAX_MESSAGES)
    user: str | None = Field(default=None, pattern=NAME_PATTERN)
    stream: bool = False
    dpmem: DPMemOptions = Field(default_factory=DPMemOptions)


class ChatChoiceMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str


class ChatChoice(BaseModel):
    index: int
    message: ChatChoiceMessage
    finish_reason: str


class ChatCompletion(BaseModel):
    """An OpenAI `chat.completion` with the DP-MemView extension field `dpmem`."""

    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[ChatChoice]
    usage: dict[str, int]
    dpmem: dict[str, Any] = Field(description="route, control, remaining and the released views")


def _query(messages: list[ChatMessage]) -> str:
    for message in reversed(messages):
        if message.role == "user":
            content = message.content
            if isinstance(content, list):
                content = "".join(part.text or "" for part in content if part.type == "text")
            if content:
                return content
            break
    raise HTTPException(422, "messages: expected a last user message with text")


def install_chat(api: FastAPI, turns: Any, as_application: Any, errors: dict[int | str, dict[str, Any]]) -> None:
    """Add the route; `as_application` and `errors` are dpmem_ref.serve.app's (no import cycle)."""
    @api.post(
        "/v1/chat/completions",
        response_model=ChatCompletion,
        responses={
            200: {"content": {"text/event-stream": {"schema": {}}}},
            **errors,
        },
    )
    async def chat_completions(
        body: ChatRequest,
        x_dpmem_user: Annotated[str | None, Header(pattern=NAME_PATTERN)] = None,
        x_dpmem_interaction: Annotated[str | None, Header(pattern=NAME_PATTERN)] = None,
        principal: Principal = Depends(as_application),  # noqa: B008  # a default: as_application is local
    ) -> Any:
        """OpenAI-compatible chat: the last user message is the query (module docstring of dpmem_ref.serve.chat)."""
        user = body.user or x_dpmem_user
        if user is None:
            raise HTTPException(422, "user: expected the request's user field or the X-DPMem-User header")
        if not principal.may_query(user):
            raise HTTPException(403, "this application may not query this user")
        query = _query(body.messages)
        if len(query) > MAX_QUERY_CHARS:
            raise HTTPException(422, f"messages: expected a query of at most {MAX_QUERY_CHARS} characters")
        interaction = body.dpmem.interaction or x_dpmem_interaction or "chat"
        ident, created = f"chatcmpl-{secrets.token_hex(12)}", int(time.time())
        if body.stream and body.dpmem.respond:
            events = turns.stream(user, principal.name, interaction, query)
            first = await anext(events)
            return StreamingResponse(
                _chunks(ident, created, body.model, first, events),
                media_type="text/event-stream",
                headers={"cache-control": "no-store"},
            )
        result, texts, answer = await turns.turn(user, principal.name, interaction, query, body.dpmem.respond)
        extension = turn_response(result, texts, answer).model_dump(exclude={"response"})
        if body.stream:  # views only, streamed: one chunk with the extension, then the end
            return StreamingResponse(
                _single(ident, created, body.model, extension), media_type="text/event-stream", headers={"cache-control": "no-store"}
            )
        return ChatCompletion(
            id=ident,
            created=created,
            model=body.model,
            choices=[ChatChoice(index=0, message=ChatChoiceMessage(content=answer), finish_reason="stop")],
            usage={"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
            dpmem=extension,
        )


def _chunk(ident: str, created: int, model: str, delta: dict[str, Any], finish: str | None, **extra: Any) -> bytes:
    data = {
        "id": ident,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }
    return f"data: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


async def _single(ident: str, created: int, model: str, extension: dict[str, Any]) -> AsyncIterator[bytes]:
    yield _chunk(ident, created, model, {"role": "assistant", "content": ""}, None, dpmem=extension)
    yield _chunk(ident, created, model, {}, "stop")
    yield b"data: [DONE]\n\n"


async def _chunks(
    ident: str, created: int, model: str, first: tuple[str, Any], events: AsyncIterator[tuple[str, Any]]
) -> AsyncIterator[bytes]:
    _, (result, texts) = first
    extension = turn_response(result, texts, "").model_dump(exclude={"response"})
    yield _chunk(ident, created, model, {"role": "assistant", "content": ""}, None, dpmem=extension)
    async for kind, value in events:
        if kind == "delta":
            yield _chunk(ident, created, model, {"content": value}, None)
    yield _chunk(ident, created, model, {}, "stop")
    yield b"data: [DONE]\n\n"
