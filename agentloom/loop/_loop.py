"""THE agent loop: the one loop behind an `llm_call` step, an `agent` step and `Agent`.

Call the model with the declared tools; a reply without tool calls is the answer;
otherwise run every call of the reply at once (bounded), send the results back in the
order of the calls, and call again, at most `max_iterations` model calls in all
(spec 000, "The loop"). Tool failures never fail the loop: they are tool results.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from agentloom.loop._contracts import OutputValidator, ToolBox, ToolContext
from agentloom.messages import (
    Message,
    ModelRequest,
    ModelResponse,
    StreamEvent,
    ToolCallPart,
    ToolResultPart,
    Usage,
)
from agentloom.providers._base import AttemptRecord, ModelClient

FINISH_MAX_ITERATIONS = "max_tool_iterations"
FINISH_MAX_ITERATIONS_NO_ANSWER = "max_tool_iterations_no_answer"


@dataclass(slots=True, kw_only=True)
class LoopOptions:
    max_iterations: int = 5
    """Model calls at most, the answering one included (`max_tool_iterations`)."""
    tool_concurrency: int = 8
    validator: OutputValidator | None = None
    """Structured output: the final text is validated; an invalid one is re-asked."""
    max_reasks: int = 0
    run_id: str | None = None
    step_id: str | None = None
    speaker: str | None = None


@dataclass(slots=True, kw_only=True)
class LoopResult:
    response: ModelResponse
    """The last reply."""
    text: str
    finish_reason: str | None
    usage: Usage
    iterations: int
    new_messages: tuple[Message, ...]
    """Every message the loop added after the request's own (assistant turns, tool results)."""
    output: Any = None
    """The validated value when a validator was given; else the text."""
    attempts: list[AttemptRecord] = field(default_factory=list)
    summary: Any = None


async def _run_tools(
    tools: ToolBox | None,
    calls: tuple[ToolCallPart, ...],
    ctx: ToolContext,
    concurrency: int,
) -> list[ToolResultPart]:
    if tools is None:
        return [
            ToolResultPart(call_id=c.id, name=c.name, content=f"unknown tool {c.name!r}",
                           is_error=True)
            for c in calls
        ]
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(call: ToolCallPart) -> ToolResultPart:
        async with gate:
            return await tools.call(call, ctx)

    # gather keeps the order of the calls, whatever order they finish in.
    return list(await asyncio.gather(*(one(c) for c in calls)))


async def run_loop(
    client: ModelClient,
    request: ModelRequest,
    *,
    tools: ToolBox | None = None,
    options: LoopOptions | None = None,
    on_event: Any = None,
) -> LoopResult:
    opts = options or LoopOptions()
    if tools is not None and not request.tools:
        request = request.replace(tools=tools.specs)
    messages = list(request.messages)
    start = len(messages)
    usage = Usage()
    attempts: list[AttemptRecord] = []
    reasks = 0
    iteration = 0
    response: ModelResponse | None = None
    # A step with tools doesn't stream (spec 000): its answer arrives in one piece.
    stream = request.stream and not request.tools

    def sink(event: StreamEvent) -> None:
        if on_event is not None:
            on_event(event)

    while True:
        iteration += 1
        tool_choice = request.tool_choice if iteration == 1 else "auto"
        call_request = request.replace(messages=tuple(messages), stream=stream,
                                       tool_choice=tool_choice)
        response = await client.complete(
            call_request, on_event=sink if stream else None, on_attempt=attempts.append
        )
        usage = usage + response.usage
        messages.append(response.to_message(name=opts.speaker))
        calls = response.tool_calls
        if calls and request.tool_choice != "none":
            if iteration >= opts.max_iterations:
                finish = (
                    FINISH_MAX_ITERATIONS if response.text.strip()
                    else FINISH_MAX_ITERATIONS_NO_ANSWER
                )
                return LoopResult(
                    response=response, text=response.text, finish_reason=finish, usage=usage,
                    iterations=iteration, new_messages=tuple(messages[start:]),
                    output=response.text, attempts=attempts,
                )
            ctx = ToolContext(run_id=opts.run_id, step_id=opts.step_id, turn=iteration)
            results = await _run_tools(tools, calls, ctx, opts.tool_concurrency)
            messages.append(Message(role="tool", parts=tuple(results)))
            continue
        text = response.text
        if opts.validator is not None:
            try:
                output = opts.validator.validate(text)
            except ValueError as exc:
                if reasks >= opts.max_reasks:
                    from agentloom.errors import StructuredOutputError

                    raise StructuredOutputError(
                        f"no valid structured reply after {reasks + 1} tries: {exc}",
                        raw_text=text,
                    ) from exc
                reasks += 1
                messages.append(Message.user(
                    f"Your reply did not match the required JSON shape: {exc}\n"
                    "Reply again with only the corrected JSON."
                ))
                continue
        else:
            output = text
        return LoopResult(
            response=response, text=text, finish_reason=response.finish_reason, usage=usage,
            iterations=iteration, new_messages=tuple(messages[start:]), output=output,
            attempts=attempts,
        )
