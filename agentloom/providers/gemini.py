"""The Google Gemini wire protocol (`generateContent`, `streamGenerateContent?alt=sse`).

Pure translation, no I/O. What the format forces on us, and how we answer:
- Turns are `contents` of `parts` with roles user/model; system turns become
  `systemInstruction`; tool results are `functionResponse` parts in a user turn. The
  contents open with a user turn (an empty one if the conversation has none first).
- Gemini sends no tool call ids: we derive stable ones from position, name and arguments,
  so the same reply always gets the same ids (recordings and replays agree).
- Thought signatures ride on parts. A thought part keeps its signature in its
  `ReasoningPart`; a signature on any other part becomes a text-less `ReasoningPart` in
  front of it. On the way back, signatures go onto the function calls in order (or onto
  the first text part of a turn without calls); thought text itself is not sent back.
- Parts of Gemini's own tools (`executableCode`, `codeExecutionResult`, `toolCall`,
  `toolResponse`) are kept whole, signature included, as `VendorPart`s and sent back as
  they came.
- `responseSchema` takes only a subset of JSON Schema: `to_gemini_schema` rewrites the
  rest; the caller validates the reply against the full schema.
- Usage: `input_tokens` is `promptTokenCount` plus `toolUsePromptTokenCount` (the
  prompts of Gemini's own tools), cached tokens included (`input_includes_cached=True`);
  `output_tokens` is candidates plus thoughts, so every provider's output count includes
  reasoning; `reasoning_tokens` says how many of them were thoughts.
"""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING, Any

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
    stable_call_id,
    system_text,
    token_count,
)
from agentloom.providers._json import load_body
from agentloom.providers._sse import SSEParser
from agentloom.providers.profiles import GEMINI as _CAPS
from agentloom.transport import HttpRequest

if TYPE_CHECKING:
    from agentloom.providers._sse import SSEEvent

_VENDOR_KEYS = ("executableCode", "codeExecutionResult", "toolCall", "toolResponse")
"""Parts of Gemini's own (server-side) tools."""
_RETRYABLE_STATUS = frozenset({"RESOURCE_EXHAUSTED", "UNAVAILABLE", "INTERNAL",
                               "DEADLINE_EXCEEDED"})


# --- encode ---------------------------------------------------------------------------------


def _media(part: ImagePart | DocumentPart | AudioPart, model: str) -> dict[str, Any]:
    if part.data is None:
        raise ConfigError(
            f"gemini model {model!r} cannot fetch a {part.kind} by URL; use fetch: local"
        )
    return {"inlineData": {"mimeType": part.media_type,
                           "data": base64.b64encode(part.data).decode("ascii")}}


def _model_parts(parts: list[Any]) -> list[dict[str, Any]]:
    """An assistant turn: thought text is dropped, signatures go back on the calls."""
    signatures = [p.signature for p in parts if isinstance(p, ReasoningPart) and p.signature]
    has_calls = any(isinstance(p, ToolCallPart) for p in parts)
    out: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, TextPart) and part.text:
            item: dict[str, Any] = {"text": part.text}
            if signatures and not has_calls:
                item["thoughtSignature"] = signatures.pop(0)
            out.append(item)
        elif isinstance(part, ToolCallPart):
            item = {"functionCall": {"name": part.name, "args": loads_object(part.arguments)}}
            if signatures:
                item["thoughtSignature"] = signatures.pop(0)
            out.append(item)
        elif isinstance(part, VendorPart) and part.provider == "gemini":
            out.append(dict(part.data))
    return out


def _user_parts(parts: list[Any], model: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, TextPart):
            if part.text:
                out.append({"text": part.text})
        elif isinstance(part, (ImagePart, DocumentPart, AudioPart)):
            out.append(_media(part, model))
        elif isinstance(part, ToolResultPart):
            key = "error" if part.is_error else "result"
            out.append({"functionResponse": {"name": part.name,
                                             "response": {key: part.content}}})
    return out


