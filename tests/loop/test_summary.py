"""ConversationSummary: statuses, usage (None is not zero), retries, errors, timeline,
stall and warning events, and that no content ever reaches it."""

from __future__ import annotations

import asyncio
import json
from decimal import Decimal

import pytest
from loop_doubles import Recorder, RetryingModel, Tools, echo, provider_error, response

from agentloom.errors import AgentLoopError, LoopBudgetExceeded, ProviderError
from agentloom.loop import (
    ConversationStatus,
    ConversationSummary,
    LoopOptions,
    SummaryOptions,
    run_loop,
)
from agentloom.loop.summary import UsageSummary, cache_hit_rate, status_for_finish
from agentloom.messages import Message, ModelRequest, Usage
from agentloom.testing.scripted import ScriptedModel, tool_call


def req(text: str = "hi") -> ModelRequest:
    return ModelRequest(model="m", messages=(Message.user(text),))


def test_status_properties() -> None:
    S = ConversationStatus
    assert {s for s in S if s.succeeded} == {S.COMPLETED, S.REFUSED, S.TRUNCATED}
    assert {s for s in S if s.budget_exhausted} == {
        S.ITERATION_LIMIT, S.DEADLINE_EXCEEDED, S.TOKEN_LIMIT}
    assert S("completed") is S.COMPLETED and str(S.PAUSED) == "paused"


@pytest.mark.parametrize(("finish", "status"), [
    ("stop", "completed"), ("end_turn", "completed"), ("STOP", "completed"), (None, "completed"),
    ("length", "truncated"), ("max_tokens", "truncated"), ("MAX_TOKENS", "truncated"),
    ("content_filter", "refused"), ("refusal", "refused"), ("SAFETY", "refused"),
    ("max_tool_iterations", "iteration_limit"),
    ("max_tool_iterations_no_answer", "iteration_limit"),
])
def test_finish_reason_maps_to_status(finish: str | None, status: str) -> None:
    assert status_for_finish(finish) == status


@pytest.mark.parametrize(("finish", "status"), [
    ("length", "truncated"), ("content_filter", "refused"), ("end_turn", "completed")])
async def test_status_of_a_run(finish: str, status: str) -> None:
    result = await run_loop(ScriptedModel([response("x", finish=finish)]), req())
    assert result.summary is not None
    assert result.summary.status == status and result.summary.status.succeeded


async def test_provider_error_summary_on_error_and_observer() -> None:
    rec = Recorder()
    model = RetryingModel([[provider_error(503), provider_error(429, sent=None,
                                                                 secret="sk-SECRET")]])
    with pytest.raises(AgentLoopError) as info:
        await run_loop(model, req(), options=LoopOptions(observer=rec, wrap_errors=True))
    err = info.value
    assert isinstance(err.__cause__, ProviderError)
    s = err.summary
    assert s is not None and rec.summaries == [s]
    assert s.status == "provider_error" and not s.status.succeeded
    assert s.iterations == 1 and s.provider_retries == 1
    # Named by its kind, as spec 002's library names provider failures.
    assert s.error_type == "RateLimited" and s.provider_status_code == 429
    assert s.error_phase == "status" and s.error_request_sent is None
    assert s.error_request_id == "req-123" and s.error_attempts_sent == 1
    assert [(a.status_code, a.request_sent) for a in s.failed_attempts] == [
        (503, True), (429, None)]
    assert s.retry_wait_seconds == 0.5
    assert s.provider == "retrying"
    assert "SECRET" not in s.model_dump_json()


async def test_without_wrap_errors_the_original_error_propagates() -> None:
    rec = Recorder()
    with pytest.raises(ProviderError):
        await run_loop(RetryingModel([[provider_error(400)]]), req(),
                       options=LoopOptions(observer=rec))
    assert rec.summaries[0].status == "provider_error"  # type: ignore[attr-defined]


