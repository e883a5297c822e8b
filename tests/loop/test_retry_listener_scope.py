"""Whose `on_retry` hears a retry: the run the retrying call belongs to, never an enclosing
one. A run without an observer of the caller's sets no listener of its own (nobody would
hear it), so it must hide an enclosing run's for as long as it runs."""

from __future__ import annotations

from typing import Any

from loop_doubles import response

import agentloom
from agentloom.errors import ProviderError
from agentloom.loop import LoopOptions, run_loop
from agentloom.messages import Message, ModelRequest, ModelResponse
from agentloom.routing.retry_notice import retry_listener


def req() -> ModelRequest:
    return ModelRequest(model="m", messages=(Message.user("hi"),))


class NoticingModel:
    """Tells the current listener of one retry before answering, as the router does before
    it waits; `inner` (if given) runs first, inside this call."""

    def __init__(self, inner: Any = None) -> None:
        self.inner = inner
        self.heard_by: list[object] = []

    async def complete(self, request: ModelRequest, **kw: Any) -> ModelResponse:
        if self.inner is not None:
            await self.inner()
        listener = retry_listener.get()
        self.heard_by.append(listener)
        if listener is not None:
            listener(1, ProviderError("busy", provider="p", status=503))
        return response("ok")


async def test_a_plain_run_inside_an_observed_one_keeps_its_retries_to_itself() -> None:
    inner_model = NoticingModel()

    async def inner_run() -> None:
        await run_loop(inner_model, req(), options=LoopOptions())

    seen = agentloom.ListObserver()
    outer_model = NoticingModel(inner=inner_run)
    result = await run_loop(outer_model, req(), options=LoopOptions(observer=seen))
    assert result.text == "ok"
    outer_listener = outer_model.heard_by[0]
    assert outer_listener is not None  # back once the inner run ended
    assert inner_model.heard_by[0] is not outer_listener  # hidden while it ran
    assert [kind for kind, _ in seen.events].count("retry") == 1  # its own retry only


async def test_a_plain_run_outside_any_run_sets_no_listener() -> None:
    # Nobody would hear it: the collector counts attempts, not retry notices.
    model = NoticingModel()
    await run_loop(model, req(), options=LoopOptions())
    assert model.heard_by == [None] and retry_listener.get() is None
