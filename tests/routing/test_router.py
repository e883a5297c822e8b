"""Router: retries, backoff through the clock, Retry-After, fallback, capability skips,
streaming rules, breaker integration and cost on the response."""

from __future__ import annotations

import random
from decimal import Decimal

import pytest
from _routing_fakes import FakeClient, drop_error, request, status_error

from agentloom.errors import ProviderError
from agentloom.messages import ImagePart, Message, ModelRequest, ToolSpec, Usage
from agentloom.pricing import Price
from agentloom.providers._base import AttemptRecord, Capabilities
from agentloom.routing import (
    NO_RETRY,
    BreakerSettings,
    CallFailed,
    Candidate,
    CircuitBreaker,
    RetryPolicy,
    Router,
)
from agentloom.testing import FakeClock


def _router(*cands: Candidate, clock: FakeClock, **kw: object) -> Router:
    return Router(list(cands), clock=clock, rng=random.Random(1), **kw)  # type: ignore[arg-type]


async def test_retries_a_503_then_recovers_waiting_on_the_clock() -> None:
    clock = FakeClock()
    a = FakeClient("a", [status_error(503), status_error(503)])
    router = _router(
        Candidate(provider="a", model="m", client=a),
        clock=clock,
        retry=RetryPolicy(max_retries=2, backoff_base=1.0, jitter=0.0),
    )
    records: list[AttemptRecord] = []
    response = await router.complete(request(), on_attempt=records.append)
    assert response.text == "ok"
    assert len(a.calls) == 3
    assert [(r.attempt, r.ok, r.status) for r in records] == [
        (1, False, 503),
        (2, False, 503),
        (3, True, 200),
    ]
    assert [r.wait_before_seconds for r in records] == [0.0, 1.0, 2.0]
    assert clock.sleeps == [1.0, 2.0]


async def test_retry_after_seconds_is_honoured() -> None:
    clock = FakeClock()
    a = FakeClient("a", [status_error(429, headers={"retry-after": "7"})])
    router = _router(Candidate(provider="a", model="m", client=a), clock=clock)
    records: list[AttemptRecord] = []
    await router.complete(request(), on_attempt=records.append)
    assert clock.sleeps == [7.0]
    assert records[1].wait_before_seconds == 7.0


async def test_retry_after_http_date_is_read_against_the_clock() -> None:
    clock = FakeClock(wall_start=1_767_225_600.0)  # 2026-01-01T00:00:00Z
    a = FakeClient(
        "a", [status_error(429, headers={"retry-after": "Thu, 01 Jan 2026 00:00:20 GMT"})]
    )
    router = _router(Candidate(provider="a", model="m", client=a), clock=clock)
    await router.complete(request())
    assert clock.sleeps == [20.0]


async def test_retry_after_past_the_cap_moves_to_the_fallback() -> None:
    clock = FakeClock()
    a = FakeClient("a", [status_error(429, headers={"retry-after": "3600"})])
    b = FakeClient("b")
    router = _router(
        Candidate(provider="a", model="m", client=a),
        Candidate(provider="b", model="m2", client=b),
        clock=clock,
        retry=RetryPolicy(max_retry_after=60),
    )
    response = await router.complete(request())
    assert response.provider == "b"
    assert clock.sleeps == []
    assert len(a.calls) == 1


async def test_permanent_error_fails_fast_without_retry() -> None:
    clock = FakeClock()
    a = FakeClient("a", [status_error(401)])
    router = _router(Candidate(provider="a", model="m", client=a), clock=clock)
    records: list[AttemptRecord] = []
    with pytest.raises(ProviderError) as info:
        await router.complete(request(), on_attempt=records.append)
    err = info.value
    assert isinstance(err, CallFailed)
    assert (err.status, err.retryable, err.request_sent) == (401, False, True)
    assert len(a.calls) == 1 and len(records) == 1 and clock.sleeps == []
    assert err.attempts == tuple(records)


async def test_fallback_entry_gets_its_own_model_after_retries_are_spent() -> None:
    clock = FakeClock()
    a = FakeClient("a", [status_error(500)] * 3)
    b = FakeClient("b")
    router = _router(
        Candidate(provider="a", model="gpt-4o", client=a),
        Candidate(provider="b", model="claude-haiku-4-5", client=b),
        clock=clock,
        retry=RetryPolicy(max_retries=2),
    )
    records: list[AttemptRecord] = []
    response = await router.complete(request(), on_attempt=records.append)
    assert response.provider == "b"
    assert b.calls[0].model == "claude-haiku-4-5"  # not the primary's model name
    assert [(r.provider, r.attempt, r.ok) for r in records] == [
        ("a", 1, False),
        ("a", 2, False),
        ("a", 3, False),
        ("b", 1, True),
    ]
    assert records[3].wait_before_seconds == 0.0


