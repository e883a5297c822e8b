"""Gemini replies decoded: a whole `generateContent` body into a `ModelResponse`, an SSE
stream of `GenerateContentResponse` chunks into stream events, through the one chunk
reader both share (the rules they follow are listed in `agentloom.providers.gemini`,
which answers for these names).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

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
from agentloom.providers._base import Endpoint
from agentloom.providers._common import (
    bad_shape,
    distinct_call_ids,
    not_text,
    stable_call_id,
    token_count,
)
from agentloom.providers._json import load_body
from agentloom.providers._sse import SSEParser

if TYPE_CHECKING:
    from agentloom.providers._sse import SSEEvent

_VENDOR_KEYS = ("executableCode", "codeExecutionResult", "toolCall", "toolResponse")
"""Parts of Gemini's own (server-side) tools."""
_RETRYABLE_STATUS = frozenset({"RESOURCE_EXHAUSTED", "UNAVAILABLE", "INTERNAL",
                               "DEADLINE_EXCEEDED"})


def decode_usage(raw: dict[str, Any] | None) -> Usage:
    raw = raw if isinstance(raw, dict) else {}
    candidates = token_count(raw.get("candidatesTokenCount"))
    thoughts = token_count(raw.get("thoughtsTokenCount"))
    output = None if candidates is None and thoughts is None else (
        (candidates or 0) + (thoughts or 0))
    prompt = token_count(raw.get("promptTokenCount"))
    tool_prompt = token_count(raw.get("toolUsePromptTokenCount"))
    # The prompts of Gemini's own tools (search, code execution) are billed as input.
    inp = None if prompt is None and tool_prompt is None else (prompt or 0) + (tool_prompt or 0)
    return Usage(
        input_tokens=inp,
        output_tokens=output,
        cache_read_tokens=token_count(raw.get("cachedContentTokenCount")),
        cache_write_tokens=None,
        reasoning_tokens=thoughts,
        input_includes_cached=True,
    )


def _error(provider: str, model: str, payload: dict[str, Any]) -> ProviderError:
    err = payload.get("error") or {}
    status = str(err.get("status", ""))
    code = err.get("code")
    return ProviderError(
        f"gemini error {status or code}: {err.get('message', '')}",
        provider=provider, model=model, status=code if isinstance(code, int) else None,
        phase="body", request_sent=True, retryable=status in _RETRYABLE_STATUS,
        body=json.dumps(payload)[:500],
    )


class _Chunks:
    """Turns response chunks (one for `generateContent`, many when streamed) into events;
    it counts function calls across chunks so that their indexes and ids stay stable."""

    def __init__(self, provider: str, model: str) -> None:
        self.provider = provider
        self.model = model
        self.calls = 0

    def events(self, data: Any) -> list[StreamEvent]:
        if not isinstance(data, dict):
            raise bad_shape(self.provider, self.model, "a chunk is not an object")
        if "error" in data:
            raise _error(self.provider, self.model, data)
        out: list[StreamEvent] = []
        candidates = data.get("candidates") or []
        candidate = candidates[0] if candidates else {}
        for part in (candidate.get("content") or {}).get("parts") or []:
            self._part(part, out)
        if "usageMetadata" in data:
            out.append(UsageEvent(usage=decode_usage(data["usageMetadata"])))
        finish = candidate.get("finishReason")
        if finish is None and not candidates:
            finish = (data.get("promptFeedback") or {}).get("blockReason")
        out.append(FinishEvent(finish_reason=finish, model=data.get("modelVersion"),
                               response_id=data.get("responseId")))
        return out

    def _part(self, part: dict[str, Any], out: list[StreamEvent]) -> None:
        signature = part.get("thoughtSignature")
        if not part.get("thought") and any(k in part for k in _VENDOR_KEYS):
            out.append(VendorEvent(part=VendorPart(provider="gemini", data=part)))
            return
        if part.get("thought"):
            out.append(ReasoningDelta(text=part.get("text", ""), signature=signature))
            return
        if signature:
            out.append(ReasoningDelta(signature=signature))
        if "functionCall" in part:
            call = part["functionCall"]
            name = call.get("name", "")
            if type(name) is not str:
                raise not_text("a tool call's name", name)
            args = json.dumps(call.get("args") or {}, ensure_ascii=False, sort_keys=True)
            call_id = call.get("id")
            if not call_id or type(call_id) is not str:  # missing, or not text: made up
                call_id = stable_call_id(self.calls, name, args)
            out.append(ToolCallDelta(index=self.calls, id=call_id, name=name, arguments=args))
            self.calls += 1
        elif part.get("text"):
            out.append(TextDelta(text=part["text"]))


def _parts_from_events(events: list[StreamEvent]) -> tuple[Part, ...]:
    """Non-streamed replies keep part order exactly (a signature stays by its part). Text
    or reasoning that is not text is a ValueError, as the stream's assembler makes it;
    calls that share an id get distinct ones, as there."""
    parts: list[Part] = []
    ids: set[str] = set()
    repeated = False
    for event in events:
        if isinstance(event, TextDelta):
            if type(event.text) is not str:
                raise not_text("a text part", event.text)
            parts.append(TextPart(text=event.text))
        elif isinstance(event, ReasoningDelta):
            text, signature = event.text, event.signature
            if type(text) is not str:
                raise not_text("a thought", text)
            if signature is not None and type(signature) is not str:
                raise not_text("a thought signature", signature)
            parts.append(ReasoningPart(text=text, signature=signature))
        elif isinstance(event, ToolCallDelta):
            call_id = event.id or ""
            if call_id in ids:
                repeated = True
            ids.add(call_id)
            parts.append(ToolCallPart(id=call_id, name=event.name or "",
                                      arguments=event.arguments))
        elif isinstance(event, VendorEvent):
            parts.append(event.part)
    if repeated:
        distinct_call_ids(parts, ids)
    return tuple(parts)


def decode(body: bytes, request: ModelRequest, endpoint: Endpoint) -> ModelResponse:
    data = load_body(body)
    events = _Chunks(endpoint.name, request.model).events(data)
    finish = next(e for e in events if isinstance(e, FinishEvent))
    usage = next((e.usage for e in events if isinstance(e, UsageEvent)), Usage())
    reason, model, response_id = finish.finish_reason, finish.model, finish.response_id
    return ModelResponse(
        parts=_parts_from_events(events),
        usage=usage,
        # Metadata that is not text reads as unknown: the reply itself stands.
        finish_reason=reason if type(reason) is str else None,
        model=model if model and type(model) is str else request.model,
        provider=endpoint.name,
        response_id=response_id if type(response_id) is str else None,
    )


class GeminiStreamDecoder:
    """SSE `data:` lines, each a whole `GenerateContentResponse` chunk."""

    def __init__(self, request: ModelRequest, endpoint: Endpoint) -> None:
        self._sse = SSEParser()
        self._chunks = _Chunks(endpoint.name, request.model)

    def feed(self, data: bytes) -> list[StreamEvent]:
        return self._handle(self._sse.feed(data))

    def close(self) -> list[StreamEvent]:
        return self._handle(self._sse.close())

    def _handle(self, events: list[SSEEvent]) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        for event in events:
            out.extend(self._chunks.events(load_body(event.data)))
        return out
