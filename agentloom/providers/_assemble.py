"""Turn a stream of events into a `ModelResponse`: one place, used by every provider, so
streamed and non-streamed calls end in the same shape. A tool call's index that is not a
whole number, or arguments, text or reasoning that are not text, are a ValueError (the
client's body error), never a call silently lost or a TypeError out of `build`; argument
pieces are joined once, so thousands of them cost their length, not its square."""

from __future__ import annotations

import dataclasses

from agentloom.errors import kind_of
from agentloom.messages import (
    FinishEvent,
    ModelResponse,
    Part,
    ReasoningDelta,
    ReasoningPart,
    StreamEvent,
    TextDelta,
    TextPart,
    ToolCallDelta,
    ToolCallPart,
    Usage,
    UsageEvent,
    VendorEvent,
)


class ResponseBuilder:
    """Accumulates events in arrival order. Text and reasoning runs become one part each
    run; tool calls are assembled by index and keep the place of their first piece, so a
    streamed reply has its parts in the order a whole one has (the OpenAI Responses API
    wants each reasoning item sent back just before the call it led to)."""

    __slots__ = (
        "_calls",
        "_parts",
        "_reasoning",
        "_redacted",
        "_sig",
        "_text",
        "_usage",
        "finish_reason",
        "model",
        "response_id",
    )

    def __init__(self, model: str) -> None:
        self._parts: list[Part | int] = []
        """Parts, and the indexes of tool calls where they first appeared."""
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._sig: str | None = None
        self._redacted: str | None = None
        self._calls: dict[int, tuple[list[str | None], list[str]]] = {}
        """Per index: [id, name], and the argument pieces, joined once in `build` (adding
        each piece to the string so far copied it all again: quadratic in the pieces)."""
        self._usage = Usage()
        self.finish_reason: str | None = None
        self.model = model
        self.response_id: str | None = None

    def _flush_text(self) -> None:
        if self._text:
            self._parts.append(TextPart(text="".join(self._text)))
            self._text = []

    def _flush_reasoning(self) -> None:
        if self._reasoning or self._sig or self._redacted:
            self._parts.append(
                ReasoningPart(text="".join(self._reasoning), signature=self._sig,
                              redacted=self._redacted)
            )
            self._reasoning, self._sig, self._redacted = [], None, None

    def add(self, event: StreamEvent) -> None:
        if isinstance(event, TextDelta):
            if type(event.text) is not str:
                # Joined only in `build`, which runs after the client stopped mapping
                # errors: refused here, as a body error, not a TypeError out of the call.
                raise ValueError(f"a streamed text piece is {kind_of(event.text)}, not text")
            self._flush_reasoning()
            self._text.append(event.text)
        elif isinstance(event, ReasoningDelta):
            for value in (event.text, event.signature, event.redacted):
                if value is not None and type(value) is not str:
                    raise ValueError(
                        f"a streamed reasoning piece is {kind_of(value)}, not text")
            self._flush_text()
            # A signed or redacted block is complete: what follows is a new block, which
            # must stay apart so each goes back to the provider as it came.
            # So is a second signature in a row (Gemini signs consecutive parts apart).
            closed = (event.text or event.redacted or event.signature) and (
                self._sig or self._redacted)
            if closed or (event.redacted and self._reasoning):
                self._flush_reasoning()
            if event.text:
                self._reasoning.append(event.text)
            if event.signature:
                self._sig = event.signature
            if event.redacted:
                self._redacted = event.redacted
        elif isinstance(event, ToolCallDelta):
            index, arguments = event.index, event.arguments
            if type(index) is not int:
                # An index off the wire (text, a fraction, true) would be a key no call
                # part is built from: the call lost, the raw value left among the parts.
                raise ValueError(
                    f"a streamed tool call's index is {kind_of(index)}, not a whole number")
            if type(arguments) is not str:
                raise ValueError(f"a streamed tool call's arguments are {kind_of(arguments)}, "
                                 "not text")
            self._flush_text()
            self._flush_reasoning()
            if index not in self._calls:
                self._parts.append(index)
            slot, pieces = self._calls.setdefault(index, ([None, None], []))
            if event.id:
                slot[0] = event.id
            if event.name:
                slot[1] = event.name
            if arguments:
                pieces.append(arguments)
        elif isinstance(event, VendorEvent):
            self._flush_text()
            self._flush_reasoning()
            self._parts.append(event.part)
        elif isinstance(event, UsageEvent):
            merged = {
                f.name: getattr(event.usage, f.name)
                for f in dataclasses.fields(Usage)
                if getattr(event.usage, f.name) is not None
            }
            self._usage = dataclasses.replace(self._usage, **merged)
        elif isinstance(event, FinishEvent):
            if event.finish_reason is not None:
                self.finish_reason = event.finish_reason
            if event.model:
                self.model = event.model
            if event.response_id:
                self.response_id = event.response_id

    def build(self, *, provider: str, time_to_first_token: float | None = None) -> ModelResponse:
        self._flush_text()
        self._flush_reasoning()
        parts: list[Part] = []
        for part in self._parts:
            if isinstance(part, int):
                (call_id, name), pieces = self._calls[part]
                part = ToolCallPart(id=call_id or f"call_{part}", name=name or "",
                                    arguments="".join(pieces))
            parts.append(part)
        return ModelResponse(
            parts=tuple(parts),
            usage=self._usage,
            finish_reason=self.finish_reason,
            model=self.model,
            provider=provider,
            response_id=self.response_id,
            time_to_first_token=time_to_first_token,
        )
