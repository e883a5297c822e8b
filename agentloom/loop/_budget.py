"""Budgets and watchers of one conversation: the deadline scope, budget warnings and
stall detection.

The deadline is absolute on the run's `Clock`. It is enforced two ways: checked at every
turn boundary (so a fake clock that jumps is seen at once) and as a `fail_after`-style
scope around the whole loop, which cancels the model call or tool batch in flight when
real time runs out. Warnings and stall detection only report; they never change what the
loop does.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from agentloom._clock import Clock
from agentloom.errors import LoopBudgetExceeded


class Deadline:
    """An absolute deadline on `clock`, with the total it started from (for warnings)."""

    __slots__ = ("at", "clock", "started", "total")

    def __init__(self, clock: Clock, at: float, started: float) -> None:
        self.clock = clock
        self.at = at
        self.started = started
        self.total = max(0.0, at - started)

    def check(self) -> None:
        now = self.clock.now()
        if now >= self.at:
            raise LoopBudgetExceeded("deadline", round(self.total, 6),
                                     round(now - self.started, 6))

    @asynccontextmanager
    async def scope(self) -> AsyncIterator[None]:
        """Cancel whatever runs inside when the deadline passes; raise LoopBudgetExceeded.

        A watcher task sleeps on the run's clock and cancels this task, so a fake clock
        (which jumps when every task waits) exercises the same path as real time."""
        self.check()
        host = asyncio.current_task()
        assert host is not None
        fired = False

        async def watch() -> None:
            nonlocal fired
            await self.clock.sleep(self.at - self.clock.now())
            fired = True
            host.cancel()

        watcher = asyncio.create_task(watch())
        try:
            yield
        except asyncio.CancelledError as exc:
            # Only our own cancellation becomes a budget error; one from outside (the
            # caller cancelled the run) stays a cancellation.
            if fired and host.uncancel() == 0:
                raise LoopBudgetExceeded(
                    "deadline", round(self.total, 6),
                    round(self.clock.now() - self.started, 6)) from exc
            raise
        else:
            if fired:
                # The work finished in the same tick the deadline passed: keep its result
                # and absorb the cancellation that was requested but not yet delivered.
                try:
                    await asyncio.sleep(0)
                except asyncio.CancelledError:
                    host.uncancel()
        finally:
            watcher.cancel()


@asynccontextmanager
async def no_deadline() -> AsyncIterator[None]:
    yield


class BudgetWarnings:
    """Fires `emit(kind, used, limit)` once per (kind, fraction) as a budget is used up."""

    __slots__ = ("_emit", "_fired", "_fractions")

    def __init__(self, fractions: tuple[float, ...],
                 emit: Callable[[str, float, float], None]) -> None:
        self._fractions = fractions
        self._emit = emit
        self._fired: set[tuple[str, float]] = set()

    def check(self, kind: str, used: float, limit: float | None) -> None:
        if not self._fractions or limit is None or limit <= 0:
            return
        for f in self._fractions:
            key = (kind, f)
            if key not in self._fired and used >= f * limit:
                self._fired.add(key)
                self._emit(kind, used, limit)


class StallDetector:
    """Counts identical tool calls by a hash of (name, canonical arguments).

    Only digests and counts are kept, so neither arguments nor their hash ever leave this
    object; `on_stall(name, repeats)` fires once per conversation at the threshold."""

    __slots__ = ("_counts", "_emit", "_fired", "_threshold", "max_repeated")

    def __init__(self, threshold: int | None, emit: Callable[[str, int], None]) -> None:
        self._threshold = threshold
        self._emit = emit
        self._counts: dict[bytes, int] = {}
        self._fired = False
        self.max_repeated = 0

    @property
    def stalled(self) -> bool:
        return self._threshold is not None and self.max_repeated >= self._threshold

    def record(self, name: str, arguments: str) -> None:
        key = _digest(name, arguments)
        count = self._counts.get(key, 0) + 1
        self._counts[key] = count
        self.max_repeated = max(self.max_repeated, count)
        if self._threshold is not None and count >= self._threshold and not self._fired:
            self._fired = True
            self._emit(name, count)


def _digest(name: str, arguments: str) -> bytes:
    try:
        canonical = json.dumps(json.loads(arguments), sort_keys=True, separators=(",", ":"))
    except ValueError:
        canonical = arguments.strip()
    return hashlib.blake2b(f"{name}\0{canonical}".encode(), digest_size=16).digest()
