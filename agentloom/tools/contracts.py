"""What the agent loop needs from tools: `ToolContext` (where a call runs), `ToolBox`
(the tools one call may use, implemented by `ToolSet`), and the bound on what a result
may hand the model (`MAX_RESULT_BYTES`, `bounded_text`).

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


MAX_RESULT_BYTES = 1_000_000
"""What a tool's result may hold (UTF-8) before it is cut: a tool that returns a 200 MB
file would otherwise send it to the model (which refuses it, or bills it) and write it
to every checkpoint of the run. The loop cuts every tool's result there, whatever the
ToolBox; a `tool` step's result is not cut (it is the workflow's own typed data). An
MCP server's own limit is `max_output_bytes`."""


def bounded_text(text: str, limit: int) -> str:
    """`text` cut to `limit` UTF-8 bytes with a note saying so, or as it is."""
    if 4 * len(text) <= limit:  # no character takes more than 4 bytes
        return text
    data = text.encode("utf-8", errors="replace")
    if len(data) <= limit:
        return text
    kept = data[:limit].decode("utf-8", errors="ignore")  # a split character is dropped
    return f"{kept}\n[output truncated at {limit} bytes]"

