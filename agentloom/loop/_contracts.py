"""The structured-output seam of the agent loop.

`OutputValidator` checks a final reply for structured output (implemented in
`agentloom.structured`). The tool seams (`ToolContext`, `ToolBox`) live in
`agentloom.tools.contracts`, below the loop.
"""

from __future__ import annotations

from typing import Any, Protocol


class OutputValidator(Protocol):
    """Structured output: parse and validate a final reply's text."""

    def validate(self, text: str) -> Any:
        """Return the parsed value, or raise `ValueError` whose message is shown to the
        model when it is asked again."""
        ...
