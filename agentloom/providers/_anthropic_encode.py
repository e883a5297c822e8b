"""The Anthropic Messages request body: a `ModelRequest` as the JSON `POST /v1/messages`
takes (the rules it follows are listed in `agentloom.providers.anthropic`, which answers
for these names): the structured-output mode and its prefill, the schema dialect, the
turns and their blocks, thinking, tools and the cache breakpoints.
"""

from __future__ import annotations

import base64
from typing import Any

from agentloom.errors import ConfigError
from agentloom.messages import (
    AudioPart,
    DocumentPart,
    ImagePart,
    Message,
    ModelRequest,
    NamedToolChoice,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    VendorPart,
)
from agentloom.providers._common import (
    first_text_with_name,
    loads_object,
    schema_instruction,
    system_text,
)
from agentloom.providers.profiles import ANTHROPIC_NATIVE_SCHEMA_MODELS as NATIVE_SCHEMA_MODELS

DEFAULT_MAX_TOKENS = 4096
MAX_BREAKPOINTS = 4
"""The API's limit on `cache_control` marks in one request."""
_EPHEMERAL = {"type": "ephemeral"}
_UNMARKABLE = frozenset({"thinking", "redacted_thinking"})
# Keywords the schema format refuses; they only narrow a shape, and the caller validates
# the reply against the full schema anyway.
_NARROWING = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                        "multipleOf", "minLength", "maxLength", "maxItems", "minProperties",
                        "maxProperties", "pattern", "format"})


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
