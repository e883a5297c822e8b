"""Circuit breaker states and the RPM/TPM limiter, on a fake clock."""

from __future__ import annotations

import asyncio

import pytest

from agentloom.routing import (
    Breakers,
    BreakerSettings,
    CircuitBreaker,
    Limiters,
    RateLimit,
    RateLimiter,
)
from agentloom.testing import FakeClock


def test_breaker_opens_after_threshold_and_half_opens_after_recovery() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(
        "openai", BreakerSettings(failure_threshold=3, recovery_seconds=30), clock=clock
    )
    for _ in range(2):
        assert breaker.allow()
        breaker.record("failure")
    assert breaker.state == "closed"
    assert breaker.allow()
    breaker.record("failure")
    assert breaker.state == "open"
    assert not breaker.allow()
    clock.advance(29.9)
    assert not breaker.allow()
    clock.advance(0.1)
    assert breaker.state == "half_open"
    assert breaker.allow()  # the one probe
    assert not breaker.allow()  # half_open_max=1
    breaker.record("success")
    assert breaker.state == "closed"
    assert breaker.snapshot() == {
        "endpoint": "openai",
        "state": "closed",
        "consecutive_failures": 0,
        "times_opened": 1,
    }


def test_failed_probe_reopens() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(
        "x", BreakerSettings(failure_threshold=1, recovery_seconds=5), clock=clock
    )
    breaker.allow()
    breaker.record("failure")
    clock.advance(5)
    assert breaker.allow()
    breaker.record("failure")
    assert breaker.state == "open"
    assert breaker.snapshot()["times_opened"] == 2


def test_ignored_outcomes_do_not_count_and_free_the_probe() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(
        "x", BreakerSettings(failure_threshold=2, recovery_seconds=1), clock=clock
    )
    for _ in range(10):
        breaker.allow()
        breaker.record("ignored")  # 429s, cancelled streams
    assert breaker.state == "closed"
    breaker.record("failure")
    breaker.record("failure")
    clock.advance(1)
    assert breaker.allow()
    breaker.record("ignored")
    assert breaker.allow()  # the probe slot came back


def test_success_resets_the_consecutive_count() -> None:
    breaker = CircuitBreaker("x", BreakerSettings(failure_threshold=2), clock=FakeClock())
    breaker.record("failure")
    breaker.record("success")
    breaker.record("failure")
    assert breaker.state == "closed"


def test_breakers_registry_shares_by_name() -> None:
    reg = Breakers(BreakerSettings(failure_threshold=1), clock=FakeClock())
    assert reg.get("a") is reg.get("a")
    reg.get("a").record("failure")
    assert reg.snapshot()["a"]["state"] == "open"


def test_bad_breaker_settings() -> None:
    with pytest.raises(ValueError):
        BreakerSettings(failure_threshold=0)


async def test_rpm_limiter_spreads_a_burst_over_the_clock() -> None:
    clock = FakeClock()
    limiter = RateLimiter(RateLimit(rpm=60), clock=clock)
    start = clock.now()
    waits = await asyncio.gather(*(limiter.acquire() for _ in range(70)))
    # 60 go at once (a minute's bucket), the other 10 at one per second.
    assert sum(1 for w in waits if w == 0) == 60
    assert clock.now() - start == pytest.approx(10, abs=1e-6)


async def test_tpm_limiter_and_refund() -> None:
    clock = FakeClock()
    limiter = RateLimiter(RateLimit(tpm=1200), clock=clock)  # 20 tokens/s
    assert await limiter.acquire(1000) == 0
    waited = await limiter.acquire(400)  # 200 left: needs 200 more = 10 s
    assert waited == pytest.approx(10)
    limiter.settle(400, 100)  # used only 100: 300 back
    assert await limiter.acquire(300) == 0


async def test_limiters_are_off_unless_configured() -> None:
    limiters = Limiters({"openai": RateLimit(rpm=10)}, clock=FakeClock())
    assert limiters.get("anthropic") is None
    assert limiters.get("openai") is limiters.get("openai")
    limiters.set("openai", RateLimit())
    assert limiters.get("openai") is None


def test_rate_limit_validation() -> None:
    with pytest.raises(ValueError):
        RateLimit(rpm=0)
    with pytest.raises(ValueError):
        RateLimit(tpm=-5)


def test_breakers_can_be_reconfigured_from_a_workflow() -> None:
    reg = Breakers(clock=FakeClock())
    existing = reg.get("a")
    reg.configure(BreakerSettings(failure_threshold=1))
    existing.record("failure")
    assert existing.state == "open"
    assert reg.get("b").settings.failure_threshold == 1


@pytest.mark.parametrize(("field", "value"), [
    ("rpm", 0.5), ("rpm", 0.999), ("tpm", 0.5), ("rpm", float("nan")), ("tpm", float("nan")),
    ("rpm", float("inf")), ("rpm", True), ("rpm", "60"), ("rpm", 0), ("tpm", -1),
])
def test_a_limit_no_bucket_can_keep_is_refused(field: str, value: object) -> None:
    # rpm=0.5 made a bucket that never holds one request: the first call waited a minute
    # at a time, for ever; NaN compared false with every level and limited nothing.
    with pytest.raises(ValueError, match=rf"RateLimit.{field} must be a finite number >= 1"):
        RateLimit(**{field: value})  # type: ignore[arg-type]


async def test_the_least_limit_lets_one_call_through_then_waits_a_minute() -> None:
    clock = FakeClock()
    limiter = RateLimiter(RateLimit(rpm=1), clock=clock)
    assert await limiter.acquire() == 0.0
    assert await limiter.acquire() == pytest.approx(60.0)
