"""The OpenAI Chat Completions wire protocol: encode, decode and stream-decode, no I/O.

This one module serves `openai`, `generic_openai` (any compatible server at a base URL:
vLLM, llama.cpp, LM Studio, ...) and the embedded `local` model, so it reads fields those
servers add (`reasoning_content`) but sends only what the official API defines. Reasoning
models (the o-series and GPT-5, except o1-mini and gpt-5-chat) take `max_tokens` as
`max_completion_tokens`, `reasoning_effort` for a level, and no temperature.
"""

from __future__ import annotations

import base64
import functools
import json
from typing import Any

from agentloom.errors import ConfigError, ProviderError
from agentloom.http._base import HttpRequest
from agentloom.messages import (
    AudioPart,
    DocumentPart,
    FinishEvent,
    ImagePart,
    Message,
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
    ToolResultPart,
    Usage,
    UsageEvent,
)
from agentloom.providers._base import Capabilities, Endpoint
from agentloom.providers._sse import SSEParser

_REASONING_PREFIXES = ("o1", "o3", "o4", "gpt-5")
_AUDIO_FORMATS = {
    "audio/wav": "wav", "audio/x-wav": "wav", "audio/wave": "wav", "audio/vnd.wave": "wav",
    "audio/mpeg": "mp3", "audio/mp3": "mp3", "audio/mpeg3": "mp3",
}
_SERVED_PREFIXES = ("gpt-", "chatgpt-", "o1", "o3", "o4", "davinci", "babbage", "ft:gpt-",
                    "codex-", "computer-use-")


@functools.lru_cache(maxsize=256)  # asked on every request; model names are few
def is_reasoning_model(model: str) -> bool:
    """o-series and GPT-5 models, except o1-mini and the gpt-5 chat models."""
    name = model.rsplit("/", 1)[-1].lower()
    if not name.startswith(_REASONING_PREFIXES):
        return False
    if name.startswith("gpt-5"):
        return "-chat" not in name
    if name.startswith("o1-mini"):
        return False
    # "o1", "o3-mini", "o4-mini-2025-..." but not a name that merely starts with "o1x".
    return len(name) == 2 or name[2] == "-"


_CAPS = Capabilities(
    tools=True, forced_tool_choice=True, native_json_schema=True, image=True, image_url=True,
    pdf=False, audio_types=frozenset({"audio/wav", "audio/mpeg"}), reasoning="effort",
    speaker_names=True,
)


# --- encode ------------------------------------------------------------------------------


def _data_url(media_type: str, data: bytes) -> str:
    return f"data:{media_type};base64,{base64.b64encode(data).decode('ascii')}"


def _content_part(part: Part) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, ImagePart):
        if part.data is not None:
            url = _data_url(part.media_type, part.data)
        elif part.url is not None:
            url = part.url
        else:
            raise ConfigError("an image attachment has neither data nor url")
        return {"type": "image_url", "image_url": {"url": url}}
    if isinstance(part, AudioPart):
        fmt = _AUDIO_FORMATS.get(part.media_type.lower())
        if fmt is None or part.data is None:
            raise ConfigError(
                f"openai takes audio as WAV or MP3 bytes, not {part.media_type}"
            )
        data = base64.b64encode(part.data).decode("ascii")
        return {"type": "input_audio", "input_audio": {"data": data, "format": fmt}}
    if isinstance(part, DocumentPart):
        raise ConfigError(f"openai chat completions cannot take a {part.media_type} document")
    raise ConfigError(f"openai cannot send a {part.kind} part in a {part.kind} position")


