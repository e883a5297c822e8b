"""Retry rules a mutation run found untested: the Retry-After cap and sub-second waits on
every path that reads them, the policy's limits just under and over, and the backoff
curve with and without jitter."""

from __future__ import annotations

import random

import pytest

from agentloom.errors import ProviderError, ReplyTooLarge
from agentloom.routing._retry import (
    RetryPolicy,
    parse_retry_after,
    retry_after_of,
    retry_after_seconds,
)

NOW = 1_767_225_600.0  # 2026-01-01 00:00:00 UTC
STEADY = RetryPolicy(jitter=0)


def status_error(status: int, **kw: object) -> ProviderError:
    return ProviderError("x", provider="p", status=status, **kw)  # type: ignore[arg-type]


# --- Retry-After: the cap and sub-second values, on both readers -------------------------


def test_wait_before_retry_honours_the_cap_inclusively() -> None:
    policy = RetryPolicy(max_retry_after=10)
    assert policy.wait_before_retry(1, 10.0) == 10.0
    assert policy.wait_before_retry(1, 10.001) is None
    assert policy.wait_before_retry(1, 0.25) == 0.25  # sub-second kept as is
    assert policy.wait_before_retry(1, -3.0) == 0.0
    assert STEADY.wait_before_retry(2, None) == 1.0  # no header: the backoff


def test_delay_takes_a_longer_retry_after_up_to_the_cap() -> None:
    policy = RetryPolicy(jitter=0, max_retry_after=10)
    err = status_error(429, headers={"retry-after": "30"})
    assert policy.delay(1, err, now_wall=NOW) == 10.0
    err = status_error(429, headers={"retry-after": "10"})
    assert policy.delay(1, err, now_wall=NOW) == 10.0
    err = status_error(429, headers={"retry-after": "7"})
    assert policy.delay(1, err, now_wall=NOW) == 7.0


def test_delay_keeps_the_backoff_when_retry_after_is_shorter_or_sub_second() -> None:
    policy = RetryPolicy(jitter=0, backoff_base=0.5)
    err = status_error(429, headers={"retry-after": "0.2"})
    assert policy.delay(1, err, now_wall=NOW) == 0.5
    err = status_error(429, headers={"retry-after": "0.8"})
    assert policy.delay(1, err, now_wall=NOW) == 0.8
    err = status_error(429, headers={"retry-after-ms": "750"})
    assert policy.delay(1, err, now_wall=NOW) == 0.75


def test_delay_without_a_clock_reads_the_recorded_retry_after() -> None:
    policy = RetryPolicy(jitter=0, max_retry_after=5)

    class Slow(Exception):
        retry_after = 3

    assert policy.delay(1, Slow()) == 3.0
    Slow.retry_after = 50
    assert policy.delay(1, Slow()) == 5.0
    assert policy.delay(1, status_error(429, retry_after=2.5)) == 2.5
    assert policy.delay(1, ValueError()) == 0.5
    assert policy.delay(1) == 0.5


def test_retry_after_ms_wins_when_it_reads_and_falls_back_when_not() -> None:
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}, now_wall=NOW) == 0.25
    assert retry_after_seconds({"retry-after-ms": "junk", "retry-after": "9"}, now_wall=NOW) == 9
    assert retry_after_seconds({"retry-after": "1.5"}, now_wall=NOW) == 1.5
    assert retry_after_seconds({}, now_wall=NOW) is None
    assert retry_after_seconds(None, now_wall=NOW) is None
    assert retry_after_seconds({"other": "1"}, now_wall=NOW) is None


def test_retry_after_of_prefers_the_headers_then_the_recorded_value() -> None:
    err = status_error(503, headers={"retry-after": "4"}, retry_after=9.0)
    assert retry_after_of(err, now_wall=NOW) == 4.0
    assert retry_after_of(status_error(503, retry_after=9.0), now_wall=NOW) == 9.0
    assert retry_after_of(status_error(503), now_wall=NOW) is None


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("0", 0.0),
        ("0.5", 0.5),
        (" 12 ", 12.0),
        ("Thu, 01 Jan 2026 00:00:30 GMT", 30.0),
        ("Wed, 31 Dec 2025 23:59:00 GMT", 0.0),  # in the past: now
    ],
)
def test_parse_retry_after_reads_seconds_and_dates(value: str, seconds: float) -> None:
    assert parse_retry_after(value, now_wall=NOW) == seconds


@pytest.mark.parametrize(
    "value", [None, "", "  ", "-1", "nan", "inf", "soon", "Thu, 01 Jan 2026 00:00:30", "32 Foo"]
)
def test_parse_retry_after_refuses_garbage(value: str | None) -> None:
    assert parse_retry_after(value, now_wall=NOW) is None


