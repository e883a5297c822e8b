"""A step's `retry` block as the one `agentloom.routing.RetryPolicy`.

The engine re-runs a whole step with it (`should_retry`, `delay`: attributes, never
messages): a `ProviderError` by its status or failure phase, any other error by its
`.retryable` (an attempt's timeout is retryable; template, structured-output and
configuration errors are not). The step's wait before retry n (from 0) is
`backoff_base ** n` seconds, capped by `backoff_max`, jittered; a longer `Retry-After`
is waited out up to `STEP_MAX_RETRY_AFTER`, and a server asking for more is not retried:
the step fails at once, where it slept as long as it was told (`Retry-After: 1000000000`
stalled the run for decades).
"""

from __future__ import annotations

from typing import Any

from agentloom.routing import RetryPolicy
from agentloom.workflow.schema.steps import DEFAULT_RETRYABLE_STATUS

DEFAULT_STEP_RETRIES = 3
STEP_MAX_RETRY_AFTER = 600.0
"""The longest `Retry-After` a step's retry waits out (the provider router waits 60 s at
most, then moves on; a step that failed so outlasts it, up to ten minutes)."""


def step_policy(retry: Any, default_retries: int | None, *, retries: bool = True
                ) -> RetryPolicy:
    """The policy of a step's `retry` block (None: the defaults), with `default_retries`
    (`config.max_retries`) when the block names none; `retries=False` (a router) makes
    one attempt."""
    max_retries = (retry.max_retries if retry is not None and retry.max_retries is not None
                   else default_retries)
    if not retries:
        max_retries = 0
    return RetryPolicy(
        max_retries=DEFAULT_STEP_RETRIES if max_retries is None else max_retries,
        # routing waits backoff_base * multiplier**(n - 1): the step's base**(n - 1)
        backoff_base=1.0,
        backoff_multiplier=retry.backoff_base if retry is not None else 2.0,
        backoff_max=retry.backoff_max if retry is not None else 60.0,
        jitter=0.25 if retry is None or retry.jitter is True else float(retry.jitter or 0),
        retryable_status_codes=frozenset(retry.retryable_status_codes) if retry is not None
        else frozenset(DEFAULT_RETRYABLE_STATUS),
        max_retry_after=STEP_MAX_RETRY_AFTER,
    )
