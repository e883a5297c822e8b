"""The behaviours spec 002's library has that ours now shares (issue 16): a truncated turn
discarded and retried with more room, provider failures raised by kind, budget ends that
name their error, provider-only cost_usd, normalized stop reasons, on_retry before the
wait, a missing key caught before any request, and the observers the spec's library
ships. The side-by-side proof is test_agentloop_differential.py; these pin each rule."""

from __future__ import annotations

import io
import json
from decimal import Decimal

import pytest
from loop_doubles import Tools, echo, response
from openai_thread import agent_env

import agentloom
from agentloom import Agent, ConfigError, SummaryOptions
from agentloom.errors import (
    AgentLoopError,
    AuthError,
    LoopBudgetExceeded,
    ProviderError,
    ProviderUnavailable,
    RateLimited,
    provider_error_class,
)
from agentloom.loop import LoopOptions, run_loop
from agentloom.loop.summary import normalized_stop_reason
from agentloom.messages import ModelRequest, Usage
from agentloom.testing import ScriptedModel, tool_call
from agentloom.testing._server import FakeError, FakeReply
from agentloom.testing.fake_openai import FakeOpenAIServer
from agentloom.testing.scripted import make_response


def req(max_tokens: int | None = None) -> ModelRequest:
    return ModelRequest(model="m", messages=(agentloom.messages.Message.user("hi"),),
                        max_tokens=max_tokens)


def truncated_call() -> object:
    return make_response([tool_call("echo", arguments='{"a": 1')], finish_reason="length")


async def test_a_truncated_tool_call_is_discarded_and_asked_again_with_double_room() -> None:
    model = ScriptedModel([truncated_call(), [tool_call("echo")], "done"])
    tools = Tools(echo=echo)
    opts = LoopOptions(summary_options=SummaryOptions(timeline=True))
    result = await run_loop(model, req(1000), tools=tools, options=opts)
    assert result.text == "done" and [c[0] for c in tools.calls] == ["echo"]  # once
    assert [r.max_tokens for r in model.requests] == [1000, 2000, 2000]
    s = result.summary
    assert s is not None and s.iterations == 3
    assert [t.discarded for t in s.timeline or ()] == [True, False, False]
    assert s.timeline is not None and s.timeline[0].stop_reason == "max_tokens"
    # The dropped turn is not in the conversation.
    assert all(p.arguments != '{"a": 1' for m in result.new_messages for p in m.tool_calls)


async def test_at_the_ceiling_the_run_ends_with_token_limit() -> None:
    model = ScriptedModel([truncated_call(), truncated_call()])
    with pytest.raises(LoopBudgetExceeded) as info:
        await run_loop(model, req(32_000), tools=Tools(echo=echo),
                       options=LoopOptions(wrap_errors=True))
    err = info.value
    assert (err.kind, err.limit) == ("max_tokens", 64_000)
    assert err.summary is not None and err.summary.status == "token_limit"
    assert err.summary.status.budget_exhausted and err.summary.iterations == 2
    assert err.summary.error_type == "LoopBudgetExceeded"


async def test_a_truncated_answer_is_kept_as_truncated() -> None:
    model = ScriptedModel([make_response("half an ans", finish_reason="length")])
    result = await run_loop(model, req())
    assert result.text == "half an ans" and result.status == "truncated"


def test_kinds_of_provider_failure() -> None:
    assert provider_error_class(401, "status") is AuthError
    assert provider_error_class(429, "status") is RateLimited
    assert provider_error_class(503, "status") is ProviderUnavailable
    assert provider_error_class(400, "status", "maximum context length is 8k").__name__ == \
        "ContextLengthExceeded"
    assert provider_error_class(None, "tls").__name__ == "ProviderUnreachable"
    assert issubclass(AuthError, ProviderError) and issubclass(AuthError, AgentLoopError)


def test_except_auth_error_catches_a_401(openai_server: FakeOpenAIServer) -> None:
    openai_server.script(FakeError(status=401, body={"error": {"message": "bad key"}}))
    with Agent.from_env(agent_env(openai_server), tools=[]) as agent, \
            pytest.raises(AuthError) as info:
        agent.run_result("x")
    err = info.value
    assert err.status == 401 and type(err.__cause__).__name__ == "CallFailed"
    assert err.summary is not None and err.summary.error_type == "AuthError"
    assert [a.error_type for a in err.summary.failed_attempts] == ["AuthError"]


def test_on_retry_fires_between_the_failed_attempt_and_the_next(
        openai_server: FakeOpenAIServer) -> None:
    openai_server.script(FakeError(status=500, headers={"Retry-After": "0"}), "ok")
    seen = agentloom.ListObserver()
    with Agent.from_env(agent_env(openai_server), tools=[], observer=seen) as agent:
        result = agent.run_result("x")
    assert result.text == "ok" and result.summary.provider_retries == 1
    kinds = seen.kinds()
    assert kinds[kinds.index("attempt"):kinds.index("response")] == [
        "attempt", "retry", "attempt"]
    (attempt, error), = [args for kind, args in seen.events if kind == "retry"]
    assert attempt == 1 and isinstance(error, ProviderUnavailable) and error.status == 500
    first = next(args[0] for kind, args in seen.events if kind == "attempt")
    assert first.ok is False  # the retry came after the failure, before the next try


