"""What a finished conversation gives back: its transcript and its summary."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from agentloom.loop.summary import ConversationSummary
from agentloom.loop.transcript import Transcript


class _SummarySource(Protocol):
    @property
    def summary(self) -> ConversationSummary: ...


@dataclass(frozen=True, slots=True, init=False)
class ConversationResult:
    """`transcript` is the whole conversation (the input messages, then every turn the run
    added, tool calls and results included); `summary` is its metadata-only record, built
    when first read (a run that nobody asks about builds no pydantic model)."""

    transcript: Transcript
    _summary: ConversationSummary | _SummarySource = field(repr=False)
    output: Any = None
    """The validated value with an output schema; else the final text."""

    def __init__(self, transcript: Transcript,
                 summary: ConversationSummary | _SummarySource, output: Any = None) -> None:
        object.__setattr__(self, "transcript", transcript)
        object.__setattr__(self, "_summary", summary)
        object.__setattr__(self, "output", output)

    @property
    def summary(self) -> ConversationSummary:
        s = self._summary
        if not isinstance(s, ConversationSummary):
            s = s.summary
            object.__setattr__(self, "_summary", s)
        return s

    @property
    def text(self) -> str:
        """The text of the last assistant turn."""
        return self.transcript.text
