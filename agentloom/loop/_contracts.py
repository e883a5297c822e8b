"""The seams of the agent loop that layers below it implement.

`ToolBox` is what the loop calls to run tools (implemented in `agentloom.tools`).
`OutputValidator` checks a final reply for structured output. The loop itself lives in
`_loop.py`; these are kept apart so that `tools/` and `workflow/` can import the types
without importing the loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from agentloom.messages import ToolCallPart, ToolResultPart, ToolSpec


@dataclass(slots=True, kw_only=True)
class ToolContext:
    """What a tool call knows about where it runs. `run_id`/`step_id` key durable state."""

    run_id: str | None = None
    step_id: str | None = None
    turn: int = 0
    extra: dict[str, Any] | None = None


class ToolBox(Protocol):
    """The tools one call may use. `specs` is exactly what the model is shown."""

    @property
    def specs(self) -> tuple[ToolSpec, ...]: ...

    async def call(self, call: ToolCallPart, ctx: ToolContext) -> ToolResultPart:
        """Run one call. Never raises for a tool's own failure (unknown tool, bad JSON,
        exception, sandbox refusal): those come back as a result with is_error=True.
        Only cancellation and control signals (a pause) propagate."""
        ...


class OutputValidator(Protocol):
    """Structured output: parse and validate a final reply's text."""

    def validate(self, text: str) -> Any:
        """Return the parsed value, or raise `ValueError` whose message is shown to the
        model when it is asked again."""
        ...
