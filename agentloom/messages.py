"""Provider-neutral types: messages and their parts, usage, requests, responses, stream events.

Every provider module translates between these and its own wire format, so nothing above
`providers/` ever sees a vendor's JSON. They are plain slotted dataclasses because they sit
on the hot path of every call; each part carries a `kind` discriminator so that a recording
or checkpoint can be turned back into objects with a dictionary lookup (`part_from_dict`).
The parts are defined in `agentloom._parts`, most stream events in `agentloom._events`;
both are re-exported here: import them from here.

`None` in a usage field means the provider did not report it, never zero.

They are real dataclasses (`dataclasses.fields`, `replace` and `asdict` work on them) whose
methods are written out below instead of generated at import (`agentloom._record`: a
generated dataclass costs ~4 M instructions of every start of the CLI).
"""

from __future__ import annotations

import dataclasses
from dataclasses import field
from decimal import Decimal
from typing import Any, Literal, TypeAlias

from agentloom._events import (
    FinishEvent,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    VendorEvent,
)
from agentloom._parts import (
    AudioPart,
    DocumentPart,
    ImagePart,
    MediaPart,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    VendorPart,
    part_from_dict,
    part_to_dict,
)
from agentloom._record import FACTORY, TWINS, FrozenRecord, freeze, frozen_record, set_field, thaw

Role: TypeAlias = Literal["system", "user", "assistant", "tool"]


@frozen_record
class Message(FrozenRecord):
    """One turn of a conversation: who speaks (`role`) and what they said (`parts`)."""

    role: Role
    parts: tuple[Part, ...] = ()
    name: str | None = None
    """A speaker's name on user/assistant turns (spec 000, several speakers)."""

    def __init__(
        self, *, role: Role, parts: tuple[Part, ...] = (), name: str | None = None,
    ) -> None:
        set_field(self, "role", role)
        set_field(self, "parts", parts)
        set_field(self, "name", name)

    @classmethod
    def system(cls, text: str) -> Message:
        if cls is Message:
            return new_message("system", (text_part(text),), None)
        return cls(role="system", parts=(TextPart(text=text),))

    @classmethod
    def user(cls, text: str, *media: MediaPart, name: str | None = None) -> Message:
        if cls is Message:
            return new_message("user", (text_part(text), *media), name)
        return cls(role="user", parts=(TextPart(text=text), *media), name=name)

    @classmethod
    def assistant(cls, text: str, *, name: str | None = None) -> Message:
        if cls is Message:
            return new_message("assistant", (text_part(text),), name)
        return cls(role="assistant", parts=(TextPart(text=text),), name=name)

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def tool_calls(self) -> tuple[ToolCallPart, ...]:
        return tuple(p for p in self.parts if isinstance(p, ToolCallPart))


_new = object.__new__


def new_message(role: Role, parts: tuple[Part, ...], name: str | None) -> Message:
    """`Message(...)` by a positional factory (`agentloom._record`): per model call."""
    this: Any = _new(TWINS[Message])
    this.role = role
    this.parts = parts
    this.name = name
    this.__class__ = Message
    return this  # type: ignore[no-any-return]


def text_part(text: str) -> TextPart:
    """`TextPart(text=text)` by a positional factory."""
    this: Any = _new(TWINS[TextPart])
    this.text = text
    this.kind = "text"
    this.__class__ = TextPart
    return this  # type: ignore[no-any-return]


