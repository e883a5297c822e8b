"""THE agent loop: the one loop behind an `llm_call` step, an `agent` step and `Agent`.

Call the model with the declared tools; a reply without tool calls is the answer;
otherwise run every call of the reply at once (bounded, one task group per turn, so no
tool task outlives its turn; a lone call in the run's task, in a copy of its context),
send the results back in the order of the calls, and call again, at most
`max_iterations` model calls in all (spec 000, "The loop"). Tool failures never fail the
loop: they are tool results. Every run yields a metadata-only summary (spec 002), on
success and failure, and observers are called from one place (`Dispatch`).

Budgets: iterations (the step still succeeds at the limit, with finish_reason
`max_tool_iterations`, and status iteration_limit), a deadline on the run's clock that
cancels the call in flight, and total tokens. With `wrap_errors` (the Agent API) every
failure is raised as an `AgentLoopError` carrying the summary, and an exhausted iteration
budget raises `LoopBudgetExceeded` instead of returning.

Here the driving loop and how a run ends; a run's state and its reports in `_run`, one
turn's tool calls in `_tool_turn`.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from agentloom.errors import (
    AgentLoopError,
    LoopBudgetExceeded,
    ProviderCallError,
    ProviderError,
    StructuredOutputError,
    typed_provider_error,
)
from agentloom.loop._budget import _TimerScope, absorb_cancel
from agentloom.loop._journal import current_journal
from agentloom.loop._options import (
    DEFAULT_MAX_TOKENS,
    FINISH_MAX_ITERATIONS,
    FINISH_MAX_ITERATIONS_NO_ANSWER,
    MAX_TOKENS_CEILING,
    LoopOptions,
    LoopResult,
    loop_result,
)
from agentloom.loop._run import NO_ATTEMPTS, NO_WARNINGS, RetryListener, _Run
from agentloom.loop._tool_turn import run_tools
from agentloom.loop.observer import bind_conversation, unbind_conversation
from agentloom.loop.request import turn_request
from agentloom.loop.status import TRUNCATED_REASONS, ConversationStatus, status_for_finish
from agentloom.messages import Message, ModelRequest, ModelResponse, Usage
from agentloom.providers import ModelClient
from agentloom.recording import CallContext, current_call_context
from agentloom.routing.retry_notice import retry_listener
from agentloom.tools.contracts import ToolBox

if TYPE_CHECKING:
    from agentloom.loop.summary import ConversationSummary

_NO_USAGE = Usage()
_new = object.__new__
_init_run = _Run.__init__
_ITERATION_LIMIT = ConversationStatus.ITERATION_LIMIT
"""Read once: a member of an Enum read off its class goes through the metaclass's
`__getattr__` hook on Python 3.11 (~1 k instructions)."""
_FIRST_TURN = CallContext(step_id=None, turn=1)
"""The first call of a run outside a workflow step (frozen, so one serves every run)."""


_STATUS_OF: dict[str | None, ConversationStatus] = {}
"""`status_for_finish` of the finish reasons seen (a few words per provider), looked up
rather than worked out per run."""


def _status_of(finish_reason: str | None) -> ConversationStatus:
    status = status_for_finish(finish_reason)
    if len(_STATUS_OF) < 64:  # providers' words, not the model's: a bound all the same
        _STATUS_OF[finish_reason] = status
    return status


def status_for_error(exc: BaseException) -> ConversationStatus:
    """The status of a conversation that ended with `exc` (attributes, not class names
    spread over modules: a pause signal says `pause = True`)."""

    if isinstance(exc, ProviderError):
        return ConversationStatus.PROVIDER_ERROR
    if isinstance(exc, AgentLoopError) and exc.__cause__ is not None and not isinstance(
            exc, LoopBudgetExceeded):
        return status_for_error(exc.__cause__)
    if getattr(exc, "pause", False) is True:
        return ConversationStatus.PAUSED
    if isinstance(exc, LoopBudgetExceeded):
        return {
            "iterations": ConversationStatus.ITERATION_LIMIT,
            "deadline": ConversationStatus.DEADLINE_EXCEEDED,
        }.get(exc.kind, ConversationStatus.TOKEN_LIMIT)
    if isinstance(exc, asyncio.CancelledError | KeyboardInterrupt):
        return ConversationStatus.CANCELLED
    return ConversationStatus.ERROR


async def run_loop(
    client: ModelClient,
    request: ModelRequest,
    *,
    tools: ToolBox | None = None,
    options: LoopOptions | None = None,
    on_event: Any = None,
) -> LoopResult:
    """Run one conversation to its answer; see the module docstring for the rules."""
    opts = options or LoopOptions()
    if tools is not None and not request.tools:
        request = request.replace(tools=tools.specs)
    run: _Run = _new(_Run)  # through its __init__ alone: no class call per run
    _init_run(run, client, request, tools, opts, on_event)
    token = bind_conversation(run.info)
    listener: RetryListener | None = None
    heard = None
    if not run.solo:
        listener = RetryListener(run)
        heard = retry_listener.set(listener)
    elif retry_listener.get() is not None:
        # Without an observer of the caller's nobody hears a retry (the collector counts
        # attempts, not notices), so a plain run sets no listener; it only hides an
        # enclosing run's, which must not hear this run's retries.
        heard = retry_listener.set(None)
    try:
        if not run.solo:
            run.dispatch.emit("on_conversation_start", run.info.info)
        try:
            deadline = run.deadline
            timer = (deadline if type(deadline) is _TimerScope  # its own timer
                     else deadline.timer() if deadline is not None else None)
            if timer is not None:
                # The system clock's scope, entered and left in line: `async with`
                # would make two coroutines per run and keep a bound method alive.
                timer.enter(run.started)  # read just now: no await since
                try:
                    result = await _drive(run)
                except BaseException as exc:
                    timer.leave(exc)  # raises the budget error for its own cancellation
                    raise
                if timer.leave(None):
                    await absorb_cancel(timer.host())
            elif deadline is not None:
                async with deadline.scope():
                    result = await _drive(run)
            else:
                result = await _drive(run)
        except BaseException as exc:
            if opts.wrap_errors and isinstance(exc, ProviderError) and not isinstance(
                    exc, ProviderCallError):
                # An Agent raises a provider failure by its kind (AuthError, ...), the
                # router's CallFailed as its cause; a workflow step keeps CallFailed.
                exc = typed_provider_error(exc)
            record = run.summarize(status_for_error(exc), error=exc)
            if opts.on_summary is not None:
                opts.on_summary(record)
            if not run.solo:
                run.dispatch.end(record)
            raise _with_summary(exc, record.summary, opts.wrap_errors)  # noqa: B904
        limit_error = None
        if opts.wrap_errors and result.status is _ITERATION_LIMIT:
            limit_error = LoopBudgetExceeded("iterations", opts.max_iterations,
                                             result.iterations)
        record = run.summarize(result.status, finish_reason=result.finish_reason,
                               error=limit_error)
        result.summary = record
        if opts.on_summary is not None:
            opts.on_summary(record)
        if not run.solo:
            run.dispatch.end(record)
        if limit_error is not None:
            raise _with_summary(limit_error, record.summary, True)
        return result
    finally:
        if heard is not None:
            retry_listener.reset(heard)
        if listener is not None:
            listener.run = None
        unbind_conversation(token)


def _with_summary(exc: BaseException, summary: ConversationSummary, wrap: bool
                  ) -> BaseException:
    """The error to raise: budget errors and AgentLoopErrors get the summary; in Agent mode
    every other Exception is wrapped in an AgentLoopError with its cause chained.
    Cancellation is never wrapped."""
    if isinstance(exc, AgentLoopError):
        if exc.summary is None:
            exc.summary = summary
        return exc
    if not wrap or not isinstance(exc, Exception):
        return exc
    err = AgentLoopError(f"conversation ended with status {summary.status.value}: "
                         f"{type(exc).__name__}: {exc}", summary=summary)
    err.__cause__ = exc
    return err


async def _drive(run: _Run) -> LoopResult:
    request, opts = run.request, run.opts
    start = len(request.messages)
    usage = _NO_USAGE
    reasks = 0
    journal = opts.journal
    if journal is None and opts.step_id is not None:
        journal = current_journal.get()
    saved = journal.restore(opts.step_id) if journal is not None and opts.step_id else None
    messages: list[Message] | None
    if saved is not None:
        # A resumed run: the turns already done are not asked again.
        messages = list(saved.messages)
        run.iterations, usage = saved.turn, saved.usage
    # A step with tools doesn't stream (spec 000): its answer arrives in one piece.
    stream = request.stream and (opts.stream_with_tools or not request.tools)

    # The first call of a fresh run sends the request exactly as given: no copy to build.
    as_given = (saved is None and stream == request.stream
                and type(request.messages) is tuple)
    if saved is None:
        # Made once the first reply is in (a list less alive while it is awaited), unless
        # the first call already needs a copy of its own.
        messages = None if as_given else list(request.messages)
    while True:
        if as_given:
            as_given = False
            call_request = request
        else:
            # `required` and a named tool apply to the first call only (spec 000).
            tool_choice = request.tool_choice if run.iterations == 0 else "auto"
            call_request = turn_request(
                request, request.messages if messages is None else tuple(messages),
                stream, tool_choice)
        if run.iterations == 0 and run.solo and run.warnings is NO_WARNINGS:
            # `begin_call` of a plain run's first call (most runs' only one), in line.
            run.iterations = 1
            run.collector.on_request(call_request, 1)
            t0 = run.now()
        else:
            t0 = run.begin_call(call_request)
        try:
            # Restored by value, not by a reset token: one object less alive per call.
            outer = current_call_context.get()
            # What recording, replay and the run store key this exchange by: step and
            # turn (`recording.call_context`, without its generator on this path).
            current_call_context.set(
                _FIRST_TURN if opts.step_id is None and run.iterations == 1
                else CallContext(step_id=opts.step_id, turn=run.iterations))
            try:
                response = await run.client.complete(
                    call_request, on_event=run.sink if stream else None,
                    on_attempt=run)
            finally:
                current_call_context.set(outer)
        except BaseException as exc:
            run.call_failed(exc, t0)
            raise
        if run.solo:
            run.collector.on_response(response, run.iterations, run.now() - t0)
        else:
            run.dispatch.emit("on_response", response, run.iterations, run.now() - t0)
        # Usage() + u == u field for field, and Usage is frozen: skip the sum on turn one.
        usage = response.usage if usage is _NO_USAGE else usage + response.usage
        if opts.max_total_tokens is not None:
            run.check_tokens(usage, response.usage)
        if response.finish_reason in TRUNCATED_REASONS and _unusable_truncation(response):
            # Cut off mid tool call (or before saying anything): it can't run and can't be
            # kept, so it is dropped and asked again with room to finish.
            run.collector.discard_turn()
            request = _grown(request, response)
            if run.iterations >= opts.max_iterations:
                return _result(run, () if messages is None else tuple(messages[start:]),
                               usage, response, "", FINISH_MAX_ITERATIONS_NO_ANSWER, "",
                               _ITERATION_LIMIT)
            continue
        message = response.to_message(name=opts.speaker)
        calls = response.tool_calls
        if messages is None:
            if opts.validator is None and not (calls and request.tool_choice != "none"):
                # The answer to a run's one request: no list of the conversation to build.
                text, reason = response.text, response.finish_reason
                status = _STATUS_OF.get(reason)
                if status is None:
                    status = _status_of(reason)
                return _result(run, (message,), usage, response, text, reason, text, status)
            messages = list(request.messages)
        messages.append(message)
        if calls and request.tool_choice != "none":
            if run.iterations >= opts.max_iterations:
                if opts.wrap_errors:
                    # An Agent runs the last turn's tools too, as spec 002's library does.
                    results = await run_tools(run, calls)
                    messages.append(Message(role="tool", parts=tuple(results)))
                else:
                    # No later call would read their results, so the tools don't run.
                    run.record_calls(calls)
                finish = (FINISH_MAX_ITERATIONS if response.text.strip()
                          else FINISH_MAX_ITERATIONS_NO_ANSWER)
                return _result(run, tuple(messages[start:]), usage, response, response.text,
                               finish, response.text, _ITERATION_LIMIT)
            results = await run_tools(run, calls)
            messages.append(Message(role="tool", parts=tuple(results)))
            if journal is not None and opts.step_id is not None:
                await journal.on_turn(opts.step_id, run.iterations, messages, usage)
            continue
        text = response.text
        output: Any = text
        if opts.validator is not None:
            try:
                output = opts.validator.validate(text)
            except ValueError as exc:
                if reasks >= opts.max_reasks or run.iterations >= opts.max_iterations:
                    # A re-ask is a model call like any other: max_iterations bounds it.
                    limit = ("" if reasks >= opts.max_reasks else
                             f" (max_iterations ({opts.max_iterations}) leaves no call for "
                             "another re-ask)")
                    raise StructuredOutputError(
                        f"no valid structured reply after {reasks + 1} tries{limit}: {exc}",
                        raw_text=text,
                    ) from exc
                reasks += 1
                messages.append(Message.user(
                    f"Your reply did not match the required JSON shape: {exc}\n"
                    "Reply again with only the corrected JSON."
                ))
                continue
        return _result(run, tuple(messages[start:]), usage, response, text,
                       response.finish_reason, output, status_for_finish(response.finish_reason))


def _result(run: _Run, new_messages: tuple[Message, ...], usage: Usage,
            response: ModelResponse, text: str, finish: str | None, output: Any,
            status: ConversationStatus) -> LoopResult:
    # A module function, not a closure in `_drive`: a closure would make four cells and
    # a function per run, alive (and walked by the garbage collector) the whole run.
    return loop_result(response, text, finish, usage, run.iterations, new_messages, output,
                       run.attempts if run.attempts is not NO_ATTEMPTS else [], status)


def _unusable_truncation(response: ModelResponse) -> bool:
    """A reply cut off at max_tokens with a tool call in it (its arguments may be partial)
    or with nothing in it at all."""
    return response.finish_reason in TRUNCATED_REASONS and (
        not response.parts or bool(response.tool_calls))


def _grown(request: ModelRequest, response: ModelResponse) -> ModelRequest:
    """The request with max_tokens doubled (up to the ceiling, never lowered); at the
    ceiling the run ends: asking again would bill the same cut-off once more."""
    current = request.max_tokens or DEFAULT_MAX_TOKENS
    grown = max(current, min(current * 2, MAX_TOKENS_CEILING))
    if grown == current:
        raise LoopBudgetExceeded("max_tokens", current, response.usage.output_tokens)
    return request.replace(max_tokens=grown)
