"""FakeClock autojump, RetryPolicy classification/backoff, Retry-After parsing."""

from __future__ import annotations

import asyncio
import random

import pytest

from agentloom.errors import ProviderError
from agentloom.routing import RetryPolicy, parse_retry_after, retry_after_of
from agentloom.testing import FakeClock


async def test_fake_clock_sleep_costs_no_real_time_and_is_recorded() -> None:
    clock = FakeClock()
    loop = asyncio.get_running_loop()
    real_start, start = loop.time(), clock.now()
    await clock.sleep(3600)
    assert clock.now() - start == 3600
    assert clock.sleeps == [3600]
    assert loop.time() - real_start < 1.0


async def test_fake_clock_concurrent_sleepers_overlap() -> None:
    clock = FakeClock()
    start = clock.now()
    woke: list[tuple[float, float]] = []

    async def sleeper(seconds: float) -> None:
        await clock.sleep(seconds)
        woke.append((seconds, clock.now() - start))

    await asyncio.gather(*(sleeper(s) for s in (3, 1, 2, 1)))
    assert woke == [(1, 1), (1, 1), (2, 2), (3, 3)]
    assert clock.now() - start == 3


async def test_fake_clock_wall_follows_now() -> None:
    clock = FakeClock(wall_start=1_000_000.0)
    await clock.sleep(10)
    assert clock.wall() == 1_000_010.0


def _err(status: int | None, phase: str = "status") -> ProviderError:
    return ProviderError("x", provider="p", status=status, phase=phase)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("status", "phase", "expected"),
    [
        (429, "status", True),
        (500, "status", True),
        (503, "status", True),
        (400, "status", False),
        (401, "status", False),
        (404, "status", False),
        (None, "connect", True),
        (None, "read", True),
        (200, "body", True),
        (None, "local", False),
    ],
)
def test_retry_classification(status: int | None, phase: str, expected: bool) -> None:
    assert RetryPolicy().is_retryable(_err(status, phase)) is expected


def test_retryable_codes_are_the_policys() -> None:
    policy = RetryPolicy(retryable_status_codes=frozenset({503}))
    assert not policy.is_retryable(_err(500))
    assert policy.is_retryable(_err(503))


def test_backoff_grows_with_jitter_and_is_capped() -> None:
    policy = RetryPolicy(backoff_base=1.0, backoff_multiplier=2.0, backoff_max=5.0, jitter=0.25)
    rng = random.Random(7)
    waits = [policy.backoff(n, rng) for n in (1, 2, 3, 4, 5)]
    for wait, base in zip(waits, (1, 2, 4, 5, 5), strict=True):
        assert base * 0.75 <= wait <= base * 1.25
    assert len({round(w, 6) for w in waits}) == 5  # jittered, not identical


def test_retry_after_over_the_cap_means_give_up() -> None:
    policy = RetryPolicy(max_retry_after=10)
    assert policy.wait_before_retry(1, 4.0) == 4.0
    assert policy.wait_before_retry(1, 11.0) is None


@pytest.mark.parametrize(
    "bad",
    [
        {"max_retries": -1},
        {"backoff_base": -1.0},
        {"jitter": 2.0},
        {"max_retry_after": -5.0},
        {"backoff_multiplier": 0.5},
    ],
)
def test_bad_policy_values_are_refused(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        RetryPolicy(**bad)  # type: ignore[arg-type]


def test_parse_retry_after_seconds_date_and_garbage() -> None:
    now = 1_767_225_600.0  # 2026-01-01T00:00:00Z
    assert parse_retry_after("7", now_wall=now) == 7.0
    assert parse_retry_after("1.5", now_wall=now) == 1.5
    assert parse_retry_after("Thu, 01 Jan 2026 00:00:30 GMT", now_wall=now) == 30.0
    assert parse_retry_after("Wed, 31 Dec 2025 00:00:00 GMT", now_wall=now) == 0.0
    for garbage in ("soon", "", "-3", "nan", "inf", "Thu, 99 Foo"):
        assert parse_retry_after(garbage, now_wall=now) is None


def test_retry_after_of_prefers_the_header_read_against_our_clock() -> None:
    err = ProviderError(
        "x",
        provider="p",
        status=429,
        headers={"retry-after": "Thu, 01 Jan 2026 00:00:12 GMT"},
        retry_after=999.0,
    )
    assert retry_after_of(err, now_wall=1_767_225_600.0) == 12.0
    err2 = ProviderError(
        "x", provider="p", status=429, headers={"retry-after": "junk"}, retry_after=3.0
    )
    assert retry_after_of(err2, now_wall=0.0) == 3.0


def test_retry_after_ms_wins() -> None:
    err = ProviderError(
        "x", provider="p", status=429, headers={"retry-after-ms": "1500", "retry-after": "2"}
    )
    assert retry_after_of(err, now_wall=0.0) == 1.5


async def test_autojump_threshold_lets_real_work_finish_first() -> None:
    clock = FakeClock(autojump_threshold=0.02)
    order: list[str] = []

    async def timer() -> None:
        await clock.sleep(100)
        order.append("timer")

    async def real_io() -> None:
        await asyncio.sleep(0.001)  # stands for a loopback round trip
        order.append("io")

    await asyncio.gather(timer(), real_io())
    assert order == ["io", "timer"]
