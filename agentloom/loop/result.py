"""What a finished conversation gives back: its transcript and its summary."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentloom.loop.summary import ConversationSummary
from agentloom.loop.transcript import Transcript


@dataclass(frozen=True, slots=True)
class ConversationResult:
    """`transcript` is the whole conversation (the input messages, then every turn the run
    added, tool calls and results included); `summary` is its metadata-only record."""

    transcript: Transcript
    summary: ConversationSummary
    output: Any = None
    """The validated value with an output schema; else the final text."""

    @property
    def text(self) -> str:
        """The text of the last assistant turn."""
        return self.transcript.text
