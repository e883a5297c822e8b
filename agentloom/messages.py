"""Provider-neutral types: messages and their parts, usage, requests, responses, stream events.

Every provider module translates between these and its own wire format, so nothing above
`providers/` ever sees a vendor's JSON. They are plain slotted dataclasses because they sit
on the hot path of every call; each part carries a `kind` discriminator so that a recording
or checkpoint can be turned back into objects with a dictionary lookup (`part_from_dict`).

`None` in a usage field means the provider did not report it, never zero.

They are real dataclasses (`dataclasses.fields`, `replace` and `asdict` work on them), but
their methods are written out below instead of generated: generating them runs `exec`
once per method and class, which cost most of this module's import time on every start
of the CLI. `_Record` supplies the frozen, slotted, field-wise equality and hashing that
`@dataclass(frozen=True, slots=True)` would, and `_record` checks that each hand-written
`__init__` names exactly the class's fields.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import FrozenInstanceError, dataclass, field
from decimal import Decimal
from operator import attrgetter
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeAlias, TypeVar

_T = TypeVar("_T")
_set = object.__setattr__


class _Factory:
    def __repr__(self) -> str:
        return "<factory>"


_FACTORY: Any = _Factory()
"""Default of a field with a default factory: "not given", as the generated __init__ has."""


class _Record:
    """Frozen, slotted value behaviour shared by every type of this module."""

    __slots__ = ()
    if TYPE_CHECKING:
        __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]
    _names: tuple[str, ...] = ()
    _key: Callable[[Any], Any] = staticmethod(lambda self: ())

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            key = self._key
            result: bool = key(self) == key(other)
            return result
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._key(self))

    def __repr__(self) -> str:
        body = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._names)
        return f"{self.__class__.__qualname__}({body})"

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __getstate__(self) -> list[Any]:
        return [getattr(self, n) for n in self._names]

    def __setstate__(self, state: list[Any]) -> None:
        for name, value in zip(self._names, state, strict=True):
            _set(self, name, value)


if TYPE_CHECKING:
    from typing import dataclass_transform

    # What the type checker sees: a frozen keyword-only dataclass.
    @dataclass_transform(kw_only_default=True, frozen_default=True)
    def _record(cls: type[_T]) -> type[_T]: ...

else:

    def _record(cls: type[_T]) -> type[_T]:
        cls = dataclass(slots=True, kw_only=True, init=False, repr=False, eq=False)(cls)
        fields = dataclasses.fields(cls)
        names = tuple(f.name for f in fields)
        defaults = cls.__init__.__kwdefaults__ or {}
        expected = {f.name: _FACTORY if f.default is dataclasses.MISSING else f.default
                    for f in fields
                    if f.default is not dataclasses.MISSING
                    or f.default_factory is not dataclasses.MISSING}
        params = cls.__init__.__code__.co_varnames[1:len(names) + 1]
        if params != names or defaults != expected:  # pragma: no cover - fails at import
            raise TypeError(f"{cls.__name__}.__init__ does not match its fields")
        cls._names = names
        # attrgetter is no descriptor, so it stays unbound on instances; one name gives a
        # bare value, so a lone field is wrapped (as a static method) into a tuple.
        get = attrgetter(*names)
        cls._key = get if len(names) > 1 else staticmethod(lambda obj: (get(obj),))
        return cls


Role: TypeAlias = Literal["system", "user", "assistant", "tool"]


@_record
class TextPart(_Record):
    """Plain text of a message or a reply."""

    text: str
    kind: Literal["text"] = "text"

    def __init__(self, *, text: str, kind: Literal["text"] = "text") -> None:
        _set(self, "text", text)
        _set(self, "kind", kind)


@_record
class ImagePart(_Record):
    """An image given as bytes (`data`) or, for providers that fetch it themselves, a `url`."""

    media_type: str = "image/png"
    data: bytes | None = None
    url: str | None = None
    kind: Literal["image"] = "image"

    def __init__(
        self, *, media_type: str = "image/png", data: bytes | None = None, url: str | None = None,
        kind: Literal["image"] = "image",
    ) -> None:
        _set(self, "media_type", media_type)
        _set(self, "data", data)
        _set(self, "url", url)
        _set(self, "kind", kind)


@_record
class DocumentPart(_Record):
    """A document, such as a PDF; bytes only."""

    media_type: str = "application/pdf"
    data: bytes | None = None
    url: str | None = None
    kind: Literal["document"] = "document"

    def __init__(
        self, *, media_type: str = "application/pdf", data: bytes | None = None,
        url: str | None = None, kind: Literal["document"] = "document",
    ) -> None:
        _set(self, "media_type", media_type)
        _set(self, "data", data)
        _set(self, "url", url)
        _set(self, "kind", kind)


@_record
class AudioPart(_Record):
    """Audio given as bytes."""

    media_type: str = "audio/wav"
    data: bytes | None = None
    kind: Literal["audio"] = "audio"

    def __init__(
        self, *, media_type: str = "audio/wav", data: bytes | None = None,
        kind: Literal["audio"] = "audio",
    ) -> None:
        _set(self, "media_type", media_type)
        _set(self, "data", data)
        _set(self, "kind", kind)


@_record
class ToolCallPart(_Record):
    """A call the model asked for. `arguments` is the raw JSON text the model wrote: it may
    not parse, and that is the tool loop's business, not the decoder's."""

    id: str
    name: str
    arguments: str
    kind: Literal["tool_call"] = "tool_call"

    def __init__(
        self, *, id: str, name: str, arguments: str, kind: Literal["tool_call"] = "tool_call",
    ) -> None:
        _set(self, "id", id)
        _set(self, "name", name)
        _set(self, "arguments", arguments)
        _set(self, "kind", kind)


@_record
class ToolResultPart(_Record):
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
        _set(self, "call_id", call_id)
        _set(self, "name", name)
        _set(self, "content", content)
        _set(self, "is_error", is_error)
        _set(self, "kind", kind)


@_record
class ReasoningPart(_Record):
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
        _set(self, "text", text)
        _set(self, "signature", signature)
        _set(self, "redacted", redacted)
        _set(self, "kind", kind)


@_record
class VendorPart(_Record):
    """A block only its provider understands (a server-side tool call or its result, an
    OpenAI reasoning item), kept as the provider gave it and sent back unchanged to that
    provider on the next turn; other providers leave it out. `data` is the wire object."""

    provider: str
    data: dict[str, Any]
    kind: Literal["vendor"] = "vendor"

    def __init__(
        self, *, provider: str, data: dict[str, Any], kind: Literal["vendor"] = "vendor",
    ) -> None:
        _set(self, "provider", provider)
        _set(self, "data", data)
        _set(self, "kind", kind)


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


@_record
class Message(_Record):
    """One turn of a conversation: who speaks (`role`) and what they said (`parts`)."""

    role: Role
    parts: tuple[Part, ...] = ()
    name: str | None = None
    """A speaker's name on user/assistant turns (spec 000, several speakers)."""

    def __init__(
        self, *, role: Role, parts: tuple[Part, ...] = (), name: str | None = None,
    ) -> None:
        _set(self, "role", role)
        _set(self, "parts", parts)
        _set(self, "name", name)

    @classmethod
    def system(cls, text: str) -> Message:
        return cls(role="system", parts=(TextPart(text=text),))

    @classmethod
    def user(cls, text: str, *media: MediaPart, name: str | None = None) -> Message:
        return cls(role="user", parts=(TextPart(text=text), *media), name=name)

    @classmethod
    def assistant(cls, text: str, *, name: str | None = None) -> Message:
        return cls(role="assistant", parts=(TextPart(text=text),), name=name)

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def tool_calls(self) -> tuple[ToolCallPart, ...]:
        return tuple(p for p in self.parts if isinstance(p, ToolCallPart))


