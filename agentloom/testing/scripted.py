"""In-process models for tests: no HTTP, same `ModelClient` seam as real providers.

`ScriptedModel` answers from a list (a reply per call, or an exception to raise);
`FunctionModel` calls your function with each request. Both record the requests they got.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from agentloom.messages import (
    FinishEvent,
    ModelRequest,
    ModelResponse,
    Part,
    TextDelta,
    TextPart,
    ToolCallPart,
    Usage,
    UsageEvent,
)
from agentloom.providers import AttemptRecord, AttemptSink, EventSink

Reply = str | ModelResponse | BaseException | Sequence[Part]


def make_response(
    reply: str | Sequence[Part],
    *,
    model: str = "scripted",
    provider: str = "scripted",
    finish_reason: str | None = None,
    usage: Usage | None = None,
) -> ModelResponse:
    if isinstance(reply, str):
        parts: tuple[Part, ...] = (TextPart(text=reply),)
        has_calls = False
    else:
        parts = tuple(reply)
        has_calls = any(isinstance(p, ToolCallPart) for p in parts)
    return ModelResponse(
        parts=parts,
        usage=usage or _USAGE,
        finish_reason=finish_reason or ("tool_calls" if has_calls else "stop"),
        model=model,
        provider=provider,
    )


_USAGE = Usage(input_tokens=10, output_tokens=5, input_includes_cached=True)
"""Every scripted reply's usage unless given (Usage is frozen: one object serves all)."""


def tool_call(name: str, arguments: str | dict[str, Any] = "{}", *, id: str | None = None
              ) -> ToolCallPart:
    import json

    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return ToolCallPart(id=id or f"call_{name}", name=name, arguments=args)


class _Base:
    provider = "scripted"

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []
        self._ok: AttemptRecord | None = None

    async def _answer(self, request: ModelRequest) -> ModelResponse:
        raise NotImplementedError

    async def complete(
        self,
        request: ModelRequest,
        *,
        on_event: EventSink | None = None,
        on_attempt: AttemptSink | None = None,
    ) -> ModelResponse:
        self.requests.append(request)
        try:
            response = await self._answer(request)
        except BaseException as exc:
            if on_attempt is not None:
                on_attempt(AttemptRecord(provider=self.provider, model=request.model,
                                         attempt=1, ok=False, duration_seconds=0.0,
                                         error_type=type(exc).__name__,
                                         status=getattr(exc, "status", None),
                                         phase=getattr(exc, "phase", None),
                                         request_sent=getattr(exc, "request_sent", None)))
            raise
        if on_attempt is not None:
            # AttemptRecord is frozen: equal successful attempts share one record.
            ok = self._ok
            if ok is None or ok.model != request.model or ok.provider != self.provider:
                ok = self._ok = AttemptRecord(provider=self.provider, model=request.model,
                                              attempt=1, ok=True, duration_seconds=0.0)
            on_attempt(ok)
        if request.stream and on_event is not None:
            for word in _chunks(response.text):
                on_event(TextDelta(text=word))
            on_event(UsageEvent(usage=response.usage))
            on_event(FinishEvent(finish_reason=response.finish_reason, model=response.model))
        return response


def _chunks(text: str) -> list[str]:
    out, cur = [], ""
    for ch in text:
        cur += ch
        if ch == " ":
            out.append(cur)
            cur = ""
    if cur:
        out.append(cur)
    return out


class ScriptedModel(_Base):
    """Replies in order. A string is a text reply; a list of parts may hold tool calls;
    an exception instance is raised. Running out of replies fails the test loudly."""

    def __init__(self, replies: Sequence[Reply], *, model: str = "scripted") -> None:
        super().__init__()
        self._replies = list(replies)
        self.model = model

    async def _answer(self, request: ModelRequest) -> ModelResponse:
        if not self._replies:
            raise AssertionError(f"ScriptedModel ran out of replies (call {len(self.requests)})")
        reply = self._replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, ModelResponse):
            return reply
        return make_response(reply, model=request.model or self.model)


class FunctionModel(_Base):
    """Calls `fn(request)` (sync or async) for each call; it returns a reply as above."""

    def __init__(self, fn: Callable[[ModelRequest], Reply | Awaitable[Reply]]) -> None:
        super().__init__()
        self._fn = fn

    async def _answer(self, request: ModelRequest) -> ModelResponse:
        reply = self._fn(request)
        if type(reply) is not str and inspect.isawaitable(reply):
            reply = await reply
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, ModelResponse):
            return reply
        return make_response(reply, model=request.model)
