"""The Ollama chat wire protocol (`POST /api/chat`), plain and streamed (NDJSON).

Pure translation, no I/O. What the format forces on us, and how we answer:
- Images travel as a base64 list on the message; PDFs, audio and image URLs are refused
  (the capability table says so, and routing checks it before sending).
- `think` is the level when one is set, else `true`; nothing is sent without
  `thinking.enabled` (models then use their own default).
- `format` is the JSON schema, or "json" for any object; `options` carries temperature and
  `num_predict`. tool_choice has no equivalent and is ignored.
- Ollama sends no tool call ids: stable ones are derived from position, name, arguments.
- Usage: `prompt_eval_count` / `eval_count`; reasoning is inside `eval_count`, so
  `reasoning_tokens` is None. The finish reason is `done_reason` as written.

`serves` does not claim every name: Ollama is no catch-all, so `gpt-4o` never lands on a
local server by accident. It takes tagged names (`llama3.2:3b`) and known open families;
an endpoint's explicit `models` list covers anything else.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from agentloom.errors import ConfigError, ProviderError
from agentloom.messages import (
    AudioPart,
    DocumentPart,
    FinishEvent,
    ImagePart,
    Message,
    ModelRequest,
    ModelResponse,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    TextPart,
    ToolCallDelta,
    ToolCallPart,
    ToolResultPart,
    Usage,
    UsageEvent,
)
from agentloom.providers._assemble import ResponseBuilder
from agentloom.providers._base import Capabilities, Endpoint
from agentloom.providers._common import (
    bad_shape,
    build_http_request,
    first_text_with_name,
    join_url,
    loads_object,
    stable_call_id,
    token_count,
)
from agentloom.providers._json import load_body
from agentloom.providers._sse import NDJSONParser
from agentloom.providers.profiles import OLLAMA as _CAPS
from agentloom.transport import HttpRequest

LOCAL_FAMILIES = (
    "llama", "qwen", "mistral", "mixtral", "gemma", "phi", "deepseek", "codellama",
    "llava", "smollm", "granite", "command-r", "olmo", "tinyllama", "starcoder", "nomic",
    "gpt-oss", "magistral", "devstral", "cogito", "falcon", "yi", "orca", "vicuna",
)
_VENDOR_PREFIXES = ("gpt-4", "gpt-5", "gpt-3", "o1", "o3", "o4", "claude-", "gemini-")


# --- encode ---------------------------------------------------------------------------------


def _messages(message: Message, model: str) -> list[dict[str, Any]]:
    """Tool results become `tool` messages; anything else in the turn follows them."""
    out = [{"role": "tool", "content": p.content, "tool_name": p.name}
           for p in message.parts if isinstance(p, ToolResultPart)]
    rest = [p for p in message.parts if not isinstance(p, ToolResultPart)]
    if rest or not out:
        role = "user" if message.role == "tool" else message.role
        out.append(_message(Message(role=role, parts=tuple(rest), name=message.name), model))
    return out


def _message(message: Message, model: str) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.role}
    texts: list[str] = []
    images: list[str] = []
    calls: list[dict[str, Any]] = []
    for part in first_text_with_name(message):
        if isinstance(part, TextPart):
            texts.append(part.text)
        elif isinstance(part, ImagePart):
            if part.data is None:
                raise ConfigError(f"ollama model {model!r} cannot fetch an image by URL; "
                                  "use fetch: local")
            images.append(base64.b64encode(part.data).decode("ascii"))
        elif isinstance(part, (DocumentPart, AudioPart)):
            label = "PDF" if isinstance(part, DocumentPart) else "audio"
            raise ConfigError(f"ollama model {model!r} does not take {label} attachments")
        elif isinstance(part, ToolCallPart):
            calls.append({"function": {"name": part.name,
                                       "arguments": loads_object(part.arguments)}})
    out["content"] = "".join(texts)
    if images:
        out["images"] = images
    if calls:
        out["tool_calls"] = calls
    return out


def encode_body(request: ModelRequest) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for message in request.messages:
        messages.extend(_messages(message, request.model))
    body: dict[str, Any] = {"model": request.model, "messages": messages,
                            "stream": request.stream}
    options: dict[str, Any] = {}
    if request.temperature is not None:
        options["temperature"] = request.temperature
    if request.max_tokens is not None:
        options["num_predict"] = request.max_tokens
    if options:
        body["options"] = options
    fmt = request.response_format
    if fmt is not None:
        body["format"] = fmt.schema if fmt.kind == "json_schema" and fmt.schema else "json"
    reasoning = request.reasoning
    if reasoning is not None and reasoning.enabled:
        body["think"] = reasoning.level or True
    tools: list[dict[str, Any]] = [
        {"type": "function", "function": {"name": t.name, "description": t.description,
                                          "parameters": t.parameters}}
        for t in request.tools
    ]
    tools.extend(request.vendor_tools)
    if tools:
        body["tools"] = tools
    return body


# --- decode ---------------------------------------------------------------------------------


def decode_usage(chunk: dict[str, Any]) -> Usage:
    return Usage(
        input_tokens=token_count(chunk.get("prompt_eval_count")),
        output_tokens=token_count(chunk.get("eval_count")),
        reasoning_tokens=None,
        # Ollama reports no prompt cache, so how cached tokens are counted is unknown.
        input_includes_cached=None,
    )


class _Chunks:
    """Chat chunks (one, or one per NDJSON line) -> events; counts tool calls across them."""

    def __init__(self, provider: str, model: str) -> None:
        self.provider = provider
        self.model = model
        self.calls = 0

    def events(self, chunk: Any) -> list[StreamEvent]:
        if not isinstance(chunk, dict):
            raise bad_shape(self.provider, self.model, "a chunk is not an object")
        if "error" in chunk:
            raise ProviderError(
                f"ollama error: {chunk['error']}", provider=self.provider, model=self.model,
                phase="body", request_sent=True, retryable=False,
                body=json.dumps(chunk)[:500],
            )
        out: list[StreamEvent] = []
        message = chunk.get("message") or {}
        if message.get("thinking"):
            out.append(ReasoningDelta(text=message["thinking"]))
        if message.get("content"):
            out.append(TextDelta(text=message["content"]))
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            name = function.get("name", "")
            raw = function.get("arguments")
            args = raw if isinstance(raw, str) else json.dumps(raw or {}, ensure_ascii=False)
            call_id = call.get("id")
            if not call_id or type(call_id) is not str:  # missing, or not text: made up
                call_id = stable_call_id(self.calls, name, args)
            out.append(ToolCallDelta(index=self.calls, id=call_id, name=name, arguments=args))
            self.calls += 1
        if chunk.get("done"):
            out.append(UsageEvent(usage=decode_usage(chunk)))
            out.append(FinishEvent(finish_reason=chunk.get("done_reason"),
                                   model=chunk.get("model")))
        return out


def decode(body: bytes, request: ModelRequest, endpoint: Endpoint) -> ModelResponse:
    chunk = load_body(body)
    builder = ResponseBuilder(request.model)
    for event in _Chunks(endpoint.name, request.model).events(chunk):
        builder.add(event)
    return builder.build(provider=endpoint.name)


class OllamaStreamDecoder:
    def __init__(self, request: ModelRequest, endpoint: Endpoint) -> None:
        self._lines = NDJSONParser()
        self._chunks = _Chunks(endpoint.name, request.model)

    def feed(self, data: bytes) -> list[StreamEvent]:
        return [e for chunk in self._lines.feed(data) for e in self._chunks.events(chunk)]

    def close(self) -> list[StreamEvent]:
        return [e for chunk in self._lines.close() for e in self._chunks.events(chunk)]


# --- the protocol object ------------------------------------------------------------------


class OllamaProtocol:
    name = "ollama"

    def capabilities(self, model: str) -> Capabilities:
        return _CAPS

    def serves(self, model: str) -> bool:
        name = model.lower()
        if name.startswith(_VENDOR_PREFIXES):
            return False
        if ":" in name:
            return True
        base = name.rsplit("/", 1)[-1]
        return base.startswith(LOCAL_FAMILIES)

    def encode(self, request: ModelRequest, endpoint: Endpoint) -> HttpRequest:
        return build_http_request(
            request, endpoint,
            url=join_url(endpoint.base_url, "", "/api/chat"),
            body=encode_body(request),
            headers={"authorization": f"Bearer {endpoint.api_key}"} if endpoint.api_key else {},
        )

    def decode(self, body: bytes, request: ModelRequest, endpoint: Endpoint) -> ModelResponse:
        return decode(body, request, endpoint)

    def stream_decoder(self, request: ModelRequest, endpoint: Endpoint) -> OllamaStreamDecoder:
        return OllamaStreamDecoder(request, endpoint)


PROTOCOL = OllamaProtocol()


def __getattr__(name: str) -> Any:
    # Migration face: the public AgentLoom's provider class of this name (agentloom.compat).
    if name == "OllamaProvider":
        from agentloom.compat.gateway import OllamaProvider

        return OllamaProvider
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
