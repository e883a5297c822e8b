"""A deadline as a scope: work inside it is cancelled when the clock reaches `at`.

Like trio's `fail_after`: a watcher task sleeps on the injected clock until the deadline
and cancels the task that entered the scope; the scope turns that cancellation (and only
that one) into `DeadlineExceeded`. Work in flight is cancelled, not waited for, so a run
ends within a loop tick of its deadline. With a `FakeClock` the wait costs no real time.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from agentloom._clock import Clock
from agentloom.errors import DeadlineExceeded


@asynccontextmanager
async def deadline_scope(
    clock: Clock, at: float | None, *, scope: str = "run"
) -> AsyncIterator[None]:
    """Run the body until `clock.now()` reaches `at` (None: no deadline).

    async with deadline_scope(clock, clock.now() + 30):
        await run_steps()            # DeadlineExceeded(scope="run") after 30 s
    """
    if at is None:
        yield
        return
    task = asyncio.current_task()
    if task is None:  # pragma: no cover - always inside a task under asyncio
        raise RuntimeError("deadline_scope needs a running task")
    fired = False

    async def watch() -> None:
        nonlocal fired
        delay = at - clock.now()
        if delay > 0:
            await clock.sleep(delay)
        fired = True
        task.cancel()

    watcher = asyncio.get_running_loop().create_task(watch())
    try:
        yield
        if fired:
            # The body swallowed our cancellation; the deadline still passed.
            task.uncancel()
            raise DeadlineExceeded(f"{scope} deadline passed", scope=scope)
    except asyncio.CancelledError:
        if fired and task.uncancel() == 0:
            raise DeadlineExceeded(f"{scope} deadline passed", scope=scope) from None
        raise
    finally:
        watcher.cancel()