async def test_other_errors_are_status_error() -> None:
    with pytest.raises(AgentLoopError) as info:
        await run_loop(ScriptedModel([ValueError("bad thing")]), req(),
                       options=LoopOptions(wrap_errors=True))
    assert info.value.summary is not None
    assert info.value.summary.status == "error"
    assert info.value.summary.error_type == "ValueError"
    assert "bad thing" not in info.value.summary.model_dump_json()


async def test_iteration_limit_in_agent_mode_raises_with_summary() -> None:
    model = ScriptedModel([[tool_call("echo")], [tool_call("echo")]])
    with pytest.raises(LoopBudgetExceeded) as info:
        await run_loop(model, req(), tools=Tools(echo=echo),
                       options=LoopOptions(max_iterations=2, wrap_errors=True))
    err = info.value
    assert (err.kind, err.limit, err.actual) == ("iterations", 2, 2)
    assert err.summary is not None and err.summary.status == "iteration_limit"
    # An Agent runs the last turn's tools too (spec 002's library does); the budget end
    # names its error.
    assert err.summary.iteration_limit == 2 and err.summary.tool_calls == {"echo": 2}
    assert err.summary.error_type == "LoopBudgetExceeded"
    assert err.summary.max_repeated_tool_calls == 2


async def test_retries_count_attempts_after_the_first_of_each_call() -> None:
    model = RetryingModel([[provider_error(), [tool_call("echo")] and "x"],
                           [provider_error(), provider_error(), "done"]])
    # first call: fail then text "x" answers; so use a tool turn to make two calls
    model = RetryingModel([
        [provider_error(), response(parts=[tool_call("echo")])],
        [provider_error(), provider_error(), "done"],
    ])
    result = await run_loop(model, req(), tools=Tools(echo=echo))
    s = result.summary
    assert s is not None and s.status == "completed"
    assert s.provider_retries == 3 and len(s.failed_attempts) == 3
    assert s.retry_wait_seconds == pytest.approx(1.5)
    assert s.error_type is None and s.error_attempts_sent is None


async def test_usage_none_means_unknown_never_zero() -> None:
    model = ScriptedModel([
        response("a", usage=Usage(input_tokens=5, output_tokens=0)),
    ])
    s = (await run_loop(model, req())).summary
    assert s is not None
    assert s.usage.output_tokens == 0 and s.usage.cache_read_tokens is None
    assert s.usage.cost_usd is None and s.cache_hit_rate is None

    s = (await run_loop(ScriptedModel([response("a", usage=Usage())]), req())).summary
    assert s is not None and s.usage.input_tokens is None and s.usage.output_tokens is None


async def test_cost_sums_only_turns_that_reported_one() -> None:
    model = ScriptedModel([
        response(parts=[tool_call("echo")],
                 usage=Usage(input_tokens=1, output_tokens=1, cost_usd=Decimal("0.25"))),
        response("b", usage=Usage(input_tokens=1, output_tokens=1)),
        ])
    s = (await run_loop(model, req(), tools=Tools(echo=echo))).summary
    assert s is not None and s.usage.cost_usd == 0.25


def test_cache_hit_rate_both_styles() -> None:
    openai = UsageSummary(input_tokens=100, cache_read_tokens=80, input_includes_cached=True)
    assert cache_hit_rate(openai) == pytest.approx(0.8)
    anthropic = UsageSummary(input_tokens=20, cache_read_tokens=80, cache_write_tokens=0,
                             input_includes_cached=False)
    assert cache_hit_rate(anthropic) == pytest.approx(0.8)
    assert cache_hit_rate(UsageSummary(input_tokens=100, input_includes_cached=True)) is None
    zero = UsageSummary(input_tokens=11, cache_read_tokens=0, input_includes_cached=True)
    assert cache_hit_rate(zero) == 0.0


async def test_cache_hit_rate_on_a_run() -> None:
    u = Usage(input_tokens=10, output_tokens=1, cache_read_tokens=30, cache_write_tokens=10,
              input_includes_cached=False)
    s = (await run_loop(ScriptedModel([response("a", usage=u)]), req())).summary
    assert s is not None and s.cache_hit_rate == pytest.approx(0.6)


