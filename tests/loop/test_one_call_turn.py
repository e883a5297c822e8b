"""A tool turn of one call runs it in the run's own task, in a copy of the task's
context: what the tool sees and leaves behind is what a task of its own gives it (the
way a turn of several calls runs them)."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Coroutine
from typing import Any, TypeVar

import pytest

from agentloom.loop import run_loop
from agentloom.loop._tool_turn import in_own_context
from agentloom.messages import Message, ModelRequest, ToolCallPart, ToolResultPart, ToolSpec
from agentloom.testing.scripted import ScriptedModel, tool_call
from agentloom.tools.contracts import ToolContext

MARK: contextvars.ContextVar[str] = contextvars.ContextVar("mark", default="unset")


_T = TypeVar("_T")


async def awaited(coro: Coroutine[Any, Any, _T]) -> _T:
    """`in_own_context(coro)` awaited by a task's coroutine, as the loop awaits it (a
    task can't run the generator itself: Python 3.12 takes coroutines only)."""
    return await in_own_context(coro)


class MarkingBox:
    """A tool that reads MARK, sets it, and waits on the event loop before answering."""

    specs = (ToolSpec(name="mark"),)

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.after: list[str] = []

    async def call(self, call: ToolCallPart, ctx: ToolContext) -> ToolResultPart:
        self.seen.append(MARK.get())
        MARK.set(f"set by {call.id}")
        await asyncio.sleep(0)
        await asyncio.sleep(0.001)  # a real wait on a timer future
        self.after.append(MARK.get())
        return ToolResultPart(call_id=call.id, name=call.name, content="ok")


def _request() -> ModelRequest:
    return ModelRequest(model="m", messages=(Message.user("go"),))


@pytest.mark.parametrize("calls", [1, 2])
async def test_a_tool_sees_the_callers_context_and_leaves_it_unchanged(calls: int) -> None:
    box = MarkingBox()
    model = ScriptedModel([[tool_call("mark", id=f"c{i}") for i in range(calls)], "done"])
    MARK.set("caller")
    result = await run_loop(model, _request(), tools=box)
    assert result.text == "done"
    assert box.seen == ["caller"] * calls
    assert sorted(box.after) == sorted(f"set by c{i}" for i in range(calls))
    assert MARK.get() == "caller"  # nothing the tools set reached the caller


async def test_cancelling_the_run_cancels_its_one_running_tool() -> None:
    started, cleaned = asyncio.Event(), asyncio.Event()

    class Slow:
        specs = (ToolSpec(name="slow"),)

        async def call(self, call: ToolCallPart, ctx: ToolContext) -> ToolResultPart:
            started.set()
            try:
                await asyncio.Event().wait()  # never set
            finally:
                cleaned.set()
            raise AssertionError("unreachable")

    model = ScriptedModel([[tool_call("slow", id="s")], "never"])
    task = asyncio.create_task(run_loop(model, _request(), tools=Slow()))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cleaned.is_set()
    assert len(model.requests) == 1


async def test_in_own_context_passes_results_errors_and_throws_through() -> None:
    async def answer() -> int:
        await asyncio.sleep(0)
        return 42

    async def fail() -> None:
        await asyncio.sleep(0)
        raise KeyError("k")

    caught: list[BaseException] = []

    async def absorbs_a_cancel() -> str:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError as exc:
            caught.append(exc)
            MARK.set("inside")
        return "absorbed"

    assert await in_own_context(answer()) == 42
    with pytest.raises(KeyError):
        await in_own_context(fail())
    MARK.set("outside")
    task = asyncio.create_task(awaited(absorbs_a_cancel()))
    await asyncio.sleep(0)
    task.cancel()
    assert await task == "absorbed"  # the cancellation reached the coroutine inside
    assert len(caught) == 1 and MARK.get() == "outside"


def test_a_coroutine_left_unfinished_is_closed_in_its_own_context() -> None:
    closed: list[str] = []

    async def waits() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            closed.append(MARK.get())

    async def main() -> None:
        MARK.set("run")
        outer = asyncio.create_task(awaited(waits()))
        await asyncio.sleep(0)
        outer.cancel()
        with pytest.raises(asyncio.CancelledError):
            await outer

    asyncio.run(main())
    assert closed == ["run"]
