"""The Anthropic Messages wire protocol (`POST /v1/messages`), plain and streamed (SSE).

Pure translation, no I/O. What the format forces on us, and how we answer:
- `max_tokens` is required: 4096 when unset, plus the thinking budget when thinking is on.
- Thinking blocks are signed; their signature (or a redacted block's opaque data) is kept
  in `ReasoningPart` and sent back unchanged on the next turn of a tool loop. Reasoning
  parts without a signature (from another provider) are not sent: Anthropic refuses them.
- With thinking on, `temperature` is not sent: the API only accepts its default then.
  `capture_reasoning: false` asks for `display: omitted` (signatures, no text).
- Structured output is native where the model has it (`output_config.format`, a JSON
  schema the reply is decoded against; see `NATIVE_SCHEMA_MODELS`). Elsewhere, or for a
  bare JSON object, the schema goes in the system prompt and the reply is prefilled with
  `{` (not with thinking on, which refuses prefill); the prefill is put back in front of
  the returned text, so callers see the whole JSON. `structured_mode` says which.
- Consecutive turns of one role (tool results, then a user turn) merge into one turn, as
  the API wants tool results grouped in the user turn that follows the calls.
- `cache: auto` puts `cache_control` breakpoints (at most `MAX_BREAKPOINTS`) on the last
  tool, the system prompt and the last block of the conversation, so each turn of a tool
  loop reads the prefix the turn before wrote.
- Usage: `input_tokens` excludes cached tokens (`input_includes_cached=False`); reasoning
  tokens are counted inside `output_tokens` and not reported apart (None).
"""

from __future__ import annotations

import base64
import dataclasses
import json
from typing import TYPE_CHECKING, Any

from agentloom import _jsontext
from agentloom.errors import ConfigError, ProviderError
from agentloom.messages import (
    AudioPart,
    DocumentPart,
    FinishEvent,
    ImagePart,
    Message,
    ModelRequest,
    ModelResponse,
    NamedToolChoice,
    Part,
    ReasoningConfig,
    ReasoningDelta,
    ReasoningPart,
    StreamEvent,
    TextDelta,
    TextPart,
    ToolCallDelta,
    ToolCallPart,
    ToolResultPart,
    Usage,
    UsageEvent,
    VendorEvent,
    VendorPart,
)
from agentloom.providers._base import Capabilities, Endpoint
from agentloom.providers._common import (
    bad_shape,
    build_http_request,
    distinct_call_ids,
    first_text_with_name,
    join_url,
    key_headers,
    loads_object,
    not_text,
    schema_instruction,
    system_text,
    token_count,
)
from agentloom.providers._json import load_body
from agentloom.providers._sse import SSEParser
from agentloom.providers.profiles import ANTHROPIC as _CAPS
from agentloom.providers.profiles import ANTHROPIC_NATIVE_SCHEMA_MODELS as NATIVE_SCHEMA_MODELS
from agentloom.transport import HttpRequest

if TYPE_CHECKING:
    from agentloom.providers._sse import SSEEvent

API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096
MIN_BUDGET = 1024
_RETRYABLE_ERRORS = frozenset({"overloaded_error", "api_error", "rate_limit_error"})
_ERROR_STATUS = {"invalid_request_error": 400, "authentication_error": 401,
                 "permission_error": 403, "not_found_error": 404, "request_too_large": 413,
                 "rate_limit_error": 429, "api_error": 500, "overloaded_error": 529}
MAX_BREAKPOINTS = 4
"""The API's limit on `cache_control` marks in one request."""
_EPHEMERAL = {"type": "ephemeral"}
_UNMARKABLE = frozenset({"thinking", "redacted_thinking"})
_CLIENT_BLOCKS = frozenset({"text", "tool_use", "thinking", "redacted_thinking"})
"""Every other block (`server_tool_use`, `mcp_tool_use`, `web_search_tool_result`, ...)
is the provider's own: kept whole as a `VendorPart` and sent back unchanged."""

_NATIVE_CAPS = dataclasses.replace(_CAPS, native_json_schema=True)
# Keywords the schema format refuses; they only narrow a shape, and the caller validates
# the reply against the full schema anyway.
_NARROWING = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                        "multipleOf", "minLength", "maxLength", "maxItems", "minProperties",
                        "maxProperties", "pattern", "format"})