# --- the policy's own limits --------------------------------------------------------------


def test_the_defaults() -> None:
    policy = RetryPolicy()
    assert policy.max_retries == 2
    assert policy.retryable_status_codes == frozenset({429, 500, 502, 503, 504})
    assert policy.max_retry_after == 60.0
    assert policy.wait_before_retry(1, 60.0) == 60.0
    assert policy.wait_before_retry(1, 60.5) is None
    rng = random.Random(0)
    waits = [policy.backoff(1, rng) for _ in range(200)]
    assert 0.375 <= min(waits) < 0.4 and 0.6 < max(waits) <= 0.625


def test_settings_just_inside_are_accepted() -> None:
    policy = RetryPolicy(max_retries=0, backoff_base=0, backoff_max=0, max_retry_after=0,
                         backoff_multiplier=1, jitter=0)
    assert policy.backoff(3) == 0.0
    assert RetryPolicy(jitter=1).jitter == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_retries": -1}, "max_retries must be >= 0"),
        ({"backoff_base": -0.1}, "backoff_base must be a number >= 0"),
        ({"backoff_max": -0.1}, "backoff_max must be a number >= 0"),
        ({"max_retry_after": -0.1}, "max_retry_after must be a number >= 0"),
        ({"max_retry_after": float("nan")}, "max_retry_after must be a number >= 0"),
        ({"backoff_base": "1"}, "backoff_base must be a number >= 0"),
        ({"backoff_multiplier": 0.99}, "backoff_multiplier must be >= 1"),
        ({"jitter": -0.01}, "jitter must be between 0 and 1"),
        ({"jitter": 1.01}, "jitter must be between 0 and 1"),
    ],
)
def test_settings_just_outside_are_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RetryPolicy(**kwargs)  # type: ignore[arg-type]


def test_status_codes_are_normalised_to_ints() -> None:
    policy = RetryPolicy(retryable_status_codes={"503"})  # type: ignore[arg-type]
    assert policy.retryable_status_codes == frozenset({503})
    assert policy.is_retryable(status_error(503))


def test_backoff_grows_and_stops_at_the_maximum() -> None:
    policy = RetryPolicy(jitter=0, backoff_base=1, backoff_multiplier=3, backoff_max=10)
    assert [policy.backoff(n) for n in (0, 1, 2, 3, 4)] == [1, 1, 3, 9, 10]


def test_jitter_spreads_around_the_base() -> None:
    policy = RetryPolicy(jitter=0.5, backoff_base=2)
    rng = random.Random(7)
    waits = [policy.backoff(1, rng) for _ in range(300)]
    assert 1.0 <= min(waits) < 1.1 and 2.9 < max(waits) <= 3.0


# --- what is retried ---------------------------------------------------------------------


@pytest.mark.parametrize("phase", ["connect", "tls", "proxy", "send", "read", "body"])
def test_failures_without_a_status_retry_by_phase(phase: str) -> None:
    err = ProviderError("x", provider="p", phase=phase)  # type: ignore[arg-type]
    assert STEADY.is_retryable(err)


def test_local_failures_follow_their_own_flag() -> None:
    assert not STEADY.is_retryable(ProviderError("x", provider="p", phase="local"))
    assert STEADY.is_retryable(ProviderError("x", provider="p", phase="local", retryable=True))
    # a status seen outside the status phase still goes by the codes
    assert STEADY.is_retryable(ProviderError("x", provider="p", phase="local", status=503))
    assert not STEADY.is_retryable(ProviderError("x", provider="p", phase="local", status=400))


def test_status_errors_go_by_the_codes() -> None:
    assert STEADY.is_retryable(status_error(429))
    assert not STEADY.is_retryable(status_error(400, retryable=True))
    assert not STEADY.is_retryable(ReplyTooLarge("big", provider="p", phase="body"))


def test_should_retry_counts_attempts_inclusively() -> None:
    policy = RetryPolicy(max_retries=2)
    err = status_error(503)
    assert policy.should_retry(err, 1) and policy.should_retry(err, 2)
    assert not policy.should_retry(err, 3)
    assert not policy.should_retry(status_error(400), 1)
    assert not policy.should_retry(ReplyTooLarge("big", provider="p", status=200), 1)
    # a status outside the status phase: the error's own verdict
    body_err = ProviderError("x", provider="p", status=200, phase="body", retryable=True)
    assert policy.should_retry(body_err, 1)

    class Flagged(Exception):
        retryable = True

    assert policy.should_retry(Flagged(), 1)
    assert not policy.should_retry(ValueError(), 1)
