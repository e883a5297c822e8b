"""The parts a message is made of: text, images, documents, audio, tool calls and
results, reasoning and vendor blocks, and their conversion to and from JSON-ready dicts.

Each part carries a `kind` discriminator so that a recording or checkpoint turns back into
objects with a dictionary lookup (`part_from_dict`). Import them from `agentloom.messages`,
which re-exports every name here; this module only keeps that one under 500 lines.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal, TypeAlias

from agentloom._record import FrozenRecord, freeze, frozen_record, set_field, thaw


@frozen_record
class TextPart(FrozenRecord):
    """Plain text of a message or a reply."""

    text: str
    kind: Literal["text"] = "text"

    def __init__(self, *, text: str, kind: Literal["text"] = "text") -> None:
        set_field(self, "text", text)
        set_field(self, "kind", kind)


@frozen_record
class ImagePart(FrozenRecord):
    """An image given as bytes (`data`) or, for providers that fetch it themselves, a `url`."""

    media_type: str = "image/png"
    data: bytes | None = None
    url: str | None = None
    kind: Literal["image"] = "image"

    def __init__(
        self, *, media_type: str = "image/png", data: bytes | None = None, url: str | None = None,
        kind: Literal["image"] = "image",
    ) -> None:
        set_field(self, "media_type", media_type)
        set_field(self, "data", data)
        set_field(self, "url", url)
        set_field(self, "kind", kind)


@frozen_record
class DocumentPart(FrozenRecord):
    """A document, such as a PDF; bytes only."""

    media_type: str = "application/pdf"
    data: bytes | None = None
    url: str | None = None
    kind: Literal["document"] = "document"

    def __init__(
        self, *, media_type: str = "application/pdf", data: bytes | None = None,
        url: str | None = None, kind: Literal["document"] = "document",
    ) -> None:
        set_field(self, "media_type", media_type)
        set_field(self, "data", data)
        set_field(self, "url", url)
        set_field(self, "kind", kind)


@frozen_record
class AudioPart(FrozenRecord):
    """Audio given as bytes."""

    media_type: str = "audio/wav"
    data: bytes | None = None
    kind: Literal["audio"] = "audio"

    def __init__(
        self, *, media_type: str = "audio/wav", data: bytes | None = None,
        kind: Literal["audio"] = "audio",
    ) -> None:
        set_field(self, "media_type", media_type)
        set_field(self, "data", data)
        set_field(self, "kind", kind)


@frozen_record
class ToolCallPart(FrozenRecord):
    """A call the model asked for. `arguments` is the raw JSON text the model wrote: it may
    not parse, and that is the tool loop's business, not the decoder's."""

    id: str
    name: str
    arguments: str
    kind: Literal["tool_call"] = "tool_call"

    def __init__(
        self, *, id: str, name: str, arguments: str, kind: Literal["tool_call"] = "tool_call",
    ) -> None:
        this = thaw(self)
        this.id = id
        this.name = name
        this.arguments = arguments
        this.kind = kind
        freeze(this)


@frozen_record
class ToolResultPart(FrozenRecord):
    """What a tool returned for the call `call_id`;
    `is_error` marks a failure the model should see."""

    call_id: str
    name: str
    content: str
    is_error: bool = False
    kind: Literal["tool_result"] = "tool_result"

    def __init__(
        self, *, call_id: str, name: str, content: str, is_error: bool = False,
        kind: Literal["tool_result"] = "tool_result",
    ) -> None:
        this = thaw(self)
        this.call_id = call_id
        this.name = name
        this.content = content
        this.is_error = is_error
        this.kind = kind
        freeze(this)


@frozen_record
class ReasoningPart(FrozenRecord):
    """Reasoning text. Anthropic signs its thinking blocks; the signature must go back
    unchanged on the next turn of a tool loop, so it is kept here. `redacted` holds an
    opaque redacted-thinking payload when the provider sends one instead of text."""

    text: str
    signature: str | None = None
    redacted: str | None = None
    kind: Literal["reasoning"] = "reasoning"

    def __init__(
        self, *, text: str, signature: str | None = None, redacted: str | None = None,
        kind: Literal["reasoning"] = "reasoning",
    ) -> None:
        this = thaw(self)
        this.text = text
        this.signature = signature
        this.redacted = redacted
        this.kind = kind
        freeze(this)


@frozen_record
class VendorPart(FrozenRecord):
    """A block only its provider understands (a server-side tool call or its result, an
    OpenAI reasoning item), kept as the provider gave it and sent back unchanged to that
    provider on the next turn; other providers leave it out. `data` is the wire object."""

    provider: str
    data: dict[str, Any]
    kind: Literal["vendor"] = "vendor"

    def __init__(
        self, *, provider: str, data: dict[str, Any], kind: Literal["vendor"] = "vendor",
    ) -> None:
        set_field(self, "provider", provider)
        set_field(self, "data", data)
        set_field(self, "kind", kind)


Part: TypeAlias = (
    TextPart | ImagePart | DocumentPart | AudioPart | ToolCallPart | ToolResultPart
    | ReasoningPart | VendorPart
)
MediaPart: TypeAlias = ImagePart | DocumentPart | AudioPart

_PART_TYPES: dict[str, type[Any]] = {
    "text": TextPart,
    "image": ImagePart,
    "document": DocumentPart,
    "audio": AudioPart,
    "tool_call": ToolCallPart,
    "tool_result": ToolResultPart,
    "reasoning": ReasoningPart,
    "vendor": VendorPart,
}


_PART_FIELDS: dict[type, tuple[str, ...]] = {}
"""Part type -> its field names: a durable run converts parts at every step, and
`dataclasses.fields` walks the class each call."""


def part_to_dict(part: Part) -> dict[str, Any]:
    """A JSON-ready dict of a part; bytes become base64 text."""
    names = _PART_FIELDS.get(type(part))
    if names is None:
        names = _PART_FIELDS[type(part)] = tuple(f.name for f in dataclasses.fields(part))
    out: dict[str, Any] = {}
    for name in names:
        value = getattr(part, name)
        if isinstance(value, bytes):
            import base64

            value = base64.b64encode(value).decode("ascii")
        out[name] = value
    return out


def part_from_dict(data: dict[str, Any]) -> Part:
    import base64

    cls = _PART_TYPES[data["kind"]]
    values = dict(data)
    if cls in (ImagePart, DocumentPart, AudioPart) and isinstance(values.get("data"), str):
        values["data"] = base64.b64decode(values["data"])
    result: Part = cls(**values)
    return result
