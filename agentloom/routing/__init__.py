"""Routing: from one model call to a result, across retries, fallbacks and limits.

Job: a request in, a response out, reliably: candidates and fallbacks, the one retry
policy (with Retry-After), breaker, limiter, budgets, and the runtime that resolves a
model name once and owns the transport. May import: types, `http`, `providers`,
`pricing` (tests/test_layers.py holds the rule).

`Router` is the `ModelClient` that tries `Candidate`s in order under a `RetryPolicy`,
each endpoint guarded by a `CircuitBreaker` and an optional `RateLimiter`, every call
checked against a shared `RunBudget`. `Profile`/`FallbackEntry` are the configuration
objects a workflow's `profiles:` and `fallback:` parse into. `ProviderClient` is one
attempt at one endpoint; `WrapperClient` is the base of any client that wraps another.
The `Runtime` (agentloom.routing.runtime) assembles these from provider names.
"""

from __future__ import annotations

from agentloom.routing._breaker import Breakers as Breakers
from agentloom.routing._breaker import BreakerSettings as BreakerSettings
from agentloom.routing._breaker import CircuitBreaker as CircuitBreaker
from agentloom.routing._budget import Reservation as Reservation
from agentloom.routing._budget import RunBudget as RunBudget
from agentloom.routing._budget import estimate_prompt_tokens as estimate_prompt_tokens
from agentloom.routing._candidate import CallFailed as CallFailed
from agentloom.routing._candidate import Candidate as Candidate
from agentloom.routing._candidate import CheckHook as CheckHook
from agentloom.routing._client import ProviderClient as ProviderClient
from agentloom.routing._limiter import Limiters as Limiters
from agentloom.routing._limiter import RateLimit as RateLimit
from agentloom.routing._limiter import RateLimiter as RateLimiter
from agentloom.routing._profiles import FallbackEntry as FallbackEntry
from agentloom.routing._profiles import Profile as Profile
from agentloom.routing._profiles import get_profile as get_profile
from agentloom.routing._profiles import parse_breaker as parse_breaker
from agentloom.routing._profiles import parse_budget as parse_budget
from agentloom.routing._profiles import parse_fallback as parse_fallback
from agentloom.routing._profiles import parse_profiles as parse_profiles
from agentloom.routing._profiles import parse_rate_limits as parse_rate_limits
from agentloom.routing._profiles import parse_retry as parse_retry
from agentloom.routing._providers import endpoint_from_config as endpoint_from_config
from agentloom.routing._providers import profile_endpoint as profile_endpoint
from agentloom.routing._retry import DEFAULT_RETRYABLE_STATUS as DEFAULT_RETRYABLE_STATUS
from agentloom.routing._retry import NO_RETRY as NO_RETRY
from agentloom.routing._retry import RetryPolicy as RetryPolicy
from agentloom.routing._retry import parse_retry_after as parse_retry_after
from agentloom.routing._retry import retry_after_of as retry_after_of
from agentloom.routing._retry import retry_after_seconds as retry_after_seconds
from agentloom.routing._router import Router as Router
from agentloom.routing._wrapper import WrapperClient as WrapperClient

__all__ = [
    "DEFAULT_RETRYABLE_STATUS",
    "NO_RETRY",
    "BreakerSettings",
    "Breakers",
    "CallFailed",
    "Candidate",
    "CheckHook",
    "CircuitBreaker",
    "FallbackEntry",
    "Limiters",
    "Profile",
    "ProviderClient",
    "RateLimit",
    "RateLimiter",
    "Reservation",
    "RetryPolicy",
    "Router",
    "RunBudget",
    "WrapperClient",
    "endpoint_from_config",
    "estimate_prompt_tokens",
    "get_profile",
    "parse_breaker",
    "parse_budget",
    "parse_fallback",
    "parse_profiles",
    "parse_rate_limits",
    "parse_retry",
    "parse_retry_after",
    "profile_endpoint",
    "retry_after_of",
    "retry_after_seconds",
]
