"""Budgets against a hostile (or broken) model: a reply that stops reporting its usage,
and a structured reply that is never valid, must not buy model calls past the limits."""

from __future__ import annotations

import pytest
from loop_doubles import Tools, echo

from agentloom import Agent
from agentloom.errors import AgentLoopError, LoopBudgetExceeded, StructuredOutputError
from agentloom.loop import LoopOptions, run_loop
from agentloom.messages import Message, ModelRequest, ModelResponse, TextPart, Usage
from agentloom.testing.scripted import FunctionModel, tool_call


def req() -> ModelRequest:
    return ModelRequest(model="m", messages=(Message.user("hi"),))


def calling(n: int, usage: Usage) -> ModelResponse:
    return ModelResponse(parts=(tool_call("echo", id=f"call_{n}"),), usage=usage,
                         finish_reason="tool_calls", model="m", provider="scripted")


async def test_a_turn_that_reports_no_usage_ends_a_token_budget() -> None:
    # The first reply reports 15 tokens; every later one reports nothing. Counting the
    # unknown turns as zero kept the run at 15 of 25 tokens for as many calls as the
    # model liked (here: until max_iterations, 30 calls).
    def reply(request: ModelRequest) -> ModelResponse:
        n = len(model.requests)
        return calling(n, Usage(input_tokens=10, output_tokens=5) if n == 1 else Usage())

    model = FunctionModel(reply)
    with pytest.raises(LoopBudgetExceeded) as info:
        await run_loop(model, req(), tools=Tools(echo=echo),
                       options=LoopOptions(max_total_tokens=25, max_iterations=30))
    assert (info.value.kind, info.value.limit, info.value.actual) == ("tokens", 25, None)
    assert len(model.requests) == 2  # the unknown turn is the last one made
    summary = info.value.summary
    assert summary is not None and summary.status == "token_limit"
    assert summary.iterations == 2


async def test_a_turn_reporting_some_of_its_usage_still_counts() -> None:
    # Only the output count reported (a provider that leaves input out): what is known
    # is counted, the budget holds, nothing is refused.
    replies = iter([calling(1, Usage(output_tokens=5)), calling(2, Usage(output_tokens=5))])

    def reply(request: ModelRequest) -> ModelResponse:
        return next(replies, ModelResponse(parts=(TextPart(text="done"),),
                                           usage=Usage(output_tokens=5),
                                           finish_reason="stop", model="m",
                                           provider="scripted"))

    result = await run_loop(FunctionModel(reply), req(), tools=Tools(echo=echo),
                            options=LoopOptions(max_total_tokens=25))
    assert result.text == "done" and result.usage.total_tokens == 15


class NeverValid:
    def validate(self, text: str) -> object:
        raise ValueError("not the shape")


async def test_re_asks_stop_at_the_iteration_limit() -> None:
    # max_iterations is the most model calls a run makes; the re-asks of an always
    # invalid structured reply went past it (max_iterations=2, max_reasks=5: 6 calls).
    model = FunctionModel(lambda request: "never json")
    with pytest.raises(StructuredOutputError) as info:
        await run_loop(model, req(), options=LoopOptions(
            validator=NeverValid(), max_reasks=5, max_iterations=2))
    assert len(model.requests) == 2
    assert "not the shape" in str(info.value) and "max_iterations (2)" in str(info.value)
    assert info.value.raw_text == "never json"


async def test_re_asks_after_tool_turns_stop_at_the_iteration_limit() -> None:
    def reply(request: ModelRequest) -> object:
        return [tool_call("echo")] if len(model.requests) <= 2 else "never json"

    model = FunctionModel(reply)  # type: ignore[arg-type]
    with pytest.raises(StructuredOutputError):
        await run_loop(model, req(), tools=Tools(echo=echo), options=LoopOptions(
            validator=NeverValid(), max_reasks=3, max_iterations=4))
    assert len(model.requests) == 4


def test_an_agents_summary_never_shows_more_calls_than_its_limit() -> None:
    model = FunctionModel(lambda request: "never json")
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    with Agent(model, model="m", output_schema=schema, max_iterations=1, max_reasks=4) as agent, \
            pytest.raises(AgentLoopError) as info:
        agent.run_result("?")
    assert isinstance(info.value.__cause__, StructuredOutputError)
    summary = info.value.summary
    assert summary is not None and summary.status == "error"
    assert summary.iterations == summary.iteration_limit == 1
    assert len(model.requests) == 1