def _add(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return a + b


@frozen_record
class Usage(FrozenRecord):
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
        this = thaw(self)
        this.input_tokens = input_tokens
        this.output_tokens = output_tokens
        this.cache_read_tokens = cache_read_tokens
        this.cache_write_tokens = cache_write_tokens
        this.reasoning_tokens = reasoning_tokens
        this.cost_usd = cost_usd
        this.input_includes_cached = input_includes_cached
        this.cost_estimated = cost_estimated
        freeze(this)

    def __add__(self, other: Usage) -> Usage:
        cost: Decimal | None
        if self.cost_usd is None:
            cost = other.cost_usd
        elif other.cost_usd is None:
            cost = self.cost_usd
        else:
            cost = self.cost_usd + other.cost_usd
        return new_usage(
            _add(self.input_tokens, other.input_tokens),
            _add(self.output_tokens, other.output_tokens),
            _add(self.cache_read_tokens, other.cache_read_tokens),
            _add(self.cache_write_tokens, other.cache_write_tokens),
            _add(self.reasoning_tokens, other.reasoning_tokens),
            cost,
            (self.input_includes_cached if other.input_includes_cached is None
             else other.input_includes_cached),
            self.cost_estimated or other.cost_estimated,
        )

    @property
    def total_tokens(self) -> int | None:
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return (self.input_tokens or 0) + (self.output_tokens or 0)

    def with_cost(self, cost: Decimal | None) -> Usage:
        """This usage priced from the price table (`cost_estimated`)."""
        return new_usage(
            self.input_tokens, self.output_tokens, self.cache_read_tokens,
            self.cache_write_tokens, self.reasoning_tokens, cost, self.input_includes_cached,
            cost is not None,
        )


def _no_parameters() -> dict[str, Any]:
    return {"type": "object", "properties": {}}


@frozen_record
class ToolSpec(FrozenRecord):
    """What the model sees of a tool: its name, description and JSON Schema parameters."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=lambda: _no_parameters())

    def __init__(
        self, *, name: str, description: str = "", parameters: dict[str, Any] = FACTORY,
    ) -> None:
        set_field(self, "name", name)
        set_field(self, "description", description)
        set_field(self, "parameters", _no_parameters() if parameters is FACTORY else parameters)


@frozen_record
class NamedToolChoice(FrozenRecord):
    """Forces the model to call the tool `name`."""

    name: str

    def __init__(self, *, name: str) -> None:
        set_field(self, "name", name)


ToolChoice: TypeAlias = Literal["auto", "none", "required"] | NamedToolChoice


@frozen_record
class ReasoningConfig(FrozenRecord):
    """The step's `thinking` block (spec 000, Reasoning)."""

    enabled: bool = False
    budget_tokens: int | None = None
    level: Literal["low", "medium", "high"] | None = None
    capture: bool = True

    def __init__(
        self, *, enabled: bool = False, budget_tokens: int | None = None,
        level: Literal["low", "medium", "high"] | None = None, capture: bool = True,
    ) -> None:
        set_field(self, "enabled", enabled)
        set_field(self, "budget_tokens", budget_tokens)
        set_field(self, "level", level)
        set_field(self, "capture", capture)


@frozen_record
class ResponseFormat(FrozenRecord):
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
        set_field(self, "kind", kind)
        set_field(self, "schema", schema)
        set_field(self, "name", name)
        set_field(self, "strict", strict)
        set_field(self, "description", description)


@frozen_record
class ModelRequest(FrozenRecord):
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
        vendor_tools: tuple[dict[str, Any], ...] = (), extra: dict[str, Any] = FACTORY,
        headers: dict[str, str] = FACTORY, prefill: str | None = None,
        cache: Literal["auto"] | None = None,
    ) -> None:
        this = thaw(self)
        this.model = model
        this.messages = messages
        this.temperature = temperature
        this.max_tokens = max_tokens
        this.tools = tools
        this.tool_choice = tool_choice
        this.reasoning = reasoning
        this.response_format = response_format
        this.stream = stream
        this.vendor_tools = vendor_tools
        this.extra = {} if extra is FACTORY else extra
        this.headers = {} if headers is FACTORY else headers
        this.prefill = prefill
        this.cache = cache
        freeze(this)

    def replace(self, **changes: Any) -> ModelRequest:
        return dataclasses.replace(self, **changes)