def test_a_provider_named_without_its_key_fails_before_any_request(
        openai_server: FakeOpenAIServer) -> None:
    with pytest.raises(AuthError) as info:
        Agent.from_env({"AGENTLOOM_PROVIDER": "openai",
                        "OPENAI_BASE_URL": openai_server.base_url + "/v1"}, tools=[])
    assert isinstance(info.value, ConfigError)  # fixing the configuration fixes it
    assert info.value.request_sent is False and "OPENAI_API_KEY" in str(info.value)
    assert openai_server.requests == []


async def test_cost_usd_is_what_the_provider_reported() -> None:
    reported = Usage(input_tokens=3, output_tokens=2, cost_usd=Decimal("0.25"))
    table = Usage(input_tokens=3, output_tokens=2, cost_usd=Decimal("0.5"),
                  cost_estimated=True)
    model = ScriptedModel([response(parts=[tool_call("echo")], usage=reported),
                           response("done", usage=table)])
    s = (await run_loop(model, req(), tools=Tools(echo=echo),
                        options=LoopOptions(summary_options=SummaryOptions(timeline=True)))
         ).summary
    assert s is not None and s.usage.cost_usd == 0.25 and s.estimated_cost_usd == 0.75
    assert s.timeline is not None and [t.cost_usd for t in s.timeline] == [0.25, None]


async def test_no_reported_cost_is_none_and_the_estimate_is_kept_apart() -> None:
    table = Usage(input_tokens=3, output_tokens=2, cost_usd=Decimal("0.5"),
                  cost_estimated=True)
    s = (await run_loop(ScriptedModel([response("a", usage=table)]), req())).summary
    assert s is not None and s.usage.cost_usd is None and s.estimated_cost_usd == 0.5


def test_stop_reasons_are_normalized() -> None:
    assert normalized_stop_reason("stop", False) == "end_turn"
    assert normalized_stop_reason("stop", True) == "tool_use"
    assert normalized_stop_reason("length", True) == "max_tokens"
    assert normalized_stop_reason("content_filter", False) == "refusal"
    assert normalized_stop_reason("STOP", False) == "end_turn"
    assert normalized_stop_reason("pause_turn", False) == "paused"
    assert normalized_stop_reason("who-knows", False) == "unknown"


async def test_iteration_limit_summary_names_its_error_and_counts_every_call() -> None:
    model = ScriptedModel([[tool_call("echo")]] * 3)
    with pytest.raises(LoopBudgetExceeded) as info:
        await run_loop(model, req(), tools=Tools(echo=echo),
                       options=LoopOptions(max_iterations=3, wrap_errors=True,
                                           deadline_seconds=30))
    s = info.value.summary
    assert s is not None and s.error_type == "LoopBudgetExceeded"
    assert s.max_repeated_tool_calls == 3 and s.deadline_seconds == 30


async def test_a_workflow_step_keeps_the_routers_error() -> None:
    from loop_doubles import RetryingModel, provider_error

    model = RetryingModel([[provider_error(500)]])
    with pytest.raises(ProviderError) as info:
        await run_loop(model, req())
    assert type(info.value) is ProviderError  # not wrapped, not retyped


def test_the_observers_of_spec_002_are_top_level(openai_server: FakeOpenAIServer) -> None:
    openai_server.script("ready")
    out = io.StringIO()
    seen = agentloom.ListObserver()
    both = agentloom.MultiObserver(seen, agentloom.ConsoleObserver(out))
    with Agent.from_env(agent_env(openai_server), tools=[], observer=both) as agent:
        agent.run_result("x")
    assert seen.kinds()[0] == "conversation_start"
    assert "completed after 1 iteration" in out.getvalue()
    assert "x" not in out.getvalue().replace("[agentloom]", "").replace("after", "")


def test_event_trace_lines_carry_timestamps() -> None:
    from agentloom.observe.events import EventTraceObserver
    from agentloom.testing import FakeClock

    lines: list[str] = []
    clock = FakeClock()
    trace = EventTraceObserver(lines.append, clock=clock)
    trace.record("mark")
    record = json.loads(lines[0])
    assert record["ts"] == round(clock.wall(), 6) and record["t"] == 0.0


def test_a_fake_reply_cut_off_mid_tool_call_over_http(openai_server: FakeOpenAIServer) -> None:
    openai_server.script(FakeReply(tool_calls=[("add", '{"a": 1, "b')], finish_reason="length"),
                  FakeReply(tool_calls=[("add", {"a": 1, "b": 2})]), "3")

    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    with Agent.from_env(agent_env(openai_server), tools=[add], max_tokens=500) as agent:
        result = agent.run_result("add")
    assert result.text == "3" and result.summary.tool_calls == {"add": 1}
    sent = [r.json.get("max_tokens") or r.json.get("max_completion_tokens")
            for r in openai_server.requests]
    assert sent == [500, 1000, 1000]
