"""When to try a call again, and how long to wait first.

One `RetryPolicy` decides for every provider: retry a status in
`retryable_status_codes` (429, 500, 502, 503, 504 by default) and failures that got no
status (a dropped connection, a read timeout, a garbled body); fail at once on anything
else (400, 401, 403, 404, a request no provider can take). Waits grow exponentially with
jitter, and a server's `Retry-After` (seconds or an HTTP date) is honoured up to
`max_retry_after`: a server asking for longer is not waited for, the call moves on.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from agentloom.errors import ProviderError, ReplyTooLarge

DEFAULT_RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})
_NO_STATUS_PHASES = frozenset({"connect", "tls", "proxy", "send", "read", "body"})


@dataclass(slots=True, frozen=True, kw_only=True)
class RetryPolicy:
    """How one candidate (provider + model) is retried.

    RetryPolicy()                          # 2 retries: 0.5 s, 1 s (each ±25 %)
    RetryPolicy(max_retries=0)             # one attempt (the engine re-runs steps)
    RetryPolicy(retryable_status_codes={503})
    """

    max_retries: int = 2
    """Attempts after the first one."""
    backoff_base: float = 0.5
    """Wait before the first retry, in seconds."""
    backoff_multiplier: float = 2.0
    backoff_max: float = 30.0
    jitter: float = 0.25
    """Each wait is scaled by a random factor in [1 - jitter, 1 + jitter]."""
    retryable_status_codes: frozenset[int] = field(default=DEFAULT_RETRYABLE_STATUS)
    max_retry_after: float = 60.0
    """The longest `Retry-After` honoured; a longer one ends this candidate's retries."""

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")
        for name in ("backoff_base", "backoff_max", "max_retry_after"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or value < 0 or value != value:
                raise ValueError(f"{name} must be a number >= 0, got {value!r}")
        if self.backoff_multiplier < 1:
            raise ValueError(f"backoff_multiplier must be >= 1, got {self.backoff_multiplier}")
        if not 0 <= self.jitter <= 1:
            raise ValueError(f"jitter must be between 0 and 1, got {self.jitter}")
        object.__setattr__(
            self, "retryable_status_codes", frozenset(int(c) for c in self.retryable_status_codes)
        )

    def is_retryable(self, error: ProviderError) -> bool:
        """Status errors by the policy's codes; failures without a status by their phase
        (network and body failures retry, `local` refusals never do)."""
        if isinstance(error, ReplyTooLarge):
            return False  # the same call would send the same oversized reply
        if error.status is not None and error.phase == "status":
            return error.status in self.retryable_status_codes
        if error.phase in _NO_STATUS_PHASES:
            return True
        if error.status is not None:
            return error.status in self.retryable_status_codes
        return bool(error.retryable)

    def backoff(self, retry_number: int, rng: random.Random | None = None) -> float:
        """The wait before retry `retry_number` (1 for the first retry), jittered."""
        base = self.backoff_base * self.backoff_multiplier ** max(0, retry_number - 1)
        base = min(base, self.backoff_max)
        if self.jitter:
            factor = (rng or random).uniform(1 - self.jitter, 1 + self.jitter)
            base *= factor
        return max(0.0, base)

    def wait_before_retry(
        self, retry_number: int, retry_after: float | None, rng: random.Random | None = None
    ) -> float | None:
        """Seconds to wait before the next try, or None: the server asked for more than
        `max_retry_after`, so waiting is not worth it."""
        if retry_after is not None:
            if retry_after > self.max_retry_after:
                return None
            return max(retry_after, 0.0)
        return self.backoff(retry_number, rng)


NO_RETRY = RetryPolicy(max_retries=0)
"""One attempt per candidate: for callers that retry at a higher level themselves."""


def parse_retry_after(value: str | None, *, now_wall: float) -> float | None:
    """`Retry-After` as seconds from now: a number of seconds or an HTTP date. Garbage,
    negative or NaN gives None (the caller falls back to its own backoff)."""
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        if seconds != seconds or seconds < 0 or seconds == float("inf"):
            return None
        return seconds
    from email.utils import parsedate_to_datetime  # rare path: keep import time low

    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - now_wall)


def retry_after_of(error: ProviderError, *, now_wall: float) -> float | None:
    """The wait a failed call asked for: the raw header read against our clock (so an
    HTTP date is measured from the injected wall time), else what the provider parsed."""
    headers = error.headers or {}
    millis = headers.get("retry-after-ms")  # OpenAI's finer-grained variant
    if millis is not None:
        parsed_ms = parse_retry_after(millis, now_wall=now_wall)
        if parsed_ms is not None:
            return parsed_ms / 1000.0
    raw = headers.get("retry-after")
    if raw is not None:
        parsed = parse_retry_after(raw, now_wall=now_wall)
        if parsed is not None:
            return parsed
    return error.retry_after