def test_summary_options_validate_at_construction() -> None:
    for bad in ({"stall_threshold": 1}, {"stall_threshold": 0}, {"warn_at": (0,)},
                {"warn_at": (1.01,)}, {"warn_at": (1.5,)}, {"stall_threshold": True}):
        with pytest.raises(ValueError):
            SummaryOptions(**bad)  # type: ignore[arg-type]
    assert SummaryOptions(warn_at=(1.0,)).warn_at == (1.0,)  # (0, 1], as spec 002's library
    opts = SummaryOptions(timeline=True, stall_threshold=3, warn_at=(0.8, 0.5))
    assert opts.warn_at == (0.5, 0.8)
    with pytest.raises(AttributeError):
        opts.timeline = False  # type: ignore[misc]


async def test_stall_flags_without_changing_behaviour() -> None:
    rec = Recorder()
    same = [tool_call("echo", '{"a": 1, "b": 2}'), tool_call("echo", '{"b":2,"a":1}')]
    model = ScriptedModel([same, [tool_call("echo", {"a": 1, "b": 2})], [tool_call("echo")],
                           "done"])
    opts = LoopOptions(observer=rec, summary_options=SummaryOptions(stall_threshold=3))
    result = await run_loop(model, req(), tools=Tools(echo=echo), options=opts)
    s = result.summary
    assert s is not None and s.status == "completed" and result.text == "done"
    assert s.stalled is True and s.max_repeated_tool_calls == 3
    assert [e[2] for e in rec.events if e[1] == "stall"] == [("echo", 3)]
    dumped = s.model_dump_json()
    assert '"a"' not in dumped and "a\\\": 1" not in dumped


async def test_max_repeated_reported_without_threshold() -> None:
    model = ScriptedModel([[tool_call("echo", id="1"), tool_call("echo", id="2")], "done"])
    s = (await run_loop(model, req(), tools=Tools(echo=echo))).summary
    assert s is not None and s.max_repeated_tool_calls == 2 and s.stalled is False


async def test_budget_warnings_fire_once_each() -> None:
    rec = Recorder()
    replies: list[object] = [[tool_call("echo", {"i": i})] for i in range(4)] + ["done"]
    opts = LoopOptions(max_iterations=5, observer=rec,
                       summary_options=SummaryOptions(warn_at=(0.5, 0.8)))
    await run_loop(ScriptedModel(replies), req(), tools=Tools(echo=echo),  # type: ignore[arg-type]
                   options=opts)
    warnings = [e[2] for e in rec.events if e[1] == "warning"]
    assert warnings == [("iterations", 3, 5), ("iterations", 4, 5)]


async def test_deadline_warning() -> None:
    from agentloom.testing.clock import FakeClock

    clock = FakeClock()
    rec = Recorder()

    def model_fn(request: ModelRequest) -> object:
        clock.advance(3)
        return [tool_call("echo")] if len(request.messages) < 4 else "done"

    from agentloom.testing.scripted import FunctionModel

    opts = LoopOptions(clock=clock, deadline_seconds=10, observer=rec,
                       summary_options=SummaryOptions(warn_at=(0.5,)))
    await run_loop(FunctionModel(model_fn), req(), tools=Tools(echo=echo), options=opts)
    warnings = [e[2] for e in rec.events if e[1] == "warning"]
    assert [w for w in warnings if w[0] == "deadline"] == [("deadline", 6, 10)]


