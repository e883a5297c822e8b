"""Profiles, fallback entries and the config parsers: good input in, clear errors out."""

from __future__ import annotations

from decimal import Decimal

import pytest

from agentloom.errors import ConfigError
from agentloom.routing import (
    Profile,
    RateLimit,
    get_profile,
    parse_breaker,
    parse_budget,
    parse_fallback,
    parse_profiles,
    parse_rate_limits,
    parse_retry,
)

KNOWN = {"openai", "anthropic", "gemini", "ollama", "local"}


def test_full_profile() -> None:
    profile = Profile.from_dict(
        "gpt5_mini",
        {
            "provider": "openai",
            "model": "gpt-5-mini",
            "headers": {"x-team": "search"},
            "params": {"reasoning_effort": "low"},
            "pricing": {"input": 0.25, "output": 2.0},
            "max_tokens": 2000,
            "retries": 4,
            "max_tools": 8,
            "tool_error_prompt": "Fix the arguments.",
            "timeout": 60,
            "fallback": [
                {"provider": "anthropic", "model": "claude-haiku-4-5", "retries": 1},
                "gemini-2.5-flash",
            ],
        },
        known_providers=KNOWN,
    )
    assert profile.model == "gpt-5-mini" and profile.provider == "openai"
    assert profile.retry is not None and profile.retry.max_retries == 4
    assert profile.pricing is not None and profile.pricing.output == Decimal("2.0")
    assert profile.max_tools == 8 and profile.timeout == 60.0
    assert [(f.provider, f.model) for f in profile.fallback] == [
        ("anthropic", "claude-haiku-4-5"),
        (None, "gemini-2.5-flash"),
    ]
    assert profile.fallback[0].retry is not None and profile.fallback[0].retry.max_retries == 1


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"provider": "opnai"}, "unknown provider 'opnai'"),
        ({"fallback": [{"provider": "antropic", "model": "x"}]}, "fallback[0].provider"),
        ({"fallback": [{"provider": "anthropic"}]}, "needs a model"),
        ({"fallback": "claude"}, "expected a list"),
        ({"modle": "x"}, "did you mean 'model'"),
        ({"max_tokens": -5}, "max_tokens"),
        ({"retries": -1}, "profiles.p.retries"),
        ({"retry": {"max_retries": -1}}, "profiles.p.retry.max_retries"),
        ({"retry": {"max_retry_after": "soon"}}, "max_retry_after"),
        ({"retry": {"max_retry_after": -1}}, "max_retry_after"),
        ({"retry": {"retryable_status_codes": [429, "x"]}}, "retryable_status_codes"),
        ({"pricing": {"input": -1, "output": 1}}, "pricing"),
        ({"headers": {"x": 1}}, "headers"),
        ({"timeout": 0}, "timeout"),
    ],
)
def test_bad_profiles_name_the_field(data: dict[str, object], needle: str) -> None:
    with pytest.raises(ConfigError) as info:
        Profile.from_dict("p", data, known_providers=KNOWN)
    assert needle in str(info.value)
    assert "profiles.p" in str(info.value)


def test_profiles_map_and_lookup() -> None:
    profiles = parse_profiles({"fast": {"model": "gpt-4o-mini"}, "deep": {"model": "o3"}})
    assert get_profile(profiles, "fast").model == "gpt-4o-mini"
    with pytest.raises(ConfigError, match=r"unknown profile 'slow'.*deep, fast"):
        get_profile(profiles, "slow")


def test_profile_with_base_url_may_name_a_new_provider() -> None:
    p = Profile.from_dict(
        "mine",
        {"provider": "my_vllm", "base_url": "http://127.0.0.1:9/v1", "model": "llama"},
        known_providers=KNOWN,
    )
    assert p.base_url == "http://127.0.0.1:9/v1"


def test_parse_fallback_retry_breaker_limits_budget() -> None:
    entries = parse_fallback([{"provider": "openai", "model": "gpt-4o"}], known_providers=KNOWN)
    assert entries[0].model == "gpt-4o"
    policy = parse_retry({"max_retries": 0, "retryable_status_codes": [503]})
    assert policy is not None and policy.max_retries == 0
    assert policy.retryable_status_codes == frozenset({503})
    assert parse_retry(None) is None
    breaker = parse_breaker({"failure_threshold": 3, "recovery_seconds": 10})
    assert breaker is not None and breaker.failure_threshold == 3
    assert parse_rate_limits({"openai": {"rpm": 500}}) == {"openai": RateLimit(rpm=500)}
    assert parse_budget("0.25") == Decimal("0.25")
    with pytest.raises(ConfigError, match="budget_usd"):
        parse_budget(-1)
    with pytest.raises(ConfigError, match=r"rate_limits\.openai\.rpm"):
        parse_rate_limits({"openai": {"rpm": 0}})
    with pytest.raises(ConfigError, match="did you mean 'failure_threshold'"):
        parse_breaker({"failure_treshold": 3})
