"""Which step failures are worth another attempt, and how long to wait first.

Retry code reads attributes, never messages: a `ProviderError` that failed on its status
is retried when the status is in the step's `retryable_status_codes`; any other error when
its `.retryable` is True (a dropped connection, an unreadable 200 body, a step attempt's
timeout). Template, structured-output and configuration errors are never retried.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from agentloom.errors import ProviderError
from agentloom.workflow.schema.steps import DEFAULT_RETRYABLE_STATUS


@dataclass(slots=True, frozen=True, kw_only=True)
class RetryPolicy:
    max_retries: int = 3
    backoff_base: float = 2.0
    backoff_max: float = 60.0
    jitter: float = 0.25
    retryable_status_codes: frozenset[int] = frozenset(DEFAULT_RETRYABLE_STATUS)

    def should_retry(self, exc: BaseException, attempt: int) -> bool:
        """`attempt` is the number of attempts made so far (1 after the first)."""
        if attempt > self.max_retries:
            return False
        if isinstance(exc, ProviderError) and exc.status is not None and exc.phase == "status":
            return exc.status in self.retryable_status_codes
        return bool(getattr(exc, "retryable", False))

    def delay(self, attempt: int, exc: BaseException, rng: random.Random) -> float:
        wait = min(self.backoff_max, self.backoff_base ** (attempt - 1))
        if self.jitter:
            wait *= 1 + rng.uniform(-self.jitter, self.jitter)
        retry_after = getattr(exc, "retry_after", None)
        if isinstance(retry_after, int | float) and retry_after > wait:
            wait = float(retry_after)
        return max(0.0, wait)