# --- load-time rules ----------------------------------------------------------------------


def check_reasoning_settings(
    model: str, max_tokens: int | None, reasoning: ReasoningConfig | None
) -> None:
    """The workflow loader's check for a Claude step: thinking needs `budget_tokens`,
    and a set `max_tokens` must be above it (the budget is part of the reply's limit)."""
    if reasoning is None or not reasoning.enabled or not PROTOCOL.serves(model):
        return
    budget = reasoning.budget_tokens
    if budget is None:
        raise ConfigError(
            f"model {model!r}: thinking.enabled on a Claude model needs thinking.budget_tokens"
        )
    if budget < MIN_BUDGET:
        raise ConfigError(
            f"model {model!r}: thinking.budget_tokens must be at least {MIN_BUDGET} "
            f"for Claude, got {budget}"
        )
    if max_tokens is not None and max_tokens <= budget:
        raise ConfigError(
            f"model {model!r}: max_tokens ({max_tokens}) must be above "
            f"thinking.budget_tokens ({budget}); leave max_tokens unset to send "
            f"{budget + DEFAULT_MAX_TOKENS}"
        )


def thinking_on(request: ModelRequest) -> bool:
    return request.reasoning is not None and request.reasoning.enabled


def structured_mode(request: ModelRequest) -> str | None:
    """How a JSON reply is asked for: `native` (the API's JSON-schema output format) or
    `prompted` (the schema in the system prompt, plus the `{` prefill); None: no JSON."""
    fmt = request.response_format
    if fmt is None:
        return None
    native = fmt.kind == "json_schema" and fmt.schema is not None
    if native and request.model.startswith(NATIVE_SCHEMA_MODELS):
        return "native"
    return "prompted"


def effective_prefill(request: ModelRequest) -> str | None:
    """What the assistant turn starts with: the caller's, else `{` for a prompted JSON
    reply."""
    if request.prefill is not None:
        return request.prefill
    if structured_mode(request) == "prompted" and not thinking_on(request):
        return "{"
    return None


def to_anthropic_schema(schema: Any, depth: int = 0) -> Any:
    """A copy in the dialect of the output format: objects closed
    (`additionalProperties: false`), narrowing keywords dropped."""
    if depth > 64:
        return {}
    if isinstance(schema, list):
        return [to_anthropic_schema(v, depth + 1) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _NARROWING and not isinstance(value, dict):
            continue
        if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
            out[key] = {k: to_anthropic_schema(v, depth + 1) for k, v in value.items()}
        else:
            out[key] = to_anthropic_schema(value, depth + 1)
    if out.get("type") == "object" or "properties" in out:
        out["additionalProperties"] = False
    return out


# --- encode ---------------------------------------------------------------------------------


def _media_block(part: ImagePart | DocumentPart | AudioPart, model: str) -> dict[str, Any]:
    if isinstance(part, AudioPart):
        raise ConfigError(f"anthropic model {model!r} does not take audio attachments")
    kind = "image" if isinstance(part, ImagePart) else "document"
    if part.data is not None:
        source: dict[str, Any] = {
            "type": "base64",
            "media_type": part.media_type,
            "data": base64.b64encode(part.data).decode("ascii"),
        }
    elif part.url is not None:
        source = {"type": "url", "url": part.url}
    else:
        raise ConfigError(f"an {kind} attachment has neither data nor url")
    return {"type": kind, "source": source}


def _block(part: Part, model: str) -> dict[str, Any] | None:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text} if part.text else None
    if isinstance(part, (ImagePart, DocumentPart, AudioPart)):
        return _media_block(part, model)
    if isinstance(part, ToolCallPart):
        return {"type": "tool_use", "id": part.id, "name": part.name,
                "input": loads_object(part.arguments)}
    if isinstance(part, ToolResultPart):
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": part.call_id,
                                 "content": part.content}
        if part.is_error:
            block["is_error"] = True
        return block
    if isinstance(part, VendorPart):
        return dict(part.data) if part.provider == "anthropic" else None
    if isinstance(part, ReasoningPart):
        if part.redacted is not None:
            return {"type": "redacted_thinking", "data": part.redacted}
        if part.signature is not None:
            return {"type": "thinking", "thinking": part.text, "signature": part.signature}
        return None
    return None