async def test_timeline_records_each_call_including_one_that_raised() -> None:
    model = RetryingModel([
        [provider_error(), response(parts=[tool_call("echo"), tool_call("nope", id="2")])],
        [provider_error(500)],
    ])
    opts = LoopOptions(summary_options=SummaryOptions(timeline=True), wrap_errors=True)
    with pytest.raises(AgentLoopError) as info:
        await run_loop(model, req(), tools=Tools(echo=echo), options=opts)
    s = info.value.summary
    assert s is not None and s.timeline is not None and len(s.timeline) == 2
    first, second = s.timeline
    assert first.attempts == 2 and first.stop_reason == "tool_use"  # normalized
    assert first.input_tokens == 10 and first.tools == ("echo", "nope")
    assert first.tool_errors == ("nope",) and first.error_type is None
    assert second.error_type == "ProviderUnavailable"
    assert second.input_tokens is None and second.output_tokens is None
    assert s.iterations == 2


async def test_timeline_off_by_default() -> None:
    s = (await run_loop(ScriptedModel(["x"]), req())).summary
    assert s is not None and s.timeline is None


async def test_time_split() -> None:
    # On the run's clock, not real sleeps: both tools are in flight while the clock moves
    # 2 s, so their summed durations (4 s) exceed the batch's wall time (2 s).
    from agentloom.testing.clock import FakeClock

    clock = FakeClock()
    started: list[str] = []
    both_started = asyncio.Event()

    async def slow(arguments: str) -> str:
        started.append(arguments)
        if len(started) == 2:
            clock.advance(2)
            both_started.set()
        await both_started.wait()
        return "s"

    model = ScriptedModel([[tool_call("slow", id="1"), tool_call("slow", id="2")], "ok"])
    async with asyncio.timeout(30):  # tools run one by one would wait here for ever
        s = (await run_loop(model, req(), tools=Tools(slow=slow),
                            options=LoopOptions(clock=clock))).summary
    assert s is not None
    assert s.tool_seconds == 2
    assert s.tool_duration_seconds == 4
    assert s.elapsed_seconds >= s.tool_seconds + s.model_seconds


async def test_no_content_in_summary() -> None:
    secret = "TOPSECRET"
    model = ScriptedModel([[tool_call("echo", {"q": secret})], f"answer {secret}"])
    opts = LoopOptions(summary_options=SummaryOptions(timeline=True, stall_threshold=2))
    s = (await run_loop(ModelRequestWrapper(model), req(secret), tools=Tools(echo=echo),
                        options=opts)).summary
    assert s is not None and secret not in s.model_dump_json()


class ModelRequestWrapper:
    """Passes through; here to show the summary doesn't depend on the client type."""

    def __init__(self, inner: ScriptedModel) -> None:
        self.inner = inner

    async def complete(self, request, *, on_event=None, on_attempt=None):  # type: ignore[no-untyped-def]
        return await self.inner.complete(request, on_event=on_event, on_attempt=on_attempt)


async def test_ids_and_spec_display_shape() -> None:
    usage = Usage(input_tokens=11, output_tokens=11, cache_read_tokens=0, reasoning_tokens=0,
                  input_includes_cached=True)
    model = ScriptedModel([response("ready", usage=usage)])
    opts = LoopOptions(correlation_id="example-1", parent_id="p", conversation_id="conv-1",
                       agent_name="a")
    s = (await run_loop(model, req(), options=opts)).summary
    assert s is not None
    out = json.loads(s.model_dump_json(include={
        "correlation_id", "provider", "model", "status", "iterations", "tool_calls",
        "provider_retries", "usage"}))
    assert list(out) == ["correlation_id", "provider", "model", "status", "iterations",
                         "tool_calls", "provider_retries", "usage"]
    assert out["usage"] == {"input_tokens": 11, "output_tokens": 11, "cache_read_tokens": 0,
                            "cache_write_tokens": None, "reasoning_tokens": 0,
                            "cost_usd": None, "input_includes_cached": True}
    assert (s.conversation_id, s.parent_id, s.agent_name) == ("conv-1", "p", "a")
    assert ConversationSummary.model_validate_json(s.model_dump_json()) == s


async def test_generated_conversation_ids_differ() -> None:
    a = (await run_loop(ScriptedModel(["x"]), req())).summary
    b = (await run_loop(ScriptedModel(["x"]), req())).summary
    assert a is not None and b is not None and a.conversation_id != b.conversation_id
