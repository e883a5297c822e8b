"""Which call is this: the step id, loop turn and attempt that tag a model call.

The engine and the loop set it around each call (`call_context`); the recorder, the
replayer and the run store read it (`current_call_context`), since a transport cannot
know them. Apart from the file format so that a run that records nothing loads only this.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

from agentloom._record import FrozenRecord, frozen_record, set_field


@frozen_record(kw_only=False)
class CallContext(FrozenRecord):
    """The step, loop turn and attempt a model call belongs to (None: not known)."""

    step_id: str | None = None
    turn: int | None = None
    attempt: int | None = None
    """Set by retry code if it knows; else the recorder counts attempts itself."""

    def __init__(self, step_id: str | None = None, turn: int | None = None,
                 attempt: int | None = None) -> None:
        set_field(self, "step_id", step_id)
        set_field(self, "turn", turn)
        set_field(self, "attempt", attempt)


current_call_context: ContextVar[CallContext | None] = ContextVar(
    "agentloom_call_context", default=None
)


@contextlib.contextmanager
def call_context(*, step_id: str | None, turn: int | None = None,
                 attempt: int | None = None) -> Iterator[CallContext]:
    """Tag the model calls made inside the block (and tasks started in it) with a step id
    and loop turn, for recording, replay and the run store."""
    ctx = CallContext(step_id=step_id, turn=turn, attempt=attempt)
    token = current_call_context.set(ctx)
    try:
        yield ctx
    finally:
        current_call_context.reset(token)
