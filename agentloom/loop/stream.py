"""Streaming an Agent run: typed events across the whole tool loop.

    async for event in agent.astream("Weather in Paris?"):
        if event.kind == "text_delta":
            print(event.text, end="")
        elif event.kind == "run_finished":
            print(event.summary.status)

The run is the same `run_loop` as `run_result`, with every call streamed (tool turns
included) and one more observer, `EventFeed`, that turns callbacks into events on a queue
the iterator reads. Leaving the loop early (`break`, then the iterator closed, as
`contextlib.aclosing` or garbage collection does) cancels the run: the HTTP stream in
flight is closed, and the run still ends with a summary (status `cancelled`) that
observers get. A run that fails raises its error from the iterator after the events that
led to it, as `run_result` would raise it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeAlias

from agentloom.loop.observer import NullObserver
from agentloom.loop.result import ConversationResult
from agentloom.loop.status import normalized_stop_reason
from agentloom.messages import (
    ModelResponse,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCallPart,
    ToolResultPart,
    Usage,
)

if TYPE_CHECKING:
    from agentloom.loop.summary import ConversationSummary
    from agentloom.messages import ModelRequest


@dataclass(frozen=True, slots=True)
class TextDeltaEvent:
    """A piece of the model's answer text, as it arrived."""

    text: str
    iteration: int
    kind: Literal["text_delta"] = "text_delta"


@dataclass(frozen=True, slots=True)
class ReasoningDeltaEvent:
    """A piece of the model's reasoning (only from models that stream it)."""

    text: str
    iteration: int
    kind: Literal["reasoning_delta"] = "reasoning_delta"


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    call_id: str
    name: str
    arguments: str
    iteration: int
    kind: Literal["tool_call_started"] = "tool_call_started"


@dataclass(frozen=True, slots=True)
class ToolCallFinished:
    call_id: str
    name: str
    duration_seconds: float
    is_error: bool
    iteration: int
    kind: Literal["tool_call_finished"] = "tool_call_finished"


@dataclass(frozen=True, slots=True)
class TurnFinished:
    """One model call answered. `stop_reason` is normalized (end_turn, tool_use, ...);
    `finish_reason` is the provider's own word."""

    iteration: int
    stop_reason: str | None
    finish_reason: str | None
    usage: Usage
    duration_seconds: float
    kind: Literal["turn_finished"] = "turn_finished"


@dataclass(frozen=True, slots=True)
class RunFinished:
    """The last event of a run that answered: its result, summary included."""

    result: ConversationResult
    kind: Literal["run_finished"] = "run_finished"

    @property
    def summary(self) -> ConversationSummary:
        return self.result.summary

    @property
    def text(self) -> str:
        return self.result.text


AgentEvent: TypeAlias = (TextDeltaEvent | ReasoningDeltaEvent | ToolCallStarted
                         | ToolCallFinished | TurnFinished | RunFinished)


class EventFeed(NullObserver):
    """The observer (and stream sink) that puts one run's events on a queue."""

    __slots__ = ("_iteration", "queue")

    def __init__(self) -> None:
        self.queue: asyncio.Queue[AgentEvent | None] = asyncio.Queue()
        self._iteration = 0

    def on_request(self, request: ModelRequest, iteration: int) -> None:
        self._iteration = iteration

    def sink(self, event: StreamEvent) -> None:
        if isinstance(event, TextDelta):
            if event.text:
                self.queue.put_nowait(TextDeltaEvent(event.text, self._iteration))
        elif isinstance(event, ReasoningDelta) and event.text:
            self.queue.put_nowait(ReasoningDeltaEvent(event.text, self._iteration))

    def on_response(self, response: ModelResponse, iteration: int,
                    duration_seconds: float) -> None:
        self.queue.put_nowait(TurnFinished(
            iteration, normalized_stop_reason(response.finish_reason,
                                              bool(response.tool_calls)),
            response.finish_reason, response.usage, duration_seconds))

    def on_tool_start(self, call: ToolCallPart) -> None:
        self.queue.put_nowait(ToolCallStarted(call.id, call.name, call.arguments,
                                              self._iteration))

    def on_tool_end(self, call: ToolCallPart, result: ToolResultPart,
                    duration_seconds: float) -> None:
        self.queue.put_nowait(ToolCallFinished(call.id, call.name, duration_seconds,
                                               result.is_error, self._iteration))


async def feed_events(feed: EventFeed, run: Callable[[], Awaitable[ConversationResult]]
                      ) -> AsyncGenerator[AgentEvent, None]:
    """Run `run()` as a task and yield `feed`'s events until it ends, then RunFinished
    (or its error). Closing the iterator early cancels the task and waits for it, so the
    run's summary is built and delivered before the close returns."""
    queue = feed.queue

    async def drive() -> ConversationResult:
        try:
            return await run()
        finally:
            queue.put_nowait(None)

    task = asyncio.ensure_future(drive())
    try:
        while True:
            event = await queue.get()
            if event is None:
                break
            yield event
        # Events queued after the end marker can't exist: the run put it last.
        yield RunFinished(task.result())
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