@frozen_record
class ModelResponse(FrozenRecord):
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
        this = thaw(self)
        this.parts = parts
        this.usage = usage
        this.finish_reason = finish_reason
        this.model = model
        this.provider = provider
        this.response_id = response_id
        this.time_to_first_token = time_to_first_token
        freeze(this)

    @property
    def text(self) -> str:
        parts = self.parts
        if len(parts) == 1:
            # Most replies are one piece of text: joined alone (the same str), no generator.
            part = parts[0]
            return "".join((part.text,)) if isinstance(part, TextPart) else ""
        return "".join(p.text for p in parts if isinstance(p, TextPart))

    @property
    def tool_calls(self) -> tuple[ToolCallPart, ...]:
        for part in self.parts:
            if isinstance(part, ToolCallPart):
                return tuple(p for p in self.parts if isinstance(p, ToolCallPart))
        return ()  # most replies call no tool: no generator to find that out

    @property
    def reasoning(self) -> str | None:
        texts = [p.text for p in self.parts if isinstance(p, ReasoningPart) and p.text]
        return "".join(texts) if texts else None

    def to_message(self, *, name: str | None = None) -> Message:
        return new_message("assistant", self.parts, name)


# Positional factories (`agentloom._record`) of the records every model call makes: a
# decoder's usage and reply, and the router's priced copy of them. Each is equal to the
# keyword call of its class with the same values (tests/loop/test_positional_factories.py).


def new_usage(
    input_tokens: int | None, output_tokens: int | None, cache_read_tokens: int | None,
    cache_write_tokens: int | None, reasoning_tokens: int | None, cost_usd: Decimal | None,
    input_includes_cached: bool | None, cost_estimated: bool,
) -> Usage:
    """`Usage(...)` with every field given, in order."""
    this: Any = _new(TWINS[Usage])
    this.input_tokens = input_tokens
    this.output_tokens = output_tokens
    this.cache_read_tokens = cache_read_tokens
    this.cache_write_tokens = cache_write_tokens
    this.reasoning_tokens = reasoning_tokens
    this.cost_usd = cost_usd
    this.input_includes_cached = input_includes_cached
    this.cost_estimated = cost_estimated
    this.__class__ = Usage
    return this  # type: ignore[no-any-return]


def new_response(
    parts: tuple[Part, ...], usage: Usage, finish_reason: str | None, model: str,
    provider: str, response_id: str | None, time_to_first_token: float | None,
) -> ModelResponse:
    """`ModelResponse(...)` with every field given, in order."""
    this: Any = _new(TWINS[ModelResponse])
    this.parts = parts
    this.usage = usage
    this.finish_reason = finish_reason
    this.model = model
    this.provider = provider
    this.response_id = response_id
    this.time_to_first_token = time_to_first_token
    this.__class__ = ModelResponse
    return this  # type: ignore[no-any-return]


# --- stream events (the others are in agentloom._events) -------------------------------


@frozen_record
class UsageEvent(FrozenRecord):
    """Usage so far. Later events override earlier fields that they report (not None)."""

    usage: Usage
    kind: Literal["usage"] = "usage"

    def __init__(self, *, usage: Usage, kind: Literal["usage"] = "usage") -> None:
        set_field(self, "usage", usage)
        set_field(self, "kind", kind)


StreamEvent: TypeAlias = (
    TextDelta | ReasoningDelta | ToolCallDelta | UsageEvent | FinishEvent | VendorEvent
)


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


__all__ = [
    "AudioPart", "DocumentPart", "FinishEvent", "ImagePart", "MediaPart", "Message",
    "ModelRequest", "ModelResponse", "NamedToolChoice", "Part", "ReasoningConfig",
    "ReasoningDelta", "ReasoningPart", "ResponseFormat", "Role", "StreamEvent", "TextDelta",
    "TextPart", "ToolCallDelta", "ToolCallPart", "ToolChoice", "ToolResultPart", "ToolSpec",
    "Usage", "UsageEvent", "VendorEvent", "VendorPart", "message_from_dict",
    "message_to_dict", "part_from_dict", "part_to_dict",
]
