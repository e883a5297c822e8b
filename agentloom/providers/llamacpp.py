"""llama.cpp's server dialect: Chat Completions, with tool calls made reliable by a schema.

Small local models whose chat template knows no tools (the embedded SmolLM2 among them)
ignore `tools` and answer in prose, even under `tool_choice: required`. llama.cpp can
constrain a reply to a JSON schema, so a request that carries tools goes out as:

- the tools described in the system prompt, and no `tools` field;
- a `response_format` schema that admits `{"tool": NAME, "arguments": {...}}` for each
  tool the model may call (the arguments by that tool's own parameter schema), plus
  `{"answer": ...}` when it may also answer (`tool_choice: auto`);
- earlier tool calls and results rewritten as the plain turns the template can render.

The constrained reply is decoded back into an ordinary tool call or answer, so the loop
sees what any provider gives it, and a forced call always parses. Requests without tools
are plain Chat Completions; a `response_schema` is enforced by the same mechanism
natively. No I/O here, like every wire protocol.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from agentloom import _jsontext
from agentloom.messages import (
    FinishEvent,
    Message,
    ModelRequest,
    ModelResponse,
    NamedToolChoice,
    Part,
    ResponseFormat,
    StreamEvent,
    TextDelta,
    TextPart,
    ToolCallDelta,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
)
from agentloom.providers._base import Capabilities, Endpoint, StreamDecoder
from agentloom.providers.openai import PROTOCOL as CHAT_COMPLETIONS
from agentloom.transport import HttpRequest

DEFAULT_MAX_TOKENS = 512
"""A small model left unbounded runs on until its context fills (tens of seconds)."""

_CAPS = Capabilities(
    tools=True, forced_tool_choice=True, native_json_schema=True, image=False,
    image_url=False, pdf=False,
)
_SCHEMA_NAME = "reply"


def _allowed_tools(request: ModelRequest) -> tuple[ToolSpec, ...]:
    choice = request.tool_choice
    if isinstance(choice, NamedToolChoice):
        return tuple(t for t in request.tools if t.name == choice.name)
    return request.tools


MAX_STRING_CHARS = 400
"""The longest string the constraint lets a small model write where the schema sets no
`maxLength`: left unbounded, a 135M model can repeat itself inside a string until
`max_tokens` cuts the JSON off. The reply is still validated against the caller's own
schema; 400 characters keep two such strings inside the default 512 tokens."""


def bounded(schema: Any) -> Any:
    """A copy of a JSON schema whose unbounded strings get `maxLength`, for the constraint
    only (what is validated stays the caller's schema)."""
    if isinstance(schema, list):
        return [bounded(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: bounded(v) for k, v in schema.items()}
    types = schema.get("type")
    is_string = types == "string" or (isinstance(types, list) and "string" in types)
    if is_string and not {"maxLength", "enum", "const"} & set(schema):
        out["maxLength"] = MAX_STRING_CHARS
    return out


def _constrained(request: ModelRequest) -> bool:
    return bool(request.tools) and request.tool_choice != "none"


def reply_schema(request: ModelRequest) -> dict[str, Any]:
    """The JSON schema a reply to a request with tools must match."""
    options: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {"tool": {"const": tool.name},
                           "arguments": bounded(tool.parameters)},
            "required": ["tool", "arguments"],
        }
        for tool in _allowed_tools(request)
    ]
    if request.tool_choice == "auto":
        fmt = request.response_format
        answer: dict[str, Any] = (
            bounded(fmt.schema) if fmt is not None and fmt.schema is not None
            else {"type": "string"}  # free text: a cut-off answer is kept as it came
        )
        options.append(
            {"type": "object", "properties": {"answer": answer}, "required": ["answer"]}
        )
    return options[0] if len(options) == 1 else {"anyOf": options}


def _tools_prompt(request: ModelRequest) -> str:
    lines = ["You can call these tools:"]
    for tool in _allowed_tools(request):
        params = json.dumps(tool.parameters, ensure_ascii=False, separators=(",", ":"))
        lines.append(f"- {tool.name}: {tool.description or tool.name}. Arguments: {params}")
    lines.append('To call a tool, reply with {"tool": "<name>", "arguments": {...}}.')
    if request.tool_choice == "auto":
        lines.append('To answer without a tool, reply with {"answer": "<your answer>"}.')
    else:
        lines.append("You must call a tool now.")
    return "\n".join(lines)


def _plain_turn(message: Message) -> Message:
    """A turn with tool calls or results, as text the chat template can render."""
    if message.role == "tool" or any(isinstance(p, ToolResultPart) for p in message.parts):
        texts = [
            f"Result of {p.name}: {p.content}" if isinstance(p, ToolResultPart) else p.text
            for p in message.parts
            if isinstance(p, ToolResultPart | TextPart)
        ]
        return Message(role="user", parts=(TextPart(text="\n".join(texts)),))
    calls = message.tool_calls
    if message.role == "assistant" and calls:
        text = "\n".join(
            json.dumps({"tool": c.name, "arguments": _arguments(c.arguments)},
                       ensure_ascii=False)
            for c in calls
        )
        return Message(role="assistant", parts=(TextPart(text=text),), name=message.name)
    return message


