"""The stream events a provider's decoder yields while a reply arrives: text, reasoning
and tool-call deltas, the finish, and whole vendor blocks (the usage event stays beside
`Usage`). Import them from `agentloom.messages`, which re-exports every name here; this
module only keeps that one under 500 lines.
"""

from __future__ import annotations

from typing import Literal

from agentloom._parts import VendorPart
from agentloom._record import FrozenRecord, freeze, frozen_record, set_field, thaw


@frozen_record
class TextDelta(FrozenRecord):
    """A piece of the reply's text."""

    text: str
    kind: Literal["text_delta"] = "text_delta"

    def __init__(self, *, text: str, kind: Literal["text_delta"] = "text_delta") -> None:
        set_field(self, "text", text)
        set_field(self, "kind", kind)


@frozen_record
class ReasoningDelta(FrozenRecord):
    """A piece of reasoning text, or its signature or redacted payload."""

    text: str = ""
    signature: str | None = None
    redacted: str | None = None
    kind: Literal["reasoning_delta"] = "reasoning_delta"

    def __init__(
        self, *, text: str = "", signature: str | None = None, redacted: str | None = None,
        kind: Literal["reasoning_delta"] = "reasoning_delta",
    ) -> None:
        this = thaw(self)
        this.text = text
        this.signature = signature
        this.redacted = redacted
        this.kind = kind
        freeze(this)


@frozen_record
class ToolCallDelta(FrozenRecord):
    """A piece of a tool call. `index` ties pieces of one call together; `id` and `name`
    come with the first piece, `arguments` is appended."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""
    kind: Literal["tool_call_delta"] = "tool_call_delta"

    def __init__(
        self, *, index: int, id: str | None = None, name: str | None = None, arguments: str = "",
        kind: Literal["tool_call_delta"] = "tool_call_delta",
    ) -> None:
        this = thaw(self)
        this.index = index
        this.id = id
        this.name = name
        this.arguments = arguments
        this.kind = kind
        freeze(this)


@frozen_record
class FinishEvent(FrozenRecord):
    """The end of a streamed reply: the provider's finish reason and ids."""

    finish_reason: str | None
    model: str | None = None
    response_id: str | None = None
    kind: Literal["finish"] = "finish"

    def __init__(
        self, *, finish_reason: str | None, model: str | None = None,
        response_id: str | None = None, kind: Literal["finish"] = "finish",
    ) -> None:
        this = thaw(self)
        this.finish_reason = finish_reason
        this.model = model
        this.response_id = response_id
        this.kind = kind
        freeze(this)


@frozen_record
class VendorEvent(FrozenRecord):
    """A whole vendor block, once the stream has finished it (see `VendorPart`)."""

    part: VendorPart
    kind: Literal["vendor_event"] = "vendor_event"

    def __init__(self, *, part: VendorPart, kind: Literal["vendor_event"] = "vendor_event") -> None:
        set_field(self, "part", part)
        set_field(self, "kind", kind)


__all__ = [
    "FinishEvent", "ReasoningDelta", "TextDelta", "ToolCallDelta", "VendorEvent",
]
