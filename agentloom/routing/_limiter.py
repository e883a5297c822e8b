"""Requests-per-minute and tokens-per-minute limits per provider, off unless configured.

Two token buckets, each holding a minute's worth and refilling continuously. A caller
that finds either bucket short waits (through the injected clock) until both can pay;
waiters are served in arrival order. A TPM charge is an estimate made before the call;
`settle()` refunds what the call did not use. Nothing is limited by default: a fixed
default limit turns a 70-way fan-out into a 10-second wait for no reason.
"""

from __future__ import annotations

import asyncio
import math

from agentloom._clock import SYSTEM_CLOCK, Clock
from agentloom._record import FrozenRecord, frozen_record, set_field


@frozen_record
class RateLimit(FrozenRecord):
    """RateLimit(rpm=500)                 # requests per minute
    RateLimit(rpm=500, tpm=200_000)    # and tokens per minute (prompt estimate + max_tokens)"""

    rpm: float | None = None
    tpm: float | None = None

    def __init__(self, *, rpm: float | None = None, tpm: float | None = None) -> None:
        set_field(self, "rpm", rpm)
        set_field(self, "tpm", tpm)
        self.__post_init__()

    def __post_init__(self) -> None:
        for name in ("rpm", "tpm"):
            value = getattr(self, name)
            # At least one a minute: a bucket holding less than one request never lets
            # a call through (rpm=0.5 waited a minute at a time, for ever); NaN compares
            # false with every level, so it limited nothing.
            if value is not None and (type(value) not in (int, float)
                                      or not 1 <= value < math.inf):
                raise ValueError(
                    f"RateLimit.{name} must be a finite number >= 1 (per minute) or None, "
                    f"got {value!r}"
                )

    @property
    def enabled(self) -> bool:
        return self.rpm is not None or self.tpm is not None


class _Bucket:
    __slots__ = ("capacity", "level", "rate", "stamp")

    def __init__(self, per_minute: float, now: float) -> None:
        self.capacity = float(per_minute)
        self.rate = per_minute / 60.0
        self.level = self.capacity
        self.stamp = now

    def refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now

    def wait_for(self, amount: float) -> float:
        return 0.0 if self.level >= amount else (amount - self.level) / self.rate


class RateLimiter:
    """One provider's limiter. `await acquire(tokens)` before a call returns the seconds
    it waited."""

    def __init__(self, limit: RateLimit, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.limit = limit
        self._clock = clock
        now = clock.now()
        self._requests = _Bucket(limit.rpm, now) if limit.rpm is not None else None
        self._tokens = _Bucket(limit.tpm, now) if limit.tpm is not None else None
        self._lock: asyncio.Lock | None = None

    async def acquire(self, tokens: int = 0) -> float:
        if self._lock is None:
            self._lock = asyncio.Lock()
        waited = 0.0
        async with self._lock:  # FIFO: a big request is not starved by small ones
            while True:
                now = self._clock.now()
                wait = 0.0
                need_tokens = 0.0
                if self._requests is not None:
                    self._requests.refill(now)
                    wait = max(wait, self._requests.wait_for(1))
                if self._tokens is not None:
                    self._tokens.refill(now)
                    need_tokens = min(float(tokens), self._tokens.capacity)
                    wait = max(wait, self._tokens.wait_for(need_tokens))
                if wait <= 0:
                    if self._requests is not None:
                        self._requests.level -= 1
                    if self._tokens is not None:
                        self._tokens.level -= need_tokens
                    return waited
                await self._clock.sleep(wait)
                waited += wait

    def settle(self, charged: int, actual: int | None) -> None:
        """Refund the part of a TPM charge the call did not use (no refund if unknown)."""
        if self._tokens is None or actual is None or actual >= charged:
            return
        self._tokens.refill(self._clock.now())
        self._tokens.level = min(self._tokens.capacity, self._tokens.level + charged - actual)


class Limiters:
    """The limiters of one runtime, by provider name; a provider with no limit gets None."""

    def __init__(
        self, limits: dict[str, RateLimit] | None = None, *, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        self._clock = clock
        self._limits = {k: v for k, v in (limits or {}).items() if v.enabled}
        self._by_name: dict[str, RateLimiter] = {}

    def set(self, provider: str, limit: RateLimit) -> bool:
        """Limit `provider`; False when it had this limit already. Its limiter is kept
        then, with what it counted: every run of a file sets its limits, and a new
        limiter per run would give each run (each of a batch's, each workflow function
        call) a full minute's allowance of its own."""
        current = self._limits.get(provider)  # only enabled limits are kept
        if current == limit or (current is None and not limit.enabled):
            return False
        self._by_name.pop(provider, None)
        if limit.enabled:
            self._limits[provider] = limit
        else:
            self._limits.pop(provider, None)
        return True

    def get(self, provider: str) -> RateLimiter | None:
        limit = self._limits.get(provider)
        if limit is None:
            return None
        limiter = self._by_name.get(provider)
        if limiter is None:
            limiter = self._by_name[provider] = RateLimiter(limit, clock=self._clock)
        return limiter
