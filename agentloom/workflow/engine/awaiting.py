"""How the engine awaits a step: in the step's own context without a task of its own
(`InContext`), and under a deadline on the run's injectable clock.
"""

from __future__ import annotations

import contextvars
from collections.abc import Coroutine, Generator
from typing import Any

from agentloom._clock import Clock
from agentloom.errors import LoopBudgetExceeded
from agentloom.loop import Deadline


class InContext:
    """Await a coroutine in `context` without a task of its own: each step of it runs
    inside `context.run`, so the context variables it sets stay its own, as in a task
    started with that context. Python 3.11 has no eager tasks to do this."""

    __slots__ = ("_context", "_coro")

    def __init__(self, coro: Coroutine[Any, Any, Any], context: contextvars.Context) -> None:
        self._coro, self._context = coro, context

    def __await__(self) -> Generator[Any, Any, Any]:
        run, coro = self._context.run, self._coro
        send, throw = coro.send, coro.throw
        value: Any = None
        error: BaseException | None = None
        while True:
            try:
                yielded = run(send, value) if error is None else run(throw, error)
            except StopIteration as stop:
                return stop.value
            try:
                value, error = (yield yielded), None
            except BaseException as exc:  # delivered to the coroutine, as a task would
                value, error = None, exc


def step_deadline(clock: Clock, seconds: float) -> Deadline:
    now = clock.now()
    return Deadline(clock, now + seconds, now)


def deadline_passed(exc: LoopBudgetExceeded, deadline: Deadline) -> bool:
    """Whether `exc` is `deadline` passing, not a budget of a loop inside the step."""
    return exc.kind == "deadline" and deadline.clock.now() >= deadline.at
