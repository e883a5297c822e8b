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
import contextvars
import json
import json.encoder as _json_encoder
import threading
import weakref
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from types import TracebackType
from typing import Any

from agentloom import _jsontext
from agentloom._clock import Clock, SystemClock
from agentloom.errors import LoopBudgetExceeded


class Deadline:
    """An absolute deadline on `clock`, with the total it started from (for warnings).

    The one deadline helper of the library: the agent loop's run deadline and the
    workflow engine's run and step deadlines are all one of these.

        deadline = Deadline(clock, clock.now() + 30, clock.now())
        async with deadline.scope():        # cancels the work inside at `at`
            ...
        Deadline(clock, at, started, error=lambda d: DeadlineExceeded(scope="step"))
    """

    __slots__ = ("_error", "at", "clock", "started", "total")

    def __init__(self, clock: Clock, at: float, started: float, *,
                 error: Callable[[Deadline], Exception] | None = None) -> None:
        self.clock = clock
        self.at = at
        self.started = started
        self.total = max(0.0, at - started)
        # What an expiry raises; by default the loop's LoopBudgetExceeded("deadline").
        self._error = error

    def check(self) -> None:
        if self.clock.now() >= self.at:
            raise self.expired()

    def scope(self) -> AbstractAsyncContextManager[None]:
        """Cancel whatever runs inside when the deadline passes; raise LoopBudgetExceeded.

        On the system clock a timer handle on the event loop cancels this task: no task,
        no extra loop iterations per run. Any other clock gets a watcher task that sleeps
        on it, so a fake clock (which jumps when every task waits) cancels the same way."""
        timer = self.timer()
        return timer if timer is not None else self._watched()

    def timer(self) -> _TimerScope | None:
        """The scope on the system clock, to enter and leave without an await
        (`enter()`, `leave(exc)`); None for any other clock (use `scope()`)."""
        if type(self.clock) is not SystemClock:
            return None
        return _TimerScope(self.clock, self.at, self.started, error=self._error)

    def expired(self) -> Exception:
        """The error an expiry raises (built, not raised)."""
        if self._error is not None:
            return self._error(self)
        return LoopBudgetExceeded("deadline", round(self.total, 6),
                                  round(self.clock.now() - self.started, 6))

    @asynccontextmanager
    async def _watched(self) -> AsyncIterator[None]:
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
                raise self.expired() from exc
            raise
        else:
            if fired:
                await absorb_cancel(host)
        finally:
            watcher.cancel()


def run_deadline(clock: Clock, at: float, started: float) -> Deadline:
    """The deadline of one run: on the system clock, a deadline that is its own timer
    scope (`timer()` gives itself), so a run makes one object for it, not two; the
    scope is entered once."""
    if type(clock) is SystemClock:
        # Through its __init__ alone: no class call per run.
        scope: _TimerScope = _new(_TimerScope)
        _init_timer(scope, clock, at, started)
        return scope
    return Deadline(clock, at, started)


class _TimerScope(Deadline):
    """The deadline scope on the system clock: the event loop's alarm (one timer for
    every scope of its loop, see `_Alarm`) cancels the host task.

    Same rules as the watcher: only our own cancellation becomes LoopBudgetExceeded, and
    work that finished in the tick the deadline passed keeps its result."""

    __slots__ = ("_alarm", "_fired", "_host", "when")

    def __init__(self, clock: Clock, at: float, started: float, *,
                 error: Callable[[Deadline], Exception] | None = None) -> None:
        # Deadline's fields, set here rather than by a call of its __init__ (per run).
        self.clock = clock
        self.at = at
        self.started = started
        self.total = max(0.0, at - started)
        self._error = error
        self._fired = False
        self._alarm: _Alarm | None = None
        self._host: asyncio.Task[Any] | None = None
        self.when = 0.0
        """The deadline on the event loop's own clock."""

    def fire(self) -> None:
        self._fired = True
        assert self._host is not None
        self._host.cancel()

    async def __aenter__(self) -> None:
        self.enter()

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> bool:
        if self.leave(exc):
            await absorb_cancel(self.host())
        return False

    def timer(self) -> _TimerScope:
        return self

    def host(self) -> asyncio.Task[Any]:
        assert self._host is not None
        return self._host

    def enter(self, now: float | None = None) -> None:
        """Arm the scope for the current task (raises at once if the deadline passed);
        `now` is the clock's time if the caller has just read it."""
        left = self.at - (self.clock.now() if now is None else now)
        if left <= 0:
            raise self.expired()  # as `check()`, without a second read of the clock
        loop = asyncio.get_running_loop()
        host = self._host = asyncio.current_task(loop)
        assert host is not None
        # An asyncio loop's clock is the system clock's own (`time.monotonic`): the
        # deadline is its time already, without a second read.
        self.when = self.at if type(loop).time is _MONOTONIC_LOOP_TIME else loop.time() + left
        alarm = getattr(_ALARMS, "alarm", None)
        if alarm is None or alarm.loop() is not loop:
            alarm = _ALARMS.alarm = _Alarm(loop)
        self._alarm = alarm
        alarm.add(self)

    def leave(self, exc: BaseException | None) -> bool:
        """End the scope, the work inside having raised `exc` (None: it returned). Our
        own cancellation is raised as the budget error; True means the work returned in
        the tick the deadline passed, and the caller must `absorb_cancel(host())`."""
        assert self._alarm is not None and self._host is not None
        self._alarm.scopes.discard(self)
        if exc is None:
            return self._fired
        if isinstance(exc, asyncio.CancelledError) and self._fired and \
                self._host.uncancel() == 0:
            raise self.expired() from exc
        return False


