"""Every rule of spec 000 "The loop", plus the loop's budgets, through ScriptedModel."""

from __future__ import annotations

import asyncio

import pytest
from loop_doubles import Recorder, Tools, echo, response

from agentloom.errors import LoopBudgetExceeded, StructuredOutputError
from agentloom.loop import ConversationStatus, LoopOptions, run_loop
from agentloom.messages import Message, ModelRequest, NamedToolChoice, TextDelta, Usage
from agentloom.testing.clock import FakeClock
from agentloom.testing.scripted import FunctionModel, ScriptedModel, tool_call


def req(**kw: object) -> ModelRequest:
    return ModelRequest(model="m", messages=(Message.user("hi"),), **kw)  # type: ignore[arg-type]


async def test_reply_without_tool_calls_is_the_answer() -> None:
    result = await run_loop(ScriptedModel(["hello"]), req())
    assert (result.text, result.iterations, result.finish_reason) == ("hello", 1, "stop")
    assert result.status is ConversationStatus.COMPLETED
    assert result.summary is not None and result.summary.iterations == 1


async def test_required_and_named_tool_choice_apply_to_first_call_only() -> None:
    for choice in ("required", NamedToolChoice(name="echo")):
        model = ScriptedModel([[tool_call("echo")], "done"])
        await run_loop(model, req(tool_choice=choice), tools=Tools(echo=echo))
        assert [r.tool_choice for r in model.requests] == [choice, "auto"]


async def test_results_go_back_in_call_order_and_tools_run_at_once() -> None:
    first_may_finish = asyncio.Event()

    async def slow(arguments: str) -> str:
        await first_may_finish.wait()  # finishes only after `fast` has run
        return "slow"

    async def fast(arguments: str) -> str:
        first_may_finish.set()
        return "fast"

    model = ScriptedModel([[tool_call("slow", id="a"), tool_call("fast", id="b")], "ok"])
    result = await run_loop(model, req(), tools=Tools(slow=slow, fast=fast))
    tool_msg = model.requests[1].messages[-1]
    assert [p.call_id for p in tool_msg.parts] == ["a", "b"]  # type: ignore[union-attr]
    assert [p.content for p in tool_msg.parts] == ["slow", "fast"]  # type: ignore[union-attr]
    assert result.text == "ok"


async def test_tool_concurrency_is_bounded() -> None:
    running = peak = 0

    async def work(arguments: str) -> str:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        for _ in range(3):
            await asyncio.sleep(0)
        running -= 1
        return "w"

    calls = [tool_call("work", {"i": i}, id=f"c{i}") for i in range(6)]
    model = ScriptedModel([calls, "ok"])
    await run_loop(model, req(), tools=Tools(work=work),
                   options=LoopOptions(tool_concurrency=2))
    assert peak == 2


async def test_limit_keeps_last_text_and_its_tools_do_not_run() -> None:
    tools = Tools(echo=echo)
    model = ScriptedModel([[tool_call("echo", id="1")],
                           response("still working", parts=[tool_call("echo", id="2")])])
    result = await run_loop(model, req(), tools=tools, options=LoopOptions(max_iterations=2))
    assert result.finish_reason == "max_tool_iterations"
    assert result.text == "still working"
    assert tools.calls == [("echo", "{}")]  # only the first reply's call ran
    assert result.status is ConversationStatus.ITERATION_LIMIT
    assert result.summary is not None and result.summary.status == "iteration_limit"


async def test_limit_of_one_never_runs_a_tool_and_empty_reply_is_no_answer() -> None:
    tools = Tools(echo=echo)
    result = await run_loop(ScriptedModel([[tool_call("echo")]]), req(), tools=tools,
                            options=LoopOptions(max_iterations=1))
    assert result.finish_reason == "max_tool_iterations_no_answer"
    assert tools.calls == []


async def test_failing_and_unknown_tools_go_back_to_the_model() -> None:
    async def boom(arguments: str) -> str:
        raise RuntimeError("kaput")

    model = ScriptedModel([[tool_call("boom", id="1"), tool_call("nope", id="2")], "sorry"])
    result = await run_loop(model, req(), tools=Tools(boom=boom))
    parts = model.requests[1].messages[-1].parts
    assert [p.is_error for p in parts] == [True, True]  # type: ignore[union-attr]
    assert result.text == "sorry"
    assert result.summary is not None
    assert result.summary.tool_errors == {"boom": 1, "nope": 1}


async def test_a_step_with_tools_does_not_stream() -> None:
    seen: list[object] = []
    rec = Recorder()
    model = ScriptedModel(["streamed words here"])
    await run_loop(model, req(stream=True), on_event=seen.append,
                   options=LoopOptions(observer=rec))
    assert model.requests[0].stream is True
    assert any(isinstance(e, TextDelta) for e in seen)
    assert "delta" in rec.names()

    seen.clear()
    model = ScriptedModel(["one piece"])
    await run_loop(model, req(stream=True), tools=Tools(echo=echo), on_event=seen.append)
    assert model.requests[0].stream is False and seen == []