def _encode_message(message: Message, out: list[dict[str, Any]]) -> None:
    parts = message.parts
    role = message.role
    if role == "assistant":
        texts: list[str] = []
        calls: list[dict[str, Any]] = []
        for p in parts:
            if isinstance(p, TextPart):
                texts.append(p.text)
            elif isinstance(p, ToolCallPart):
                calls.append({"id": p.id, "type": "function",
                              "function": {"name": p.name, "arguments": p.arguments}})
            # Reasoning parts stay behind: the API does not take them back.
        msg: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts else None}
        if calls:
            msg["tool_calls"] = calls
        elif msg["content"] is None:
            msg["content"] = ""
        if message.name:
            msg["name"] = message.name
        out.append(msg)
        return
    rest: list[Part] = []
    for p in parts:
        if isinstance(p, ToolResultPart):
            out.append({"role": "tool", "tool_call_id": p.call_id, "content": p.content})
        elif not isinstance(p, ReasoningPart):
            rest.append(p)
    if role == "tool" and not rest:
        return
    if role == "tool":
        role = "user"  # stray non-result parts in a tool turn still reach the model
    content: str | list[dict[str, Any]]
    if all(isinstance(p, TextPart) for p in rest):
        content = "".join(p.text for p in rest if isinstance(p, TextPart))
        if not rest and any(isinstance(p, ToolResultPart) for p in parts):
            return
    else:
        content = [_content_part(p) for p in rest]
    msg = {"role": role, "content": content}
    if message.name:
        msg["name"] = message.name
    out.append(msg)


def _tool_choice(choice: Any) -> Any:
    if isinstance(choice, str):
        return choice
    return {"type": "function", "function": {"name": choice.name}}


def _response_format(request: ModelRequest) -> dict[str, Any] | None:
    fmt = request.response_format
    if fmt is None:
        return None
    if fmt.kind == "json_schema" and fmt.schema is not None:
        spec: dict[str, Any] = {"name": fmt.name, "strict": fmt.strict, "schema": fmt.schema}
        if fmt.description:
            spec["description"] = fmt.description
        return {"type": "json_schema", "json_schema": spec}
    return {"type": "json_object"}


def encode_body(request: ModelRequest) -> dict[str, Any]:
    """The JSON body of a Chat Completions request (before `extra` is merged over it)."""
    messages: list[dict[str, Any]] = []
    for m in request.messages:
        _encode_message(m, messages)
    body: dict[str, Any] = {"model": request.model, "messages": messages}
    reasoning_model = is_reasoning_model(request.model)
    if reasoning_model:
        if request.max_tokens is not None:
            body["max_completion_tokens"] = request.max_tokens
        r = request.reasoning
        if r is not None and r.enabled and r.level is not None:
            body["reasoning_effort"] = r.level
    else:
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.max_tokens is not None:
            body["max_tokens"] = request.max_tokens
    if request.tools or request.vendor_tools:
        tools: list[dict[str, Any]] = []
        for t in request.tools:
            fn: dict[str, Any] = {"name": t.name, "parameters": t.parameters}
            if t.description:
                fn["description"] = t.description
            tools.append({"type": "function", "function": fn})
        tools.extend(request.vendor_tools)
        body["tools"] = tools
        body["tool_choice"] = _tool_choice(request.tool_choice)
    fmt = _response_format(request)
    if fmt is not None:
        body["response_format"] = fmt
    if request.stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    if request.extra:
        body.update(request.extra)
    return body


# --- decode ------------------------------------------------------------------------------


def decode_usage(raw: Any) -> Usage | None:
    """Chat Completions usage; a field the server left out stays None (never 0)."""
    if not isinstance(raw, dict):
        return None
    prompt = raw.get("prompt_tokens_details")
    completion = raw.get("completion_tokens_details")
    return Usage(
        input_tokens=raw.get("prompt_tokens"),
        output_tokens=raw.get("completion_tokens"),
        cache_read_tokens=prompt.get("cached_tokens") if isinstance(prompt, dict) else None,
        reasoning_tokens=(
            completion.get("reasoning_tokens") if isinstance(completion, dict) else None
        ),
        input_includes_cached=True,
    )


def _keep_reasoning(request: ModelRequest) -> bool:
    return request.reasoning is None or request.reasoning.capture


def _stream_error(endpoint: Endpoint, model: str, error: Any) -> ProviderError:
    message = error.get("message") if isinstance(error, dict) else str(error)
    return ProviderError(
        f"{endpoint.name} reported an error in its reply: {message}", provider=endpoint.name,
        model=model, phase="body", request_sent=True, retryable=True, body=str(error)[:500],
    )


# One encoder for every request: `json.dumps` with options builds a new one per call.
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


