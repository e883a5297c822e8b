"""When to try a call again, and how long to wait first.

One `RetryPolicy` decides for every provider call and every workflow step: retry a status in
`retryable_status_codes` (429, 500, 502, 503, 504 by default) and failures that got no
status (a dropped connection, a read timeout, a garbled body); fail at once on anything
else (400, 401, 403, 404, a request no provider can take). Waits grow exponentially with
jitter, and a server's `Retry-After` (seconds or an HTTP date) is honoured up to
`max_retry_after`: a server asking for longer is not waited for, the call moves on.

The router asks `is_retryable` and `wait_before_retry` per attempt of one candidate; a
caller that retries a whole operation (the workflow engine's step retries) asks
`should_retry` and `delay`, which take any exception and read only its attributes.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import field

from agentloom._record import FrozenRecord, frozen_record, set_field
from agentloom.errors import ProviderError, ReplyTooLarge

DEFAULT_RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})
_NO_STATUS_PHASES = frozenset({"connect", "tls", "proxy", "send", "read", "body"})


@frozen_record
class RetryPolicy(FrozenRecord):
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

    def __init__(
        self, *, max_retries: int = 2, backoff_base: float = 0.5, backoff_multiplier: float = 2.0,
        backoff_max: float = 30.0, jitter: float = 0.25,
        retryable_status_codes: frozenset[int] = DEFAULT_RETRYABLE_STATUS,
        max_retry_after: float = 60.0,
    ) -> None:
        set_field(self, "max_retries", max_retries)
        set_field(self, "backoff_base", backoff_base)
        set_field(self, "backoff_multiplier", backoff_multiplier)
        set_field(self, "backoff_max", backoff_max)
        set_field(self, "jitter", jitter)
        set_field(self, "retryable_status_codes", retryable_status_codes)
        set_field(self, "max_retry_after", max_retry_after)
        self.__post_init__()

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")
        for name in ("backoff_base", "backoff_max", "max_retry_after"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or value < 0 or value != value:
                raise ValueError(f"{name} must be a number >= 0, got {value!r}")
        if not self.backoff_multiplier >= 1:  # NaN too: it made every wait 0
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
        try:
            growth = float(self.backoff_multiplier) ** max(0, retry_number - 1)
        except OverflowError:  # past any float (2.0 ** 1024), so far past backoff_max
            growth = math.inf
        base = min(self.backoff_base * growth, self.backoff_max) if self.backoff_base else 0.0
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


    def should_retry(self, error: BaseException, attempt: int) -> bool:
        """Whether to try a whole operation again after `error`; `attempt` is the number
        of attempts made so far (1 after the first). An HTTP status goes by the policy's
        codes; anything else by the error's own `.retryable`, which whoever raised it
        decided (the router's verdict on its last candidate, a step attempt's timeout:
        yes; an oversized reply, a template or configuration error: no). An error whose
        server asked to wait longer than `max_retry_after` is not tried again."""
        if attempt > self.max_retries:
            return False
        if isinstance(error, ReplyTooLarge):
            return False
        asked = getattr(error, "retry_after", None)
        if isinstance(asked, int | float) and asked > self.max_retry_after:
            return False  # not worth waiting for, as `wait_before_retry` says of a call
        if isinstance(error, ProviderError) and error.status is not None and (
                error.phase == "status"):
            return error.status in self.retryable_status_codes
        return bool(getattr(error, "retryable", False))

    def delay(self, attempt: int, error: BaseException | None = None,
              rng: random.Random | None = None, *, now_wall: float | None = None) -> float:
        """The wait before attempt `attempt + 1`: the jittered backoff, or the server's
        `Retry-After` when that is longer, bounded by `max_retry_after` (a hostile or
        confused server cannot stall the caller). `now_wall` reads an HTTP-date header
        against an injected clock."""
        wait = self.backoff(attempt, rng)
        asked: float | None = None
        if isinstance(error, ProviderError) and now_wall is not None:
            asked = retry_after_of(error, now_wall=now_wall)
        else:
            value = getattr(error, "retry_after", None)
            asked = float(value) if isinstance(value, int | float) else None
        if asked is not None and asked > wait:
            wait = min(asked, self.max_retry_after)
        return max(0.0, wait)


NO_RETRY = RetryPolicy(max_retries=0)
"""One attempt per candidate: for callers that retry at a higher level themselves."""


def parse_retry_after(value: str | None, *, now_wall: float) -> float | None:
    """One `Retry-After` value as seconds from now: a number of seconds or an HTTP date
    (read against `now_wall`, so an injected clock measures it). Garbage, negative, NaN,
    infinite or a date without a zone gives None (the caller falls back to its backoff)."""
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
    if when is None or when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - now_wall)


def retry_after_seconds(headers: Mapping[str, str] | None, *, now_wall: float) -> float | None:
    """The wait a response asks for: OpenAI's finer `retry-after-ms` when it reads, else
    `Retry-After`; None when neither does. Header keys are lowercased."""
    if not headers:
        return None
    millis = headers.get("retry-after-ms")
    if millis is not None:
        parsed_ms = parse_retry_after(millis, now_wall=now_wall)
        if parsed_ms is not None:
            return parsed_ms / 1000.0
    return parse_retry_after(headers.get("retry-after"), now_wall=now_wall)


def retry_after_of(error: ProviderError, *, now_wall: float) -> float | None:
    """The wait a failed call asked for: its headers read against our clock (so an HTTP
    date is measured from the injected wall time), else what the client recorded."""
    parsed = retry_after_seconds(error.headers, now_wall=now_wall)
    return parsed if parsed is not None else error.retry_after