async def test_all_candidates_failing_raises_with_every_error() -> None:
    clock = FakeClock()
    a = FakeClient("a", [status_error(503)])
    b = FakeClient("b", [status_error(500, provider="b")])
    router = _router(
        Candidate(provider="a", model="m", client=a, retry=NO_RETRY),
        Candidate(provider="b", model="n", client=b, retry=NO_RETRY),
        clock=clock,
    )
    with pytest.raises(CallFailed) as info:
        await router.complete(request())
    err = info.value
    assert [e.status for e in err.errors] == [503, 500]
    assert err.status == 500 and err.provider == "b" and err.retryable
    assert "all 2 candidates failed" in str(err)
    assert isinstance(err.__cause__, ProviderError)


async def test_no_retry_policy_makes_one_attempt() -> None:
    clock = FakeClock()
    a = FakeClient("a", [status_error(503)])
    router = _router(Candidate(provider="a", model="m", client=a), clock=clock, retry=NO_RETRY)
    with pytest.raises(CallFailed) as info:
        await router.complete(request())
    assert len(a.calls) == 1
    assert info.value.retryable  # the engine may re-run the step


async def test_a_provider_that_cannot_take_the_request_is_skipped() -> None:
    clock = FakeClock()
    a = FakeClient("a")
    b = FakeClient("b")
    router = _router(
        Candidate(provider="a", model="m", client=a, capabilities=Capabilities(tools=False)),
        Candidate(provider="b", model="m", client=b, capabilities=Capabilities()),
        clock=clock,
    )
    req = request(tools=(ToolSpec(name="t"),))
    response = await router.complete(req)
    assert response.provider == "b" and a.calls == []


async def test_no_provider_can_take_it_fails_without_retry_and_without_sending() -> None:
    clock = FakeClock()
    a = FakeClient("a")
    router = _router(
        Candidate(provider="a", model="m", client=a, capabilities=Capabilities(image=False)),
        clock=clock,
    )
    req = ModelRequest(model="m", messages=(Message.user("see", ImagePart(data=b"x")),))
    with pytest.raises(CallFailed) as info:
        await router.complete(req)
    assert a.calls == []
    err = info.value
    assert (err.phase, err.request_sent, err.retryable) == ("local", False, False)
    assert "images" in str(err)


async def test_custom_check_hook() -> None:
    def no_long_prompts(req: ModelRequest, caps: Capabilities) -> str | None:
        return "prompt too long" if len(req.messages[0].text) > 5 else None

    a, b = FakeClient("a"), FakeClient("b")
    router = Router(
        [
            Candidate(provider="a", model="m", client=a, capabilities=Capabilities()),
            Candidate(provider="b", model="m", client=b),
        ],
        checks=[no_long_prompts],
        clock=FakeClock(),
    )
    assert (await router.complete(request("a long prompt"))).provider == "b"


async def test_stream_falls_back_before_the_first_chunk() -> None:
    clock = FakeClock()
    a = FakeClient("a", [drop_error()], chunks_before_error=0)
    b = FakeClient("b")
    router = _router(
        Candidate(provider="a", model="m", client=a, retry=NO_RETRY),
        Candidate(provider="b", model="m", client=b),
        clock=clock,
    )
    seen: list[object] = []
    response = await router.complete(request(stream=True), on_event=seen.append)
    assert response.provider == "b"


async def test_stream_after_first_chunk_neither_retries_nor_falls_back() -> None:
    clock = FakeClock()
    a = FakeClient("a", [drop_error()], chunks_before_error=2)
    b = FakeClient("b")
    router = _router(
        Candidate(provider="a", model="m", client=a),
        Candidate(provider="b", model="m", client=b),
        clock=clock,
    )
    seen: list[object] = []
    with pytest.raises(CallFailed) as info:
        await router.complete(request(stream=True), on_event=seen.append)
    assert len(seen) == 2 and b.calls == [] and len(a.calls) == 1
    assert info.value.partial and info.value.retryable  # the step's retry decides