def _arguments(raw: str) -> Any:
    try:
        return _jsontext.loads(raw) if raw else {}
    except ValueError:
        return raw


def constrained_request(request: ModelRequest) -> ModelRequest:
    """The plain Chat Completions request that stands for one with tools."""
    messages = [_plain_turn(m) for m in request.messages]
    hint = _tools_prompt(request)
    if messages and messages[0].role == "system":
        first = messages[0]
        messages[0] = Message(role="system", parts=(TextPart(text=f"{first.text}\n\n{hint}"),))
    else:
        messages.insert(0, Message.system(hint))
    return request.replace(
        messages=tuple(messages), tools=(), tool_choice="auto",
        response_format=ResponseFormat(kind="json_schema", schema=reply_schema(request),
                                       name=_SCHEMA_NAME),
    )


def decode_reply(text: str) -> tuple[tuple[Part, ...], bool]:
    """Parts for a constrained reply's text, and whether it is a tool call. Text that is
    not the expected object (a reply cut off at max_tokens) is kept as it came."""
    try:
        obj = _jsontext.loads(text)
    except ValueError:
        return ((TextPart(text=text),) if text else ()), False
    if isinstance(obj, dict) and isinstance(obj.get("tool"), str):
        args = obj.get("arguments", {})
        call = ToolCallPart(id="call_0", name=obj["tool"],
                            arguments=json.dumps(args, ensure_ascii=False))
        return (call,), True
    if isinstance(obj, dict) and "answer" in obj:
        answer = obj["answer"]
        text = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
        return (TextPart(text=text),), False
    return (TextPart(text=text),), False


def _with_default_max_tokens(request: ModelRequest) -> ModelRequest:
    if request.max_tokens is not None:
        return request
    return request.replace(max_tokens=DEFAULT_MAX_TOKENS)


class LlamaCppProtocol:
    """`PROTOCOL`: llama.cpp's server (the embedded model, or one you run yourself)."""

    name = "llamacpp"

    def capabilities(self, model: str) -> Capabilities:
        return _CAPS

    def serves(self, model: str) -> bool:
        return False  # a llama.cpp server serves what it was started with: pin it

    def encode(self, request: ModelRequest, endpoint: Endpoint) -> HttpRequest:
        request = _with_default_max_tokens(request)
        if _constrained(request):
            request = constrained_request(request)
        else:
            fmt = request.response_format
            if fmt is not None and fmt.schema is not None:
                request = request.replace(response_format=replace(fmt, schema=bounded(fmt.schema)))
        return CHAT_COMPLETIONS.encode(request, endpoint)

    def decode(self, body: bytes, request: ModelRequest, endpoint: Endpoint) -> ModelResponse:
        response = CHAT_COMPLETIONS.decode(body, request, endpoint)
        if not _constrained(request):
            return response
        parts, is_call = decode_reply(response.text)
        others = tuple(p for p in response.parts if not isinstance(p, TextPart))
        return replace(response, parts=others + parts,
                       finish_reason="tool_calls" if is_call else response.finish_reason)

    def stream_decoder(self, request: ModelRequest, endpoint: Endpoint) -> StreamDecoder:
        inner = CHAT_COMPLETIONS.stream_decoder(request, endpoint)
        return ConstrainedStreamDecoder(inner) if _constrained(request) else inner


class ConstrainedStreamDecoder:
    """Holds a constrained reply's text until the end: only then is it known to be a tool
    call or an answer. Other events (usage, reasoning) pass through as they come."""

    __slots__ = ("_finish", "_inner", "_text")

    def __init__(self, inner: StreamDecoder) -> None:
        self._inner = inner
        self._text: list[str] = []
        self._finish: FinishEvent | None = None

    def feed(self, data: bytes) -> list[StreamEvent]:
        return self._hold(self._inner.feed(data))

    def close(self) -> list[StreamEvent]:
        out = self._hold(self._inner.close())
        parts, is_call = decode_reply("".join(self._text))
        for part in parts:
            if isinstance(part, ToolCallPart):
                out.append(ToolCallDelta(index=0, id=part.id, name=part.name,
                                         arguments=part.arguments))
            elif isinstance(part, TextPart):
                out.append(TextDelta(text=part.text))
        if self._finish is not None:
            out.append(replace(self._finish, finish_reason="tool_calls") if is_call
                       else self._finish)
        return out

    def _hold(self, events: list[StreamEvent]) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        for event in events:
            if isinstance(event, TextDelta):
                self._text.append(event.text)
            elif isinstance(event, FinishEvent):
                self._finish = event
            else:
                out.append(event)
        return out


PROTOCOL = LlamaCppProtocol()
