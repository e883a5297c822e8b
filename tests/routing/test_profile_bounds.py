"""A profile's numbers are bounded as a workflow step's are.

A profile's `retries` had no ceiling where a step's `retry.max_retries` stops at 100: a
429 storm answered with `Retry-After: 0` sent as many calls as the number said (here a
hundred million). Its waits (`backoff_base`, `backoff_max`, `max_retry_after`) had none
either, nor its `timeout`. Each is now refused when the profile is read, naming the
profile and the field; the bounds are a step's (100 retries, ten minutes of waiting) and
the transport's (1800 s a call).
"""

from __future__ import annotations

from typing import Any

import pytest

from agentloom.errors import ConfigError
from agentloom.routing import RateLimit, parse_profiles, parse_rate_limits
from agentloom.transport import HttpTimeout
from agentloom.workflow.engine.retry import STEP_MAX_RETRY_AFTER
from agentloom.workflow.schema.steps import MAX_BACKOFF_SECONDS, MAX_RETRIES


def refused(body: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as info:
        parse_profiles({"fast": {"model": "m", **body}})
    return str(info.value)


@pytest.mark.parametrize(("body", "message"), [
    ({"retries": 100_000_000},
     "profiles.fast.retries: expected a whole number from 0 to 100, got 100000000"),
    ({"retries": 101}, "profiles.fast.retries: expected a whole number from 0 to 100"),
    ({"retry": {"max_retries": 101}},
     "profiles.fast.retry.max_retries: expected a whole number from 0 to 100, got 101"),
    ({"fallback": [{"model": "x", "retries": 10_000}]},
     "profiles.fast.fallback[0].retries: expected a whole number from 0 to 100"),
    ({"retry": {"backoff_base": 601}},
     "profiles.fast.retry.backoff_base: expected a number from 0 to 600, got 601"),
    ({"retry": {"backoff_max": 1e9}},
     "profiles.fast.retry.backoff_max: expected a number from 0 to 600"),
    ({"retry": {"max_retry_after": 86_400}},
     "profiles.fast.retry.max_retry_after: expected a number from 0 to 600"),
    ({"fallback": [{"model": "x", "retry": {"backoff_max": 1e9}}]},
     "profiles.fast.fallback[0].retry.backoff_max: expected a number from 0 to 600"),
    ({"retry": {"jitter": 2}}, "profiles.fast.retry.jitter: expected a number from 0 to 1"),
    ({"timeout": 1e300}, "profiles.fast.timeout: expected a number > 0 and <= 1800"),
    ({"timeout": 1801}, "profiles.fast.timeout: expected a number > 0 and <= 1800"),
])
def test_unbounded_profile_numbers_are_refused_by_profile_and_field(
        body: dict[str, Any], message: str) -> None:
    assert refused(body).startswith(message)


def test_a_profile_within_the_bounds_is_read_as_written() -> None:
    profile = parse_profiles({"fast": {
        "model": "m", "retries": 100, "timeout": 1800,
        "retry": {"backoff_base": 600, "backoff_max": 600, "max_retry_after": 600,
                  "jitter": 1, "backoff_multiplier": 1e6},
    }})["fast"]
    assert profile.timeout == 1800.0
    assert profile.retry is not None
    assert (profile.retry.max_retries, profile.retry.backoff_max,
            profile.retry.max_retry_after) == (100, 600.0, 600.0)
    # a huge multiplier is harmless: the wait it grows stops at backoff_max
    assert profile.retry.backoff(50) <= 600.0 * (1 + profile.retry.jitter)


def test_retry_max_retries_wins_over_retries_as_before() -> None:
    profile = parse_profiles({"p": {"model": "m", "retries": 5,
                                    "retry": {"max_retries": 1}}})["p"]
    assert profile.retry is not None and profile.retry.max_retries == 1


def test_a_rate_limit_under_one_request_a_minute_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"^rate_limits\.openai\.rpm: expected a number >= 1"):
        parse_rate_limits({"openai": {"rpm": 0.5}})
    assert parse_rate_limits({"openai": {"rpm": 1}}) == {"openai": RateLimit(rpm=1)}



def test_the_bounds_are_a_workflow_steps() -> None:
    # One ceiling for a step's retries and a profile's, one for their waits: the
    # schema's constants, the engine's longest Retry-After and the transport's total.
    assert MAX_BACKOFF_SECONDS == STEP_MAX_RETRY_AFTER
    fine = parse_profiles({"p": {
        "model": "m", "retries": MAX_RETRIES, "timeout": HttpTimeout().total,
        "retry": {"backoff_max": MAX_BACKOFF_SECONDS, "max_retry_after": MAX_BACKOFF_SECONDS},
    }})["p"]
    assert fine.retry is not None and fine.retry.max_retries == MAX_RETRIES
    for body in ({"retries": MAX_RETRIES + 1},
                 {"retry": {"backoff_max": MAX_BACKOFF_SECONDS + 1}},
                 {"retry": {"max_retry_after": MAX_BACKOFF_SECONDS + 1}},
                 {"timeout": (HttpTimeout().total or 0) + 1}):
        refused(body)
