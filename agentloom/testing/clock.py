"""A clock for tests in which waiting costs nothing.

Retry backoff, Retry-After, rate limits and deadlines all wait through a `Clock`. With
`FakeClock`, `sleep()` parks the caller on a timer heap; when every task is waiting (the
loop went round a few times with nothing else to do), time jumps to the earliest timer and
wakes it, like trio's `MockClock` with autojump. Concurrent sleepers therefore overlap as
they would in real time: ten tasks sleeping 1 s each advance the clock by 1 s, not 10 s.
Every sleep is recorded in `sleeps` so a test can assert the waits it expected.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools


class FakeClock:
    """`now()` starts at `start`; `wall()` is `wall_start + (now() - start)`.

        clock = FakeClock()
        await clock.sleep(30)        # returns at once; clock.now() advanced by 30
        clock.advance(5)             # move time by hand, waking due sleepers

    `autojump_threshold` is how many real seconds the loop must stay idle before time
    jumps; 0 (the default) jumps as soon as the loop has nothing ready to run. A loop
    waiting on real sockets looks idle too, so with a fake server in play a pending fake
    timer (a deadline, say) fires while the request is in flight; give a small threshold
    (e.g. 0.05) when a test needs real I/O to finish before fake time moves.
    """

    def __init__(
        self,
        *,
        start: float = 1000.0,
        wall_start: float = 1_767_225_600.0,
        autojump_threshold: float = 0.0,
    ) -> None:
        self._start = start
        self._now = start
        self._wall_start = wall_start
        self.autojump_threshold = autojump_threshold
        self.sleeps: list[float] = []
        """Every requested sleep, in seconds, in call order."""
        self._timers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()
        self._jump_pending = False

    def now(self) -> float:
        return self._now

    def wall(self) -> float:
        return self._wall_start + (self._now - self._start)

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        heapq.heappush(self._timers, (self._now + seconds, next(self._seq), future))
        self._schedule_jump(loop)
        await future

    def advance(self, seconds: float) -> None:
        """Move time forward by hand and wake every sleeper that is due."""
        if seconds < 0:
            raise ValueError("time only moves forward")
        self._now += seconds
        self._wake_due()

    # --- autojump ----------------------------------------------------------------------

    def _schedule_jump(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._jump_pending:
            return
        self._jump_pending = True
        if self.autojump_threshold > 0:
            loop.call_later(self.autojump_threshold, self._idle_check, loop, 0)
        else:
            loop.call_soon(self._idle_check, loop, 0)

    def _idle_check(self, loop: asyncio.AbstractEventLoop, rounds: int) -> None:
        # Let ready tasks run a few loop iterations first: a task that is about to sleep
        # for less must get the chance to register its timer before time jumps.
        ready = len(getattr(loop, "_ready", ()))
        if (ready and rounds < 50) or rounds < 3:
            loop.call_soon(self._idle_check, loop, rounds + 1)
            return
        self._jump_pending = False
        while self._timers and self._timers[0][2].done():
            heapq.heappop(self._timers)  # cancelled sleepers
        if not self._timers:
            return
        self._now = max(self._now, self._timers[0][0])
        self._wake_due()
        if self._timers:
            self._schedule_jump(loop)

    def _wake_due(self) -> None:
        while self._timers and self._timers[0][0] <= self._now:
            _, _, future = heapq.heappop(self._timers)
            if not future.done():
                future.set_result(None)
