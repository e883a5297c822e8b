"""Model exchanges that ride with their run's next write: one transaction per step.

A workflow step that calls a model makes two writes: the reply as soon as it arrives,
then the step's checkpoint delta. Each write is a trip to the store (on SQLite, two
thread switches and a commit), and the reply's trip buys nothing the delta's doesn't:
nothing that follows from the reply happens before the run's next write. So
`queue_model_exchange` keeps the reply's statement here and the run's next write (a
delta, a checkpoint, a tool call's write-ahead record, a status) sends it first, in the
same transaction; a timer hands it to the store by itself if no write comes within
`FLUSH_DELAY` seconds, the run's next model call waits for it (`settle`: also
when a write that carries it is still on its way, as when a step's checkpoint and a
sibling step's model call overlap), and `close()` writes what is left.

What holds: a queued reply is committed before the run makes its next model call,
before any tool call runs (its write-ahead record carries the reply), and with the
checkpoint of the step that received it, which the step's dependents wait for; failing
all of these, within about `FLUSH_DELAY` seconds. A process killed in that window (the
reply in memory, the run doing nothing else that is stored) loses the reply, and a
resume asks the model again, as one killed while the reply's own write was on its way
always could. A queued write that
fails is raised by the write that carried it, or, if the timer sent it, by the run's
next call to the store (or by `close()`): never swallowed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from agentloom.store._base import RunNotFound

Statement = tuple[str, Sequence[Any]]
Rows = list[tuple[Any, ...]]

FLUSH_DELAY = 0.005
"""Seconds a queued write waits for its run's next write before it is sent alone."""


class PendingWrites:
    """Per run, the queued statements (each returns a row when its run exists)."""

    def __init__(self, send: Callable[[list[Statement]], Awaitable[list[Rows]]],
                 *, delay: float = FLUSH_DELAY) -> None:
        self._send = send
        self._delay = delay
        self._queued: dict[str, list[Statement]] = {}
        self._failed: dict[str, BaseException] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._timer_loop: asyncio.AbstractEventLoop | None = None
        self._flushes: set[asyncio.Task[None]] = set()
        self._carrying: dict[str, int] = {}
        """Run -> how many of its writes on their way carry statements `take` gave them."""
        self._waiting: dict[str, list[asyncio.Future[None]]] = {}
        """Run -> `settle` calls waiting for those writes (made only when one waits)."""

    def add(self, run_id: str, statement: Statement) -> None:
        queued = self._queued.get(run_id)
        if queued is None:
            self._queued[run_id] = [statement]
        else:
            queued.append(statement)
        loop = asyncio.get_running_loop()
        if self._timer is None or self._timer_loop is not loop:  # a store outlives loops
            self._timer, self._timer_loop = loop.call_later(self._delay, self._due), loop

    def has(self, run_id: str) -> bool:
        return run_id in self._queued

    def take(self, run_id: str) -> list[Statement]:
        """The run's queued statements, for its next write to send first. Raises the
        failure of a queued write the timer sent, if there was one."""
        failed = self._failed.pop(run_id, None)
        if failed is not None:
            self._queued.pop(run_id, None)
            raise failed
        return self._queued.pop(run_id, None) or []

    def carrying(self, run_id: str) -> None:
        """A write carrying what `take` gave it is on its way: `settle` waits for it
        (call `carried` when it is done, whatever the outcome). A count per run, not a
        future per write."""
        self._carrying[run_id] = self._carrying.get(run_id, 0) + 1

    def carried(self, run_id: str) -> None:
        left = self._carrying.pop(run_id, 1) - 1
        if left > 0:
            self._carrying[run_id] = left
            return
        for waiter in self._waiting.pop(run_id, ()):
            if not waiter.done():
                waiter.set_result(None)

    def _due(self) -> None:
        self._timer = None
        if self._queued:
            task = asyncio.get_running_loop().create_task(self.flush())
            self._flushes.add(task)
            task.add_done_callback(self._flushes.discard)

    async def flush(self, run_id: str | None = None) -> None:
        """Send the queued statements (of `run_id`, or of every run) now; a failure is
        kept for the run's next call (`take`)."""
        runs = [run_id] if run_id is not None else list(self._queued)
        batch: list[tuple[str, Statement]] = []
        for rid in runs:
            batch.extend((rid, s) for s in self._queued.pop(rid, ()))
        if not batch:
            return
        try:
            results = await self._send([s for _, s in batch])
        except Exception as exc:
            for rid, _ in batch:
                self._failed.setdefault(rid, exc)
            return
        for (rid, _), rows in zip(batch, results, strict=True):
            if not rows:
                self._failed.setdefault(rid, RunNotFound(rid))

    async def settle(self, run_id: str) -> None:
        """The run's queued statements written (or on their way from the timer, waited
        for); raises a failure of any of them."""
        if not (self._flushes or run_id in self._queued or run_id in self._failed
                or run_id in self._carrying):
            return  # the common case: a step's reply went with its checkpoint
        if run_id in self._carrying:  # taken by a write still on its way: stored when it is
            waiter = asyncio.get_running_loop().create_future()
            self._waiting.setdefault(run_id, []).append(waiter)
            await waiter
        if self._flushes:
            await asyncio.gather(*self._flushes, return_exceptions=True)
        await self.flush(run_id)
        self.take(run_id)

    async def close(self) -> None:
        """Write what is queued; raise the first failure no later call reported."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._flushes:
            await asyncio.gather(*self._flushes, return_exceptions=True)
        await self.flush()
        failed = list(self._failed.values())
        self._failed.clear()
        if failed:
            raise failed[0]