def encode_contents(messages: tuple[Message, ...], model: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            continue
        parts = first_text_with_name(message)
        if message.role == "assistant":
            role, items = "model", _model_parts(parts)
        else:
            role, items = "user", _user_parts(parts, model)
        if not items:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["parts"].extend(items)
        else:
            out.append({"role": role, "parts": items})
    if not out or out[0]["role"] == "model":
        # The API wants a user turn first, even when a system prompt is all there is.
        out.insert(0, {"role": "user", "parts": [{"text": ""}]})
    return out


def _tool_config(choice: Any) -> dict[str, Any]:
    if isinstance(choice, NamedToolChoice):
        return {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": [choice.name]}}
    mode = {"auto": "AUTO", "required": "ANY", "none": "NONE"}[choice]
    return {"functionCallingConfig": {"mode": mode}}


def encode_body(request: ModelRequest) -> dict[str, Any]:
    body: dict[str, Any] = {"contents": encode_contents(request.messages, request.model)}
    system = system_text(request.messages)
    if system:
        body["systemInstruction"] = {"parts": [{"text": system}]}
    config: dict[str, Any] = {}
    if request.temperature is not None:
        config["temperature"] = request.temperature
    if request.max_tokens is not None:
        config["maxOutputTokens"] = request.max_tokens
    fmt = request.response_format
    if fmt is not None:
        config["responseMimeType"] = "application/json"
        if fmt.kind == "json_schema" and fmt.schema is not None:
            config["responseSchema"] = to_gemini_schema(fmt.schema)
    reasoning = request.reasoning
    if reasoning is not None and reasoning.enabled:
        thinking: dict[str, Any] = {"includeThoughts": reasoning.capture}
        if reasoning.budget_tokens is not None:
            thinking["thinkingBudget"] = reasoning.budget_tokens
        if reasoning.level is not None:
            thinking["thinkingLevel"] = reasoning.level.upper()
        config["thinkingConfig"] = thinking
    if config:
        body["generationConfig"] = config
    tools: list[dict[str, Any]] = []
    if request.tools:
        tools.append({"functionDeclarations": [
            {"name": t.name, "description": t.description,
             "parameters": to_gemini_schema(t.parameters)}
            for t in request.tools
        ]})
        body["toolConfig"] = _tool_config(request.tool_choice)
    tools.extend(request.vendor_tools)
    if tools:
        body["tools"] = tools
    return body


def model_path(model: str) -> str:
    return model.removeprefix("models/")


# --- decode ---------------------------------------------------------------------------------


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


# --- the protocol object ------------------------------------------------------------------


class GeminiProtocol:
    name = "gemini"

    def capabilities(self, model: str) -> Capabilities:
        return _CAPS

    def serves(self, model: str) -> bool:
        return model_path(model).startswith("gemini-")

    def encode(self, request: ModelRequest, endpoint: Endpoint) -> HttpRequest:
        action = ":streamGenerateContent?alt=sse" if request.stream else ":generateContent"
        url = join_url(endpoint.base_url, "/v1beta",
                       f"/models/{model_path(request.model)}{action}")
        return build_http_request(request, endpoint, url=url, body=encode_body(request),
                                  headers=key_headers(endpoint, "x-goog-api-key"))

    def decode(self, body: bytes, request: ModelRequest, endpoint: Endpoint) -> ModelResponse:
        return decode(body, request, endpoint)

    def stream_decoder(self, request: ModelRequest, endpoint: Endpoint) -> GeminiStreamDecoder:
        return GeminiStreamDecoder(request, endpoint)


PROTOCOL = GeminiProtocol()


# --- JSON Schema -> Gemini's schema dialect ---------------------------------------------
# Gemini refuses `$ref`, `additionalProperties`, `const`, type lists and most string
# formats, and takes `enum` on strings only. What has an equivalent is rewritten (refs
# inlined, `anyOf` with null -> `nullable`, `const` -> `enum`); what only narrows the shape
# is dropped, since the caller validates the reply against the full schema anyway.

_KEEP = frozenset({
    "description", "title", "nullable", "minItems", "maxItems", "minimum", "maximum",
    "minLength", "maxLength", "pattern", "minProperties", "maxProperties",
    "propertyOrdering",
})
_FORMATS = {"STRING": {"enum", "date-time"}, "INTEGER": {"int32", "int64"},
            "NUMBER": {"float", "double"}}
_MAX_DEPTH = 32


def to_gemini_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of `schema` in Gemini's dialect (an OpenAPI 3.0 Schema subset); the input
    is not modified."""
    defs: dict[str, Any] = {}
    for key in ("$defs", "definitions"):
        if isinstance(schema.get(key), dict):
            defs.update({f"#/{key}/{name}": sub for name, sub in schema[key].items()})
    return _convert(schema, defs, 0)


def _resolve(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if not isinstance(ref, str) or ref not in defs:
        return {k: v for k, v in node.items() if k != "$ref"}
    # Sibling keywords (description...) override the referenced schema's.
    return {**defs[ref], **{k: v for k, v in node.items() if k != "$ref"}}


def _convert(node: Any, defs: dict[str, Any], depth: int) -> dict[str, Any]:
    if not isinstance(node, dict):
        return {}
    if depth > _MAX_DEPTH:
        # A recursive $ref: stop here with an open object; the caller's full validation holds.
        return {"type": "OBJECT"}
    node = _resolve(node, defs)
    if "allOf" in node and isinstance(node["allOf"], list):
        node = _merge_all_of(node, defs)
    for key in ("anyOf", "oneOf"):
        if isinstance(node.get(key), list):
            return _union(node, node[key], defs, depth)
    out: dict[str, Any] = {k: v for k, v in node.items() if k in _KEEP}
    raw_type = node.get("type")
    if isinstance(raw_type, list):
        types = [t for t in raw_type if t != "null"]
        if len(types) < len(raw_type):
            out["nullable"] = True
        if len(types) > 1:
            rest = {k: v for k, v in node.items() if k != "type"}
            return {**_union(rest, [{"type": t} for t in types], defs, depth),
                    **({"nullable": True} if out.get("nullable") else {})}
        raw_type = types[0] if types else None
    if "const" in node:
        node = {**node, "enum": [node["const"]]}
    if raw_type is None and isinstance(node.get("enum"), list):
        raw_type = _enum_type(node["enum"])
    if raw_type is None and "properties" in node:
        raw_type = "object"
    if raw_type is None and "items" in node:
        raw_type = "array"
    gtype = str(raw_type).upper() if raw_type else None
    if gtype:
        out["type"] = gtype
    enum = node.get("enum")
    if gtype == "STRING" and isinstance(enum, list) and all(isinstance(v, str) for v in enum):
        out["enum"] = list(enum)
    fmt = node.get("format")
    if gtype in _FORMATS and fmt in _FORMATS[gtype]:
        out["format"] = fmt
    if isinstance(node.get("properties"), dict):
        out["properties"] = {
            name: _convert(sub, defs, depth + 1) for name, sub in node["properties"].items()
        }
        if isinstance(node.get("required"), list):
            required = [r for r in node["required"] if r in out["properties"]]
            if required:
                out["required"] = required
    if "items" in node and isinstance(node["items"], dict):
        out["items"] = _convert(node["items"], defs, depth + 1)
    return out


def _enum_type(values: list[Any]) -> str | None:
    if all(isinstance(v, str) for v in values):
        return "string"
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return "integer"
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return "number"
    return None


def _merge_all_of(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """`allOf` folded into one schema: properties and required lists are united."""
    merged: dict[str, Any] = {k: v for k, v in node.items() if k != "allOf"}
    for sub in node["allOf"]:
        if not isinstance(sub, dict):
            continue
        sub = _resolve(sub, defs)
        props = {**sub.get("properties", {}), **merged.get("properties", {})}
        required = [*merged.get("required", []), *sub.get("required", [])]
        merged = {**sub, **merged}
        if props:
            merged["properties"] = props
        if required:
            merged["required"] = list(dict.fromkeys(required))
    return merged


def _union(
    node: dict[str, Any], options: list[Any], defs: dict[str, Any], depth: int
) -> dict[str, Any]:
    rest = {k: v for k, v in node.items() if k not in ("anyOf", "oneOf")}
    non_null = [o for o in options if not (isinstance(o, dict) and o.get("type") == "null")]
    nullable = len(non_null) < len(options)
    if len(non_null) == 1:
        out = _convert({**rest, **_resolve(non_null[0], defs)}, defs, depth + 1)
    else:
        out = {k: v for k, v in rest.items() if k in _KEEP}
        out["anyOf"] = [_convert(o, defs, depth + 1) for o in non_null]
    if nullable:
        out["nullable"] = True
    return out
