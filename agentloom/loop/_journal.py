"""The loop's durability seam: where a tool loop saves each turn and finds a saved one.

The loop knows nothing of stores. A `LoopJournal` (the workflow engine's durable run
implements it) is found through `LoopOptions.journal` or, for loops started inside a
workflow step, the `current_journal` context variable, so step modules need no change.
At the start of a loop `restore(step_id)` may hand back the conversation of a killed or
paused run, and after every tool turn `on_turn` is awaited, before the next model call.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import field
from typing import Protocol

from agentloom._record import FACTORY, Record, record
from agentloom.messages import Message, Usage


@record
class LoopRestore(Record):
    """A saved loop: its conversation so far and the model calls already made."""

    messages: list[Message]
    turn: int
    usage: Usage = field(default_factory=Usage)

    def __init__(self, *, messages: list[Message], turn: int, usage: Usage = FACTORY) -> None:
        self.messages = messages
        self.turn = turn
        self.usage = Usage() if usage is FACTORY else usage


class LoopJournal(Protocol):
    def restore(self, step_id: str) -> LoopRestore | None:
        """The saved loop of `step_id`, once (a retry of the step starts fresh)."""
        ...

    async def on_turn(self, step_id: str, turn: int, messages: list[Message],
                      usage: Usage) -> None:
        """A tool turn ended: `messages` holds its tool results. Persist before returning."""
        ...


current_journal: ContextVar[LoopJournal | None] = ContextVar(
    "agentloom_loop_journal", default=None)
