"""Anthropic Messages replies decoded: a whole body into a `ModelResponse`, an SSE stream
into stream events (the rules they follow are listed in `agentloom.providers.anthropic`,
which answers for these names). The prefill the request put in front of the reply is put
back in front of its text, as the encoder decided it (`effective_prefill`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from agentloom import _jsontext
from agentloom.errors import ProviderError
from agentloom.messages import (
    FinishEvent,
    ModelRequest,
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
    VendorPart,
)
from agentloom.providers._anthropic_encode import effective_prefill
from agentloom.providers._base import Endpoint
from agentloom.providers._common import bad_shape, distinct_call_ids, not_text, token_count
from agentloom.providers._json import load_body
from agentloom.providers._sse import SSEParser

if TYPE_CHECKING:
    from agentloom.providers._sse import SSEEvent

_RETRYABLE_ERRORS = frozenset({"overloaded_error", "api_error", "rate_limit_error"})
_ERROR_STATUS = {"invalid_request_error": 400, "authentication_error": 401,
                 "permission_error": 403, "not_found_error": 404, "request_too_large": 413,
                 "rate_limit_error": 429, "api_error": 500, "overloaded_error": 529}
_CLIENT_BLOCKS = frozenset({"text", "tool_use", "thinking", "redacted_thinking"})
"""Every other block (`server_tool_use`, `mcp_tool_use`, `web_search_tool_result`, ...)
is the provider's own: kept whole as a `VendorPart` and sent back unchanged."""


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