class OpenAIProtocol:
    """`PROTOCOL`: the Chat Completions wire format, shared by openai-compatible vendors."""

    name = "openai"

    def capabilities(self, model: str) -> Capabilities:
        return _CAPS

    def serves(self, model: str) -> bool:
        return model.lower().startswith(_SERVED_PREFIXES)

    def encode(self, request: ModelRequest, endpoint: Endpoint) -> HttpRequest:
        headers = {"content-type": "application/json"}
        if endpoint.api_key:
            headers["authorization"] = f"Bearer {endpoint.api_key}"
        if request.stream:
            headers["accept"] = "text/event-stream"
        if endpoint.headers:
            headers.update(endpoint.headers)
        if request.headers:
            headers.update(request.headers)
        body = _ENCODE(encode_body(request))
        return HttpRequest(
            method="POST",
            url=f"{endpoint.base_url}/chat/completions",
            headers=headers,
            body=body.encode("utf-8"),
            timeout=endpoint.timeout,
            stream=request.stream,
        )

    def decode(self, body: bytes, request: ModelRequest, endpoint: Endpoint) -> ModelResponse:
        obj = json.loads(body)
        if not isinstance(obj, dict):
            raise ValueError("the reply is not a JSON object")
        if "error" in obj and "choices" not in obj:
            raise _stream_error(endpoint, request.model, obj["error"])
        choice = obj["choices"][0]
        message = choice["message"]
        parts: list[Part] = []
        reasoning = message.get("reasoning_content")
        if reasoning and _keep_reasoning(request):
            parts.append(ReasoningPart(text=reasoning))
        content = message.get("content")
        if content:
            parts.append(TextPart(text=content))
        for i, call in enumerate(message.get("tool_calls") or ()):
            fn = call["function"]
            parts.append(ToolCallPart(id=call.get("id") or f"call_{i}", name=fn["name"],
                                      arguments=fn.get("arguments") or ""))
        return ModelResponse(
            parts=tuple(parts),
            usage=decode_usage(obj.get("usage")) or Usage(),
            finish_reason=choice.get("finish_reason"),
            model=obj.get("model") or request.model,
            provider=endpoint.name,
            response_id=obj.get("id"),
        )

    def stream_decoder(self, request: ModelRequest, endpoint: Endpoint) -> OpenAIStreamDecoder:
        return OpenAIStreamDecoder(request, endpoint)


class OpenAIStreamDecoder:
    """SSE `data:` chunks to stream events; ends at `data: [DONE]`."""

    __slots__ = ("_done", "_endpoint", "_finished", "_model", "_reasoning", "_sse")

    def __init__(self, request: ModelRequest, endpoint: Endpoint) -> None:
        self._sse = SSEParser()
        self._endpoint = endpoint
        self._model = request.model
        self._reasoning = _keep_reasoning(request)
        self._done = False
        self._finished = False

    def feed(self, data: bytes) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        for event in self._sse.feed(data):
            self._event(event.data, out)
        return out

    def close(self) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        for event in self._sse.close():
            self._event(event.data, out)
        if not (self._done or self._finished):
            raise ProviderError(
                f"{self._endpoint.name} ended the stream before it finished",
                provider=self._endpoint.name, model=self._model, phase="read",
                request_sent=True, retryable=True,
            )
        return out

    def _event(self, data: str, out: list[StreamEvent]) -> None:
        if data == "[DONE]":
            self._done = True
            return
        obj = json.loads(data)
        if "error" in obj and "choices" not in obj:
            raise _stream_error(self._endpoint, self._model, obj["error"])
        for choice in obj.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            reasoning = delta.get("reasoning_content")
            if reasoning and self._reasoning:
                out.append(ReasoningDelta(text=reasoning))
            content = delta.get("content")
            if content:
                out.append(TextDelta(text=content))
            for call in delta.get("tool_calls") or ():
                fn = call.get("function") or {}
                out.append(ToolCallDelta(index=call.get("index", 0), id=call.get("id"),
                                         name=fn.get("name"),
                                         arguments=fn.get("arguments") or ""))
            finish = choice.get("finish_reason")
            if finish is not None:
                self._finished = True
                out.append(FinishEvent(finish_reason=finish, model=obj.get("model"),
                                       response_id=obj.get("id")))
        usage = decode_usage(obj.get("usage"))
        if usage is not None:
            out.append(UsageEvent(usage=usage))


PROTOCOL = OpenAIProtocol()


def __getattr__(name: str) -> Any:
    # Migration face: the public AgentLoom's provider class of this name (agentloom.compat).
    if name == "OpenAIProvider":
        from agentloom.compat.gateway import OpenAIProvider

        return OpenAIProvider
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
