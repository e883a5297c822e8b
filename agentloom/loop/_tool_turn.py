"""One turn's tool calls: run every call of a reply at once, bounded, in one task group
(so no tool task outlives its turn), and hand back their results in the order of the
calls (spec 000, "The loop"). A turn of one call runs it in the run's own task, in a copy
of the task's context, as a task of its own would see it.

A tool's failure is its result, not the loop's (the ToolBox makes it one); what escapes
here is a bug or a cancellation, raised as itself, and a pause signal (`pause = True`),
which ends the turn without cancelling the calls already running.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import types
from collections.abc import Callable, Coroutine, Generator
from typing import Any, Protocol, TypeVar

from agentloom.loop._options import LoopOptions
from agentloom.loop.observer import Dispatch
from agentloom.loop.tool_names import bounded_name
from agentloom.messages import ToolCallPart, ToolResultPart
from agentloom.tools.contracts import MAX_RESULT_BYTES, ToolBox, ToolContext, bounded_text

MAX_TOOL_CALLS_PER_TURN = 128
"""Calls of one reply that run, at most; each one past them is answered with an error
result, unrun. A reply may hold hundreds of thousands of calls (32 MB of them), and
running them, even a few at a time, would be the reply's to command."""


class ToolRun(Protocol):
    """What a turn's tools need of the run they belong to (`_run._Run`)."""

    tools: ToolBox | None
    opts: LoopOptions
    iterations: int
    tool_seconds: float
    now: Callable[[], float]

    @property
    def dispatch(self) -> Dispatch: ...

    def checkpoint(self) -> None: ...

    def record_calls(self, calls: tuple[ToolCallPart, ...]) -> None: ...


async def run_tools(run: ToolRun, calls: tuple[ToolCallPart, ...]) -> list[ToolResultPart]:
    """Run `calls` (one reply's) for `run`; their results, in the order of the calls."""
    run.checkpoint()
    unrun: tuple[ToolCallPart, ...] = ()
    if len(calls) > MAX_TOOL_CALLS_PER_TURN:
        unrun, calls = calls[MAX_TOOL_CALLS_PER_TURN:], calls[:MAX_TOOL_CALLS_PER_TURN]
    run.record_calls(calls)
    ctx = ToolContext(run_id=run.opts.run_id, step_id=run.opts.step_id,
                      turn=run.iterations)
    limit = max(1, run.opts.tool_concurrency)
    tools = run.tools
    # Observers (summaries, traces, spans) name a tool as the user declared it
    # (`calc.add`), not by the wire-safe name the model was shown (`calc_add`).
    registered = getattr(tools, "registered_name", None)
    # A call that waits for a person (a pause signal, `pause = True`) ends the turn
    # without cancelling its siblings: the ones running finish (their results are
    # journalled), the ones not started stay so, and the turn is finished on resume.
    pauses: list[Exception] = []

    async def one(call: ToolCallPart) -> ToolResultPart | None:
        if pauses:
            return None
        seen = call
        if registered is not None and (name := registered(call.name)) != call.name:
            seen = dataclasses.replace(call, name=name)
        run.dispatch.emit("on_tool_start", seen)
        t0 = run.now()
        if tools is None:
            result = ToolResultPart(call_id=call.id, name=call.name,
                                    content=f"unknown tool {bounded_name(call.name)!r}",
                                    is_error=True)
        else:
            try:
                result = await tools.call(call, ctx)
            except Exception as exc:
                if getattr(exc, "pause", False) is not True:
                    raise
                pauses.append(exc)
                return None
            if len(result.content) * 4 > MAX_RESULT_BYTES:  # else it can't be over
                result = dataclasses.replace(
                    result, content=bounded_text(result.content, MAX_RESULT_BYTES))
        run.dispatch.emit("on_tool_end", seen, result, run.now() - t0)
        return result

    start: Callable[[ToolCallPart], Coroutine[Any, Any, ToolResultPart | None]] = one
    if len(calls) > limit:
        # A gate only when it can close: calls within the limit never wait on one.
        gate = asyncio.Semaphore(limit)

        async def gated(call: ToolCallPart) -> ToolResultPart | None:
            async with gate:
                return await one(call)

        start = gated

    t0 = run.now()
    try:
        if len(calls) == 1:
            # A turn of one call (most of them) awaits it in this task: a task group's
            # task would cost a task and a turn of the event loop for the same result,
            # error, cancellation and context.
            only = await in_own_context(one(calls[0]))
            results = [] if only is None else [only]
        else:
            # One task group per turn: every tool task ends (or is cancelled) before
            # the next model call; results keep the order of the calls.
            async with asyncio.TaskGroup() as tg:
                tasks = [tg.create_task(start(c)) for c in calls]
            results = [r for t in tasks if (r := t.result()) is not None]
    except BaseExceptionGroup as group:
        raise _first_error(group) from None
    finally:
        run.tool_seconds += run.now() - t0
    if pauses:
        raise pauses[0]
    if unrun:
        total = len(calls) + len(unrun)
        refusal = (f"not run: the reply asked for {total} tool calls, and at most "
                   f"{MAX_TOOL_CALLS_PER_TURN} run per turn; ask for this one again")
        results.extend(ToolResultPart(call_id=c.id, name=c.name, content=refusal,
                                      is_error=True) for c in unrun)
    return results


_T = TypeVar("_T")


@types.coroutine
def in_own_context(coro: Coroutine[Any, Any, _T]) -> Generator[Any, Any, _T]:
    """Await `coro` in the calling task but in a copy of its context, as if it were a task
    of its own: a context variable it sets stays its own, one the caller set it sees.
    Each step of `coro` runs inside the copy; what it waits on (a future, or a bare yield)
    goes up to the task unchanged, and what the task throws in (a cancellation) comes
    down to `coro` the same way."""
    ctx = contextvars.copy_context()
    value: Any = None
    error: BaseException | None = None
    try:
        while True:
            try:
                step = (ctx.run(coro.send, value) if error is None
                        else ctx.run(coro.throw, error))
            except StopIteration as done:
                result: _T = done.value
                return result
            value = error = None
            try:
                value = yield step
            except GeneratorExit:
                raise
            except BaseException as exc:  # the task's cancellation, or a thrown error
                error = exc
    finally:
        ctx.run(coro.close)  # nothing to do once it has returned or raised


def _first_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            return _first_error(exc)
        if not isinstance(exc, asyncio.CancelledError):
            return exc
    return group.exceptions[0]
