"""The Gemini request body: a `ModelRequest` as `generateContent` takes it (the rules it
follows are listed in `agentloom.providers.gemini`, which answers for these names): the
turns and their parts, generation and thinking config, tools, and JSON Schema rewritten
into Gemini's schema dialect (`to_gemini_schema`).
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
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    VendorPart,
)
from agentloom.providers._common import first_text_with_name, loads_object, system_text


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
