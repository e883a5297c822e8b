"""WrapperClient: the base every client wrapper shares."""

from __future__ import annotations

import copy
from typing import Any

from agentloom.messages import Message, ModelRequest, ModelResponse, TextPart, Usage
from agentloom.routing import WrapperClient

REQ = ModelRequest(model="m", messages=(Message.user("hi"),))


def _reply(text: str) -> ModelResponse:
    return ModelResponse(parts=(TextPart(text=text),), usage=Usage(), finish_reason="stop",
                         model="m", provider="fake")


class _Inner:
    model = "m"

    def __init__(self) -> None:
        self.seen: list[tuple[ModelRequest, Any, Any]] = []

    async def complete(self, request: ModelRequest, *, on_event: Any = None,
                       on_attempt: Any = None) -> ModelResponse:
        self.seen.append((request, on_event, on_attempt))
        return _reply("ok")


class _Upper(WrapperClient):
    async def complete(self, request: ModelRequest, **kw: Any) -> ModelResponse:
        response = await self.inner.complete(request, **kw)
        return _reply(response.text.upper())


async def test_the_base_passes_calls_and_sinks_through() -> None:
    inner = _Inner()
    sink = print
    response = await WrapperClient(inner).complete(REQ, on_event=sink)  # type: ignore[arg-type]
    assert response.text == "ok" and inner.seen == [(REQ, sink, None)]


async def test_wrappers_stack_and_read_attributes_through() -> None:
    inner = _Inner()
    stacked = WrapperClient(_Upper(inner))  # type: ignore[arg-type]
    assert (await stacked.complete(REQ)).text == "OK"
    assert stacked.model == "m"  # read through both wrappers


def test_a_copy_is_rebuilt_without_recursing() -> None:
    wrapped = WrapperClient(_Inner())  # type: ignore[arg-type]
    assert copy.copy(wrapped).inner is wrapped.inner