class _Alarm:
    """One timer on an event loop for all its deadline scopes, set for the earliest.

    A timer per run cost more than the rest of the deadline, and a cancelled one stays in
    the loop's heap (for a 600 s deadline, minutes) until the loop compacts it. Here a
    scope that ends just leaves the set; the timer, when it rings, fires the scopes that
    are due and is set again for the earliest left. It is armed in a context of its own:
    its callback reads no context variable, and a run's context must not outlive it."""

    __slots__ = ("_at", "_handle", "loop", "scopes")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = weakref.ref(loop)
        self.scopes: set[_TimerScope] = set()
        self._handle: asyncio.TimerHandle | None = None
        self._at = 0.0

    def add(self, scope: _TimerScope) -> None:
        self.scopes.add(scope)
        handle = self._handle
        if handle is None or scope.when < self._at:
            if handle is not None:
                handle.cancel()
            self._arm(scope.when)

    def _arm(self, when: float) -> None:
        loop = self.loop()
        assert loop is not None
        self._at = when
        self._handle = loop.call_at(when, self._ring, context=contextvars.Context())

    def _ring(self) -> None:
        self._handle = None
        loop = self.loop()
        if loop is None or not self.scopes:
            return
        now = loop.time()
        due = [s for s in self.scopes if s.when <= now]
        for scope in due:
            self.scopes.discard(scope)
            scope.fire()
        if self.scopes:
            # A scope the loop's clock resolution rang early for is due in a tick.
            self._arm(min(s.when for s in self.scopes))


_new = object.__new__
_init_timer = _TimerScope.__init__
_MONOTONIC_LOOP_TIME = asyncio.BaseEventLoop.time
"""`loop.time()` of asyncio's loops, `time.monotonic()` (as `SystemClock.now`)."""

_ALARMS = threading.local()
"""This thread's `_Alarm`, for the loop it runs (one loop per thread at a time)."""


async def absorb_cancel(host: asyncio.Task[Any]) -> None:
    """The work finished in the same tick the deadline passed: keep its result and absorb
    the cancellation that was requested but not yet delivered."""
    try:
        await asyncio.sleep(0)
    except asyncio.CancelledError:
        host.uncancel()


class _NoDeadline:
    __slots__ = ()

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: object) -> bool:
        return False


_NO_DEADLINE = _NoDeadline()


def no_deadline() -> AbstractAsyncContextManager[None]:
    return _NO_DEADLINE


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

    Only the hashes and counts are kept, so neither arguments nor their hash ever leave
    this object; `on_stall(name, repeats)` fires once per conversation at the threshold."""

    __slots__ = ("_counts", "_emit", "_fired", "_threshold", "max_repeated")

    def __init__(self, threshold: int | None, emit: Callable[[str, int], None]) -> None:
        self._threshold = threshold
        self._emit = emit
        self._counts: dict[int, int] = {}
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


# `json.dumps(json.loads(a), sort_keys=True, separators=(",", ":"))` through the C
# encoder `JSONEncoder.encode` builds, made once and without `encode`'s two Python frames
# per call (the same text: values read from JSON are all it is given). No circular check
# (`markers=None`): a value just parsed from text can't hold itself. The arguments are the
# model's: read with their nesting bounded (`_jsontext`), so writing them back can't
# recurse too deep either.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"))
_MAKE_ENCODER: Callable[..., Callable[[Any, int], list[str]]] | None = getattr(
    _json_encoder, "c_make_encoder", None)
_C_CANONICAL = None if _MAKE_ENCODER is None else _MAKE_ENCODER(
    None, _CANONICAL.default, _json_encoder.encode_basestring_ascii, None, ":", ",", True,
    False, True)


def _canonical(value: Any) -> str:
    if _C_CANONICAL is None:  # pragma: no cover - a Python without the C codec
        return _CANONICAL.encode(value)
    return "".join(_C_CANONICAL(value, 0))


def _digest(name: str, arguments: str) -> int:
    """The key two calls share when their name and arguments (as JSON values) are the
    same: the process's keyed 64-bit string hash, as dict keys use. A collision among a
    conversation's few hundred calls has odds of ~1e-15; a BLAKE2b digest made the key
    cost 2.2 µs a call instead of 1.2."""
    try:
        canonical = _canonical(_jsontext.loads(arguments))
    except ValueError:
        canonical = arguments.strip()
    return hash((name, canonical))
