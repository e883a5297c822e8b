"""Turn a stream of events into a `ModelResponse`: one place, used by every provider, so
streamed and non-streamed calls end in the same shape. A tool call's index that is not a
whole number, a name, arguments, text or reasoning that are not text, are a ValueError (the
client's body error), never a call silently lost or a TypeError out of `build`; argument
pieces are joined once, so thousands of them cost their length, not its square. An id, a
model or a finish reason that is not text reads as unreported; calls that share an id get
distinct ones (`distinct_call_ids`)."""

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
from agentloom.providers._common import distinct_call_ids


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
            name, call_id = event.name, event.id
            if name is not None and type(name) is not str:
                # A name that is not text can't be dispatched (nor sent back).
                raise ValueError(f"a streamed tool call's name is {kind_of(name)}, not text")
            self._flush_text()
            self._flush_reasoning()
            if index not in self._calls:
                self._parts.append(index)
            slot, pieces = self._calls.setdefault(index, ([None, None], []))
            if call_id and type(call_id) is str:  # an id that is not text: none sent
                slot[0] = call_id
            if name:
                slot[1] = name
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
            # Metadata that is not text reads as unreported: the call's answer stands.
            reason, model, response_id = event.finish_reason, event.model, event.response_id
            if type(reason) is str:
                self.finish_reason = reason
            if model and type(model) is str:
                self.model = model
            if response_id and type(response_id) is str:
                self.response_id = response_id

    def build(self, *, provider: str, time_to_first_token: float | None = None) -> ModelResponse:
        self._flush_text()
        self._flush_reasoning()
        parts: list[Part] = []
        ids: set[str] = set()
        for part in self._parts:
            if isinstance(part, int):
                (call_id, name), pieces = self._calls[part]
                call_id = call_id or f"call_{part}"
                ids.add(call_id)
                part = ToolCallPart(id=call_id, name=name or "", arguments="".join(pieces))
            parts.append(part)
        if len(ids) < len(self._calls):  # two calls share an id
            distinct_call_ids(parts, ids)
        return ModelResponse(
            parts=tuple(parts),
            usage=self._usage,
            finish_reason=self.finish_reason,
            model=self.model,
            provider=provider,
            response_id=self.response_id,
            time_to_first_token=time_to_first_token,
        )