def _add(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return a + b


@_record
class Usage(_Record):
    """Token counts of one or more calls. None means "not reported", never zero.

    `input_includes_cached` says how to read `input_tokens`: OpenAI and Gemini count cached
    prompt tokens inside it (True); Anthropic reports them apart (False).
    """

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None
    cost_usd: Decimal | None = None
    input_includes_cached: bool | None = None
    cost_estimated: bool = False
    """True when `cost_usd` (or part of it) comes from the price table, not the provider."""

    def __init__(
        self, *, input_tokens: int | None = None, output_tokens: int | None = None,
        cache_read_tokens: int | None = None, cache_write_tokens: int | None = None,
        reasoning_tokens: int | None = None, cost_usd: Decimal | None = None,
        input_includes_cached: bool | None = None, cost_estimated: bool = False,
    ) -> None:
        _set(self, "input_tokens", input_tokens)
        _set(self, "output_tokens", output_tokens)
        _set(self, "cache_read_tokens", cache_read_tokens)
        _set(self, "cache_write_tokens", cache_write_tokens)
        _set(self, "reasoning_tokens", reasoning_tokens)
        _set(self, "cost_usd", cost_usd)
        _set(self, "input_includes_cached", input_includes_cached)
        _set(self, "cost_estimated", cost_estimated)

    def __add__(self, other: Usage) -> Usage:
        cost: Decimal | None
        if self.cost_usd is None:
            cost = other.cost_usd
        elif other.cost_usd is None:
            cost = self.cost_usd
        else:
            cost = self.cost_usd + other.cost_usd
        return Usage(
            input_tokens=_add(self.input_tokens, other.input_tokens),
            output_tokens=_add(self.output_tokens, other.output_tokens),
            cache_read_tokens=_add(self.cache_read_tokens, other.cache_read_tokens),
            cache_write_tokens=_add(self.cache_write_tokens, other.cache_write_tokens),
            reasoning_tokens=_add(self.reasoning_tokens, other.reasoning_tokens),
            cost_usd=cost,
            input_includes_cached=(
                self.input_includes_cached
                if other.input_includes_cached is None
                else other.input_includes_cached
            ),
            cost_estimated=self.cost_estimated or other.cost_estimated,
        )

    @property
    def total_tokens(self) -> int | None:
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return (self.input_tokens or 0) + (self.output_tokens or 0)

    def with_cost(self, cost: Decimal | None) -> Usage:
        """This usage priced from the price table (`cost_estimated`)."""
        return dataclasses.replace(self, cost_usd=cost, cost_estimated=cost is not None)


def _no_parameters() -> dict[str, Any]:
    return {"type": "object", "properties": {}}


@_record
class ToolSpec(_Record):
    """What the model sees of a tool: its name, description and JSON Schema parameters."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=lambda: _no_parameters())

    def __init__(
        self, *, name: str, description: str = "", parameters: dict[str, Any] = _FACTORY,
    ) -> None:
        _set(self, "name", name)
        _set(self, "description", description)
        _set(self, "parameters", _no_parameters() if parameters is _FACTORY else parameters)


@_record
class NamedToolChoice(_Record):
    """Forces the model to call the tool `name`."""

    name: str

    def __init__(self, *, name: str) -> None:
        _set(self, "name", name)


ToolChoice: TypeAlias = Literal["auto", "none", "required"] | NamedToolChoice


@_record
class ReasoningConfig(_Record):
    """The step's `thinking` block (spec 000, Reasoning)."""

    enabled: bool = False
    budget_tokens: int | None = None
    level: Literal["low", "medium", "high"] | None = None
    capture: bool = True

    def __init__(
        self, *, enabled: bool = False, budget_tokens: int | None = None,
        level: Literal["low", "medium", "high"] | None = None, capture: bool = True,
    ) -> None:
        _set(self, "enabled", enabled)
        _set(self, "budget_tokens", budget_tokens)
        _set(self, "level", level)
        _set(self, "capture", capture)


@_record
class ResponseFormat(_Record):
    """A JSON shape for the reply. `schema` None with kind json_object asks for any object."""

    kind: Literal["json_object", "json_schema"] = "json_object"
    schema: dict[str, Any] | None = None
    name: str = "response"
    strict: bool = True
    description: str | None = None

    def __init__(
        self, *, kind: Literal["json_object", "json_schema"] = "json_object",
        schema: dict[str, Any] | None = None, name: str = "response", strict: bool = True,
        description: str | None = None,
    ) -> None:
        _set(self, "kind", kind)
        _set(self, "schema", schema)
        _set(self, "name", name)
        _set(self, "strict", strict)
        _set(self, "description", description)


@_record
class ModelRequest(_Record):
    """One call to a model, before any provider has seen it."""

    model: str
    messages: tuple[Message, ...]
    temperature: float | None = None
    max_tokens: int | None = None
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: ToolChoice = "auto"
    reasoning: ReasoningConfig | None = None
    response_format: ResponseFormat | None = None
    stream: bool = False
    vendor_tools: tuple[dict[str, Any], ...] = ()
    """Provider-defined tools (spec 004 vendorTools), sent unchanged."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Extra body parameters (from a profile), merged over what the encoder produced."""
    headers: dict[str, str] = field(default_factory=dict)
    """Extra HTTP headers (from a profile or provider config)."""
    prefill: str | None = None
    """Text the assistant turn starts with (Anthropic's JSON prefill)."""
    cache: Literal["auto"] | None = None
    """`auto`: mark the stable prefix (system prompt, tools, earlier turns) for the
    provider's prompt cache (Anthropic `cache_control` breakpoints, OpenAI's
    `prompt_cache_key`); None: send no cache hints."""

    def __init__(
        self, *, model: str, messages: tuple[Message, ...], temperature: float | None = None,
        max_tokens: int | None = None, tools: tuple[ToolSpec, ...] = (),
        tool_choice: ToolChoice = "auto", reasoning: ReasoningConfig | None = None,
        response_format: ResponseFormat | None = None, stream: bool = False,
        vendor_tools: tuple[dict[str, Any], ...] = (), extra: dict[str, Any] = _FACTORY,
        headers: dict[str, str] = _FACTORY, prefill: str | None = None,
        cache: Literal["auto"] | None = None,
    ) -> None:
        _set(self, "model", model)
        _set(self, "messages", messages)
        _set(self, "temperature", temperature)
        _set(self, "max_tokens", max_tokens)
        _set(self, "tools", tools)
        _set(self, "tool_choice", tool_choice)
        _set(self, "reasoning", reasoning)
        _set(self, "response_format", response_format)
        _set(self, "stream", stream)
        _set(self, "vendor_tools", vendor_tools)
        _set(self, "extra", {} if extra is _FACTORY else extra)
        _set(self, "headers", {} if headers is _FACTORY else headers)
        _set(self, "prefill", prefill)
        _set(self, "cache", cache)

    def replace(self, **changes: Any) -> ModelRequest:
        return dataclasses.replace(self, **changes)


@_record
class ModelResponse(_Record):
    """A finished reply. `finish_reason` is the provider's own word (`stop`, `end_turn`,
    `STOP`, ...), not a normalised one."""

    parts: tuple[Part, ...]
    usage: Usage
    finish_reason: str | None
    model: str
    provider: str
    response_id: str | None = None
    time_to_first_token: float | None = None
    """Seconds from sending the request to the first streamed chunk; None if not streamed."""

    def __init__(
        self, *, parts: tuple[Part, ...], usage: Usage, finish_reason: str | None, model: str,
        provider: str, response_id: str | None = None, time_to_first_token: float | None = None,
    ) -> None:
        _set(self, "parts", parts)
        _set(self, "usage", usage)
        _set(self, "finish_reason", finish_reason)
        _set(self, "model", model)
        _set(self, "provider", provider)
        _set(self, "response_id", response_id)
        _set(self, "time_to_first_token", time_to_first_token)

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def tool_calls(self) -> tuple[ToolCallPart, ...]:
        return tuple(p for p in self.parts if isinstance(p, ToolCallPart))

    @property
    def reasoning(self) -> str | None:
        texts = [p.text for p in self.parts if isinstance(p, ReasoningPart) and p.text]
        return "".join(texts) if texts else None

    def to_message(self, *, name: str | None = None) -> Message:
        return Message(role="assistant", parts=self.parts, name=name)


# --- stream events -----------------------------------------------------------------------


@_record
class TextDelta(_Record):
    """A piece of the reply's text."""

    text: str
    kind: Literal["text_delta"] = "text_delta"

    def __init__(self, *, text: str, kind: Literal["text_delta"] = "text_delta") -> None:
        _set(self, "text", text)
        _set(self, "kind", kind)


@_record
class ReasoningDelta(_Record):
    """A piece of reasoning text, or its signature or redacted payload."""

    text: str = ""
    signature: str | None = None
    redacted: str | None = None
    kind: Literal["reasoning_delta"] = "reasoning_delta"

    def __init__(
        self, *, text: str = "", signature: str | None = None, redacted: str | None = None,
        kind: Literal["reasoning_delta"] = "reasoning_delta",
    ) -> None:
        _set(self, "text", text)
        _set(self, "signature", signature)
        _set(self, "redacted", redacted)
        _set(self, "kind", kind)


@_record
class ToolCallDelta(_Record):
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
        _set(self, "index", index)
        _set(self, "id", id)
        _set(self, "name", name)
        _set(self, "arguments", arguments)
        _set(self, "kind", kind)


@_record
class UsageEvent(_Record):
    """Usage so far. Later events override earlier fields that they report (not None)."""

    usage: Usage
    kind: Literal["usage"] = "usage"

    def __init__(self, *, usage: Usage, kind: Literal["usage"] = "usage") -> None:
        _set(self, "usage", usage)
        _set(self, "kind", kind)


@_record
class FinishEvent(_Record):
    """The end of a streamed reply: the provider's finish reason and ids."""

    finish_reason: str | None
    model: str | None = None
    response_id: str | None = None
    kind: Literal["finish"] = "finish"

    def __init__(
        self, *, finish_reason: str | None, model: str | None = None,
        response_id: str | None = None, kind: Literal["finish"] = "finish",
    ) -> None:
        _set(self, "finish_reason", finish_reason)
        _set(self, "model", model)
        _set(self, "response_id", response_id)
        _set(self, "kind", kind)


@_record
class VendorEvent(_Record):
    """A whole vendor block, once the stream has finished it (see `VendorPart`)."""

    part: VendorPart
    kind: Literal["vendor_event"] = "vendor_event"

    def __init__(self, *, part: VendorPart, kind: Literal["vendor_event"] = "vendor_event") -> None:
        _set(self, "part", part)
        _set(self, "kind", kind)


StreamEvent: TypeAlias = (
    TextDelta | ReasoningDelta | ToolCallDelta | UsageEvent | FinishEvent | VendorEvent
)


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


def message_to_dict(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.role, "parts": [part_to_dict(p) for p in message.parts]}
    if message.name is not None:
        out["name"] = message.name
    return out


def message_from_dict(data: dict[str, Any]) -> Message:
    return Message(
        role=data["role"],
        parts=tuple(part_from_dict(p) for p in data.get("parts", ())),
        name=data.get("name"),
    )
