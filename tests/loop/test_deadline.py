"""`Deadline.scope()`, the one deadline helper, cancels work in flight at the deadline.

These ran against routing's former `deadline_scope`; they hold for `Deadline` built to
raise the run's `DeadlineExceeded`, as the workflow engine uses it.
"""

from __future__ import annotations

import asyncio
from contextlib import AbstractAsyncContextManager

import pytest

from agentloom._clock import Clock
from agentloom.errors import DeadlineExceeded
from agentloom.loop import Deadline, no_deadline
from agentloom.testing import FakeClock


def deadline_scope(clock: Clock, at: float | None) -> AbstractAsyncContextManager[None]:
    if at is None:
        return no_deadline()
    deadline = Deadline(clock, at, clock.now(), error=lambda d: DeadlineExceeded(scope="run"))
    return deadline.scope()


async def test_deadline_cancels_work_in_flight_on_the_fake_clock() -> None:
    clock = FakeClock()
    finished = False
    with pytest.raises(DeadlineExceeded) as info:
        async with deadline_scope(clock, clock.now() + 30):
            await clock.sleep(3600)
            finished = True
    assert not finished
    assert info.value.scope == "run" and not info.value.retryable
    assert clock.now() - 1000.0 == 30


async def test_body_finishing_in_time_is_untouched() -> None:
    clock = FakeClock()
    async with deadline_scope(clock, clock.now() + 30):
        await clock.sleep(5)
    await asyncio.sleep(0)  # no stray cancellation arrives later
    assert clock.now() - 1000.0 == 5


async def test_no_deadline() -> None:
    async with deadline_scope(FakeClock(), None):
        await asyncio.sleep(0)


async def test_outside_cancellation_is_not_turned_into_a_deadline() -> None:
    clock = FakeClock()

    async def body() -> None:
        async with deadline_scope(clock, clock.now() + 1000):
            await asyncio.Event().wait()

    task = asyncio.create_task(body())
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_work_in_flight_is_cancelled_at_the_deadline_not_after_it() -> None:
    # The 100 ms promise is structural: the watcher cancels the body the moment the clock
    # reaches the deadline, whatever the body is waiting on (here a never-ending event),
    # and the body's cleanup runs before the scope raises.
    clock = FakeClock()
    deadline = clock.now() + 12.5
    cleaned_at: list[float] = []

    async def worker() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            cleaned_at.append(clock.now())

    with pytest.raises(DeadlineExceeded):
        async with deadline_scope(clock, deadline):
            await asyncio.gather(worker(), worker())
    assert cleaned_at == [deadline, deadline]


async def test_system_clock_scopes_share_one_alarm_and_each_fires_at_its_own_time() -> None:
    # On the system clock every scope of a loop hangs on one timer, set for the earliest
    # deadline: an earlier scope re-arms it, a later one is left alone when an earlier
    # one fires, and one that ended in time leaves nothing to fire. Bodies wait forever,
    # so only a deadline (or the test's own cancel) ends them: no timing is asserted.
    from agentloom._clock import SYSTEM_CLOCK

    async def body(seconds: float) -> None:
        async with deadline_scope(SYSTEM_CLOCK, SYSTEM_CLOCK.now() + seconds):
            await asyncio.Event().wait()

    async with deadline_scope(SYSTEM_CLOCK, SYSTEM_CLOCK.now() + 0.01):
        pass  # ended in time: its deadline passes below with nothing to cancel
    late = asyncio.create_task(body(600))
    await asyncio.sleep(0)
    for _ in range(2):  # the second time, after the alarm has rung once
        with pytest.raises(DeadlineExceeded):
            await body(0.02)
        assert not late.done()
    late.cancel()
    with pytest.raises(asyncio.CancelledError):
        await late
