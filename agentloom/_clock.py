"""Time as a seam. Retry backoff, deadlines and rate limits read `Clock`, so tests swap in
`agentloom.testing.FakeClock` and a 60-second backoff costs nothing."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Monotonic seconds."""
        ...

    def wall(self) -> float:
        """Seconds since the epoch (for Retry-After dates and timestamps)."""
        ...

    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    __slots__ = ()

    def now(self) -> float:
        return time.monotonic()

    def wall(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        if seconds > 0:
            await asyncio.sleep(seconds)


SYSTEM_CLOCK = SystemClock()


def reader(clock: Clock) -> Callable[[], float]:
    """`clock.now`, or on the system clock the C function it calls: a read through our
    method costs about ten times the read itself, and a run reads the clock per call."""
    return time.monotonic if type(clock) is SystemClock else clock.now