async def test_open_breaker_skips_the_endpoint_and_429_does_not_trip_it() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker("a", BreakerSettings(failure_threshold=2), clock=clock)
    a = FakeClient("a", [status_error(429)] * 5 + [status_error(503)] * 2)
    b = FakeClient("b")
    router = _router(
        Candidate(
            provider="a", model="m", client=a, breaker=breaker, retry=RetryPolicy(max_retries=6)
        ),
        Candidate(provider="b", model="m", client=b),
        clock=clock,
    )
    response = await router.complete(request())
    # five 429s left it closed; two 503s opened it; the next try is refused locally.
    assert response.provider == "b"
    assert len(a.calls) == 7
    assert breaker.state == "open"
    a.steps = []
    assert (await router.complete(request())).provider == "b"
    assert len(a.calls) == 7


async def test_permanent_4xx_does_not_trip_the_breaker() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker("a", BreakerSettings(failure_threshold=1), clock=clock)
    a = FakeClient("a", [status_error(400)])
    router = _router(Candidate(provider="a", model="m", client=a, breaker=breaker), clock=clock)
    with pytest.raises(CallFailed):
        await router.complete(request())
    assert breaker.state == "closed"


async def test_cost_is_computed_from_the_table_unless_reported() -> None:
    clock = FakeClock()
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000, input_includes_cached=True)
    a = FakeClient("a", usage=usage)
    router = _router(Candidate(provider="openai", model="gpt-4o-mini", client=a), clock=clock)
    response = await router.complete(request())
    assert response.usage.cost_usd == Decimal("0.75")
    reported = FakeClient(
        "a", usage=Usage(input_tokens=1, output_tokens=1, cost_usd=Decimal("0.5"))
    )
    router2 = _router(
        Candidate(provider="openai", model="gpt-4o-mini", client=reported), clock=clock
    )
    assert (await router2.complete(request())).usage.cost_usd == Decimal("0.5")


async def test_unknown_model_cost_is_none() -> None:
    router = _router(
        Candidate(provider="my_vllm", model="llama-x", client=FakeClient("a")), clock=FakeClock()
    )
    assert (await router.complete(request())).usage.cost_usd is None


async def test_candidate_settings_shape_the_request() -> None:
    a = FakeClient("a")
    router = _router(
        Candidate(
            provider="a",
            model="big",
            client=a,
            params={"top_p": 0.5, "seed": 1},
            headers={"x-team": "t"},
            max_tokens=100,
            price=Price(input=Decimal(1), output=Decimal(2)),
        ),
        clock=FakeClock(),
    )
    req = request(max_tokens=500, extra={"seed": 7})
    await router.complete(req)
    sent = a.calls[0]
    assert sent.model == "big"
    assert sent.extra == {"top_p": 0.5, "seed": 7}  # the request's own wins
    assert sent.headers == {"x-team": "t"}
    assert sent.max_tokens == 100  # the ceiling caps it
    await router.complete(request())
    assert a.calls[1].max_tokens == 100  # and fills it in


async def test_a_plain_client_without_attempt_reports_gets_a_synthesised_record() -> None:
    from agentloom.testing import ScriptedModel

    model = ScriptedModel(["hello"])
    router = Router([Candidate(provider="s", model="m", client=model)], clock=FakeClock())
    records: list[AttemptRecord] = []
    await router.complete(request(), on_attempt=records.append)
    assert len(records) == 1 and records[0].ok


async def test_cancelled_call_releases_budget_and_breaker_probe() -> None:
    import asyncio

    from agentloom.routing import RunBudget

    clock = FakeClock()
    breaker = CircuitBreaker(
        "a", BreakerSettings(failure_threshold=1, recovery_seconds=1), clock=clock
    )
    breaker.record("failure")
    clock.advance(1)  # half-open: one probe allowed
    budget = RunBudget(max_cost_usd=Decimal(1))
    a = FakeClient("openai", delay=10)
    router = _router(
        Candidate(provider="openai", model="gpt-4o", client=a, breaker=breaker),
        clock=clock,
        budget=budget,
    )
    task = asyncio.create_task(router.complete(request()))
    while not a.calls:  # until the call is in flight
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert budget.reserved_usd == 0 and budget.spent_usd == 0
    assert breaker.state == "half_open" and breaker.allow()  # the probe slot came back


async def test_rate_limit_wait_is_reported_as_wait_before() -> None:
    from agentloom.routing import RateLimit, RateLimiter

    clock = FakeClock()
    limiter = RateLimiter(RateLimit(rpm=1), clock=clock)
    router = _router(
        Candidate(provider="a", model="m", client=FakeClient("a"), limiter=limiter), clock=clock
    )
    records: list[AttemptRecord] = []
    await router.complete(request(), on_attempt=records.append)
    await router.complete(request(), on_attempt=records.append)
    assert records[0].wait_before_seconds == 0
    assert records[1].wait_before_seconds == pytest.approx(60)