async def test_no_tool_task_outlives_its_turn() -> None:
    # A pause signal ends the turn once the calls running beside it are done (spec 004:
    # they finish, so a resume reuses their results); one that never ends is cancelled
    # by the deadline, not left running after run_loop returns.
    cancelled = asyncio.Event()

    class Pause(Exception):
        pause = True

    async def waits(arguments: str) -> str:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    class Box(Tools):
        async def call(self, call, ctx):  # type: ignore[no-untyped-def]
            if call.name == "pause":
                await asyncio.sleep(0)
                raise Pause()  # a control signal: propagates out of the loop
            return await super().call(call, ctx)

    rec = Recorder()
    model = ScriptedModel([[tool_call("waits", id="1"), tool_call("pause", id="2")]])
    with pytest.raises(LoopBudgetExceeded):
        await run_loop(model, req(), tools=Box(waits=waits, pause=echo),
                       options=LoopOptions(observer=rec, clock=FakeClock(),
                                           deadline_seconds=5))
    assert cancelled.is_set()  # the sibling was cancelled before run_loop returned
    assert rec.summaries[0].status == "deadline_exceeded"  # type: ignore[attr-defined]

    model = ScriptedModel([[tool_call("echo", id="1"), tool_call("pause", id="2")]])
    with pytest.raises(Pause):
        await run_loop(model, req(), tools=Box(echo=echo, pause=echo),
                       options=LoopOptions(observer=rec))
    assert rec.summaries[1].status == "paused"  # type: ignore[attr-defined]


async def test_deadline_cancels_the_call_in_flight() -> None:
    clock = FakeClock()
    rec = Recorder()

    async def hang(request: ModelRequest) -> str:
        await asyncio.Event().wait()
        return "never"

    with pytest.raises(LoopBudgetExceeded) as info:
        await run_loop(FunctionModel(hang), req(),
                       options=LoopOptions(clock=clock, deadline_seconds=30, observer=rec))
    err = info.value
    assert (err.kind, err.limit, err.actual) == ("deadline", 30, 30)
    assert err.summary is not None and err.summary.status == "deadline_exceeded"
    assert err.summary.iterations == 1
    assert rec.names()[-2:] == ["model_error", "end"]


async def test_deadline_checked_between_turns_with_a_jumping_clock() -> None:
    clock = FakeClock()

    def slow_model(request: ModelRequest) -> object:
        clock.advance(20)  # the call "took" 20 s
        return [tool_call("echo")]

    with pytest.raises(LoopBudgetExceeded) as info:
        await run_loop(FunctionModel(slow_model), req(), tools=Tools(echo=echo),
                       options=LoopOptions(clock=clock, deadline=clock.now() + 30))
    assert info.value.summary is not None
    assert info.value.summary.status == ConversationStatus.DEADLINE_EXCEEDED
    assert info.value.summary.iterations == 2


async def test_outside_cancellation_stays_cancellation() -> None:
    rec = Recorder()

    async def hang(request: ModelRequest) -> str:
        await asyncio.Event().wait()
        return "never"

    task = asyncio.create_task(run_loop(
        FunctionModel(hang), req(),
        options=LoopOptions(deadline_seconds=1000, observer=rec)))
    await asyncio.sleep(0.001)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert rec.summaries[0].status == "cancelled"  # type: ignore[attr-defined]


async def test_deadline_on_the_system_clock_cancels_the_call_in_flight() -> None:
    # The system clock's deadline is a timer on the event loop, not a watcher task.
    rec = Recorder()
    cancelled = asyncio.Event()

    async def hang(request: ModelRequest) -> str:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    with pytest.raises(LoopBudgetExceeded) as info:
        await run_loop(FunctionModel(hang), req(),
                       options=LoopOptions(deadline_seconds=0.005, observer=rec))
    assert info.value.kind == "deadline"
    assert info.value.summary is not None
    assert info.value.summary.status == "deadline_exceeded"
    assert cancelled.is_set()
    assert rec.names()[-2:] == ["model_error", "end"]
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]


async def test_token_budget() -> None:
    model = ScriptedModel([[tool_call("echo")], [tool_call("echo")], "done"])
    with pytest.raises(LoopBudgetExceeded) as info:
        await run_loop(model, req(), tools=Tools(echo=echo),
                       options=LoopOptions(max_total_tokens=25))
    err = info.value
    assert (err.kind, err.limit, err.actual) == ("tokens", 25, 30)
    assert err.summary is not None and err.summary.status == "token_limit"
    assert err.summary.status.budget_exhausted


async def test_token_budget_fails_closed_on_unknown_usage() -> None:
    model = ScriptedModel([response("hi", usage=Usage())])
    with pytest.raises(LoopBudgetExceeded) as info:
        await run_loop(model, req(), options=LoopOptions(max_total_tokens=100))
    assert info.value.actual is None


class JsonInt:
    def validate(self, text: str) -> int:
        try:
            return int(text)
        except ValueError:
            raise ValueError("not an integer") from None


async def test_structured_output_reasks_then_fails() -> None:
    model = ScriptedModel(["seven", "7"])
    result = await run_loop(model, req(), options=LoopOptions(validator=JsonInt(), max_reasks=1))
    assert result.output == 7 and result.iterations == 2
    assert "not an integer" in model.requests[1].messages[-1].text

    rec = Recorder()
    with pytest.raises(StructuredOutputError):
        await run_loop(ScriptedModel(["a", "b"]), req(),
                       options=LoopOptions(validator=JsonInt(), max_reasks=1, observer=rec))
    assert rec.summaries[0].status == "error"  # type: ignore[attr-defined]
