"""What the agent loop needs from tools: `ToolContext` (where a call runs) and `ToolBox`
(the tools one call may use, implemented by `ToolSet`).

They live here, in the tools layer, because tools implement them and the loop (above)
only calls them. No I/O.
"""

from __future__ import annotations

from typing import Any, Protocol

from agentloom._record import Record, record
from agentloom.messages import ToolCallPart, ToolResultPart, ToolSpec


@record
class ToolContext(Record):
    """What a tool call knows about where it runs. `run_id`/`step_id` key durable state."""

    run_id: str | None = None
    step_id: str | None = None
    turn: int = 0
    extra: dict[str, Any] | None = None

    def __init__(
        self, *, run_id: str | None = None, step_id: str | None = None, turn: int = 0,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.run_id = run_id
        self.step_id = step_id
        self.turn = turn
        self.extra = extra


class ToolBox(Protocol):
    """The tools one call may use. `specs` is exactly what the model is shown."""

    @property
    def specs(self) -> tuple[ToolSpec, ...]: ...

    async def call(self, call: ToolCallPart, ctx: ToolContext) -> ToolResultPart:
        """Run one call. Never raises for a tool's own failure (unknown tool, bad JSON,
        exception, sandbox refusal): those come back as a result with is_error=True.
        Only cancellation and control signals (a pause) propagate."""
        ...