def encode_messages(messages: tuple[Message, ...], model: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks = [b for b in (_block(p, model) for p in first_text_with_name(message)) if b]
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    for turn in out:
        # Tool results must open the user turn that answers the calls.
        if turn["role"] == "user":
            turn["content"].sort(key=lambda b: b["type"] != "tool_result")
    return out


def _tool_choice(choice: Any) -> dict[str, Any]:
    if isinstance(choice, NamedToolChoice):
        return {"type": "tool", "name": choice.name}
    return {"auto": {"type": "auto"}, "required": {"type": "any"},
            "none": {"type": "none"}}[choice]


def max_tokens_for(request: ModelRequest) -> int:
    if request.max_tokens is not None:
        return request.max_tokens
    if thinking_on(request) and request.reasoning and request.reasoning.budget_tokens:
        return request.reasoning.budget_tokens + DEFAULT_MAX_TOKENS
    return DEFAULT_MAX_TOKENS


def encode_body(request: ModelRequest) -> dict[str, Any]:
    body: dict[str, Any] = {"model": request.model, "max_tokens": max_tokens_for(request)}
    system = system_text(request.messages)
    mode = structured_mode(request)
    instruction = schema_instruction(request) if mode == "prompted" else None
    if mode == "native" and request.response_format is not None:
        body["output_config"] = {"format": {
            "type": "json_schema", "schema": to_anthropic_schema(request.response_format.schema)}}
    if instruction:
        system = f"{system}\n\n{instruction}" if system else instruction
    if system:
        body["system"] = system
    messages = encode_messages(request.messages, request.model)
    if request.cache == "auto":
        _mark_cache(body, messages)
    prefill = effective_prefill(request)
    if prefill:
        if messages and messages[-1]["role"] == "assistant":
            messages[-1]["content"].append({"type": "text", "text": prefill})
        else:
            messages.append({"role": "assistant", "content": [{"type": "text", "text": prefill}]})
    body["messages"] = messages
    reasoning = request.reasoning
    if reasoning is not None and reasoning.enabled:
        if reasoning.budget_tokens is None:
            raise ConfigError(
                f"model {request.model!r}: thinking on a Claude model needs budget_tokens"
            )
        thinking: dict[str, Any] = {"type": "enabled",
                                    "budget_tokens": reasoning.budget_tokens}
        if not reasoning.capture:
            # The text is withheld but the signature still comes, for the tool loop.
            thinking["display"] = "omitted"
        body["thinking"] = thinking
    elif request.temperature is not None:
        body["temperature"] = request.temperature
    tools: list[dict[str, Any]] = [
        {"name": t.name, "description": t.description, "input_schema": t.parameters}
        for t in request.tools
    ]
    tools.extend(request.vendor_tools)
    if tools:
        if request.cache == "auto":
            tools[-1] = {**tools[-1], "cache_control": _EPHEMERAL}
        body["tools"] = tools
        body["tool_choice"] = _tool_choice(request.tool_choice)
    if request.stream:
        body["stream"] = True
    return body


def _mark_cache(body: dict[str, Any], messages: list[dict[str, Any]]) -> None:
    """Breakpoints on the system prompt and on the conversation's last markable block
    (before any prefill); the tools get theirs where they are encoded. Anthropic caches
    the whole prefix up to each mark: tools, then system, then the turns."""
    system = body.get("system")
    if isinstance(system, str) and system:
        body["system"] = [{"type": "text", "text": system, "cache_control": _EPHEMERAL}]
    for turn in reversed(messages):
        for i in range(len(turn["content"]) - 1, -1, -1):
            block = turn["content"][i]
            if block.get("type") not in _UNMARKABLE:
                turn["content"][i] = {**block, "cache_control": _EPHEMERAL}
                return


# --- decode ---------------------------------------------------------------------------------


def decode_usage(raw: dict[str, Any] | None) -> Usage:
    raw = raw if isinstance(raw, dict) else {}
    return Usage(
        input_tokens=token_count(raw.get("input_tokens")),
        output_tokens=token_count(raw.get("output_tokens")),
        cache_read_tokens=token_count(raw.get("cache_read_input_tokens")),
        cache_write_tokens=token_count(raw.get("cache_creation_input_tokens")),
        reasoning_tokens=None,
        input_includes_cached=False,
    )


def _error(provider: str, model: str, payload: dict[str, Any]) -> ProviderError:
    err = payload.get("error") or {}
    kind = str(err.get("type", "error"))
    return ProviderError(
        f"anthropic stream error {kind}: {err.get('message', '')}",
        provider=provider, model=model, status=_ERROR_STATUS.get(kind),
        phase="body", request_sent=True, retryable=kind in _RETRYABLE_ERRORS,
        body=json.dumps(payload)[:500],
    )


def decode_parts(content: list[dict[str, Any]], prefill: str | None) -> tuple[Part, ...]:
    """The content blocks as parts. Text, reasoning or a signature that is not text, or a
    tool call's name that is not, is a ValueError (the client's body error); a call's id
    that is not text reads as a missing one (`call_<block index>`, as a stream's)."""
    parts: list[Part] = []
    pending_prefill = prefill
    ids: set[str] = set()
    repeated = False
    for index, block in enumerate(content):
        kind = block.get("type")
        if kind == "text":
            text = block.get("text", "")
            if type(text) is not str:
                raise not_text("a text block", text)
            if pending_prefill:
                text, pending_prefill = pending_prefill + text, None
            parts.append(TextPart(text=text))
        elif kind == "tool_use":
            name, call_id = block["name"], block.get("id")
            if type(name) is not str:
                raise not_text("a tool call's name", name)
            if not call_id or type(call_id) is not str:
                call_id = f"call_{index}"
            if call_id in ids:
                repeated = True
            ids.add(call_id)
            parts.append(ToolCallPart(id=call_id, name=name,
                                      arguments=json.dumps(block.get("input", {}))))
        elif kind == "thinking":
            text, signature = block.get("thinking", ""), block.get("signature")
            if type(text) is not str:
                raise not_text("a thinking block", text)
            if signature is not None and type(signature) is not str:
                raise not_text("a thinking block's signature", signature)
            parts.append(ReasoningPart(text=text, signature=signature))
        elif kind == "redacted_thinking":
            data = block.get("data", "")
            if type(data) is not str:
                raise not_text("a redacted thinking block", data)
            parts.append(ReasoningPart(text="", redacted=data))
        elif isinstance(kind, str):
            parts.append(VendorPart(provider="anthropic", data=block))
    if repeated:
        distinct_call_ids(parts, ids)
    return tuple(parts)


def decode(body: bytes, request: ModelRequest, endpoint: Endpoint) -> ModelResponse:
    data = load_body(body)
    if isinstance(data, dict) and data.get("type") == "error":
        raise _error(endpoint.name, request.model, data)
    if not isinstance(data, dict) or not isinstance(data.get("content"), list):
        raise bad_shape(endpoint.name, request.model, "no content list")
    finish, model, response_id = data.get("stop_reason"), data.get("model"), data.get("id")
    return ModelResponse(
        parts=decode_parts(data["content"], effective_prefill(request)),
        usage=decode_usage(data.get("usage")),
        # Metadata that is not text reads as unknown: the reply itself stands.
        finish_reason=finish if type(finish) is str else None,
        model=model if model and type(model) is str else request.model,
        provider=endpoint.name,
        response_id=response_id if type(response_id) is str else None,
    )


class AnthropicStreamDecoder:
    """SSE events -> stream events. Block indexes key tool calls; the prefill is emitted
    once, in front of the first text."""

    def __init__(self, request: ModelRequest, endpoint: Endpoint) -> None:
        self._sse = SSEParser()
        self._provider = endpoint.name
        self._model = request.model
        self._prefill = effective_prefill(request)
        self._blocks: dict[int, str] = {}
        self._vendor: dict[int, tuple[dict[str, Any], list[str]]] = {}
        """Server-side blocks being streamed: the block and its input JSON so far."""

    def feed(self, data: bytes) -> list[StreamEvent]:
        return self._handle(self._sse.feed(data))

    def close(self) -> list[StreamEvent]:
        return self._handle(self._sse.close())

    def _text(self, text: str, out: list[StreamEvent]) -> None:
        if self._prefill:
            text, self._prefill = self._prefill + text, None
        if text:
            out.append(TextDelta(text=text))

    def _handle(self, events: list[SSEEvent]) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        for event in events:
            payload = load_body(event.data)
            if not isinstance(payload, dict):
                raise bad_shape(self._provider, self._model, "an SSE event is not an object")
            self._event(payload, out)
        return out

    def _event(self, payload: dict[str, Any], out: list[StreamEvent]) -> None:
        kind = payload.get("type")
        if kind == "message_start":
            message = payload.get("message") or {}
            out.append(UsageEvent(usage=decode_usage(message.get("usage"))))
            out.append(FinishEvent(finish_reason=None, model=message.get("model"),
                                   response_id=message.get("id")))
        elif kind == "content_block_start":
            index, block = payload.get("index", 0), payload.get("content_block") or {}
            btype = block.get("type", "")
            self._blocks[index] = btype
            if btype not in _CLIENT_BLOCKS:
                self._vendor[index] = (dict(block), [])
            elif btype == "text":
                self._text(block.get("text", ""), out)
            elif btype == "tool_use":
                initial = block.get("input")
                out.append(ToolCallDelta(index=index, id=block.get("id"), name=block.get("name"),
                                         arguments=json.dumps(initial) if initial else ""))
            elif btype == "thinking" and block.get("thinking"):
                out.append(ReasoningDelta(text=block["thinking"]))
            elif btype == "redacted_thinking":
                out.append(ReasoningDelta(redacted=block.get("data", "")))
        elif kind == "content_block_delta":
            index, delta = payload.get("index", 0), payload.get("delta") or {}
            dtype = delta.get("type")
            if dtype == "text_delta":
                self._text(delta.get("text", ""), out)
            elif dtype == "input_json_delta" and index in self._vendor:
                self._vendor[index][1].append(delta.get("partial_json", ""))
            elif dtype == "input_json_delta":
                out.append(ToolCallDelta(index=index, arguments=delta.get("partial_json", "")))
            elif dtype == "thinking_delta":
                out.append(ReasoningDelta(text=delta.get("thinking", "")))
            elif dtype == "signature_delta":
                out.append(ReasoningDelta(signature=delta.get("signature")))
        elif kind == "content_block_stop" and payload.get("index", 0) in self._vendor:
            block, pieces = self._vendor.pop(payload.get("index", 0))
            if "".join(pieces).strip():
                block["input"] = _jsontext.loads("".join(pieces))
            out.append(VendorEvent(part=VendorPart(provider="anthropic", data=block)))
        elif kind == "message_delta":
            delta = payload.get("delta") or {}
            usage = payload.get("usage")
            if usage:
                out.append(UsageEvent(usage=decode_usage(usage)))
            if delta.get("stop_reason") is not None:
                out.append(FinishEvent(finish_reason=delta["stop_reason"]))
        elif kind == "error":
            raise _error(self._provider, self._model, payload)
        # ping, other content_block_stop, message_stop and unknown events carry nothing we keep.


# --- the protocol object ------------------------------------------------------------------


class AnthropicProtocol:
    name = "anthropic"

    def capabilities(self, model: str) -> Capabilities:
        return _NATIVE_CAPS if model.startswith(NATIVE_SCHEMA_MODELS) else _CAPS

    def serves(self, model: str) -> bool:
        return model.startswith("claude-")

    def encode(self, request: ModelRequest, endpoint: Endpoint) -> HttpRequest:
        return build_http_request(
            request, endpoint,
            url=join_url(endpoint.base_url, "/v1", "/messages"),
            body=encode_body(request),
            headers={**key_headers(endpoint, "x-api-key"), "anthropic-version": API_VERSION},
        )

    def decode(self, body: bytes, request: ModelRequest, endpoint: Endpoint) -> ModelResponse:
        return decode(body, request, endpoint)

    def stream_decoder(self, request: ModelRequest, endpoint: Endpoint) -> AnthropicStreamDecoder:
        return AnthropicStreamDecoder(request, endpoint)


PROTOCOL = AnthropicProtocol()


def __getattr__(name: str) -> Any:
    # Migration face: the public AgentLoom's provider class of this name (agentloom.compat).
    if name == "AnthropicProvider":
        from agentloom.compat.gateway import AnthropicProvider

        return AnthropicProvider
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
