"""The OpenAI Chat Completions wire protocol: encode, decode and stream-decode, no I/O.

This one module serves `openai`, `generic_openai` (any compatible server at a base URL:
vLLM, llama.cpp, LM Studio, ...) and the embedded `local` model, so it reads fields those
servers add (`reasoning_content`) but sends only what the official API defines. Reasoning
models (the o-series and GPT-5, except o1-mini and gpt-5-chat) take `max_tokens` as
`max_completion_tokens`, `reasoning_effort` for a level, and no temperature.
"""

from __future__ import annotations

import base64
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
    VendorPart,
    new_response,
    new_usage,
    text_part,
)
from agentloom.providers._base import Capabilities, Endpoint, StreamDecoder, WireProtocol
from agentloom.providers._common import (
    distinct_call_ids,
    not_text,
    prompt_cache_key,
    token_count,
    whole_arguments,
)
from agentloom.providers._json import dump_body, load_body
from agentloom.providers._sse import SSEParser
from agentloom.providers.openai_responses import PROTOCOL as RESPONSES
from agentloom.providers.profiles import OPENAI as _CAPS
from agentloom.providers.profiles import (
    OPENAI_SERVED_PREFIXES,
    is_reasoning_model,
)
from agentloom.transport import HttpRequest

_AUDIO_FORMATS = {
    "audio/wav": "wav", "audio/x-wav": "wav", "audio/wave": "wav", "audio/vnd.wave": "wav",
    "audio/mpeg": "mp3", "audio/mp3": "mp3", "audio/mpeg3": "mp3",
}






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
    if role != "tool" and len(parts) == 1 and type(parts[0]) is TextPart:
        # One text part, most turns: what the general path below makes of it, directly.
        msg = {"role": role, "content": parts[0].text}
        if message.name:
            msg["name"] = message.name
        out.append(msg)
        return
    rest: list[Part] = []
    for p in parts:
        if isinstance(p, ToolResultPart):
            out.append({"role": "tool", "tool_call_id": p.call_id, "content": p.content})
        elif not isinstance(p, (ReasoningPart, VendorPart)):
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
    if request.cache == "auto":
        body["prompt_cache_key"] = prompt_cache_key(request)
    if request.extra:
        body.update(request.extra)
    return body


# --- decode ------------------------------------------------------------------------------


def decode_usage(raw: Any) -> Usage | None:
    """Chat Completions usage; a field the server left out, or sent as no count (see
    `token_count`), stays None (never 0)."""
    if not isinstance(raw, dict):
        return None
    prompt = raw.get("prompt_tokens_details")
    completion = raw.get("completion_tokens_details")
    if isinstance(prompt, dict):
        cache_read = token_count(prompt.get("cached_tokens"))
        cache_write = token_count(prompt.get("cache_write_tokens"))
    else:
        cache_read = cache_write = None
    return new_usage(
        token_count(raw.get("prompt_tokens")), token_count(raw.get("completion_tokens")),
        cache_read, cache_write,
        token_count(completion.get("reasoning_tokens")) if isinstance(completion, dict)
        else None,
        None, True, False,
    )


def _keep_reasoning(request: ModelRequest) -> bool:
    return request.reasoning is None or request.reasoning.capture


def chunk_usage(obj: dict[str, Any]) -> Usage | None:
    """`usage`, or Groq's `x_groq.usage` where Groq streams put it."""
    usage = obj.get("usage")
    if usage is None and isinstance(obj.get("x_groq"), dict):
        usage = obj["x_groq"].get("usage")
    return decode_usage(usage)


def content_and_reasoning(message: dict[str, Any]) -> tuple[str, str]:
    """(text, reasoning) of a message or delta. `content` is a string, or (Mistral) a list
    of typed parts with `thinking` parts beside the text; reasoning comes as
    `reasoning_content` (DeepSeek, vLLM) or `reasoning` (Groq, OpenRouter, Cerebras,
    Ollama)."""
    content = message.get("content")
    thoughts: list[str] = []
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        texts: list[str] = []
        for part in content:
            if not isinstance(part, dict):
                continue
            if part.get("type") == "text":
                texts.append(str(part.get("text") or ""))
            elif part.get("type") == "thinking":
                thought = part.get("thinking")
                if isinstance(thought, str):
                    thoughts.append(thought)
                elif isinstance(thought, list):
                    thoughts.extend(str(t.get("text") or "") for t in thought
                                    if isinstance(t, dict))
        text = "".join(texts)
    else:
        text = ""
    for key in ("reasoning_content", "reasoning"):
        value = message.get(key)
        if isinstance(value, str) and value:
            thoughts.append(value)
            break
    return text, "".join(thoughts) if thoughts else ""


_ERROR_TYPE_STATUS = {"invalid_request_error": 400, "authentication_error": 401,
                      "permission_error": 403, "not_found_error": 404,
                      "rate_limit_error": 429, "server_error": 500}
_RETRYABLE = frozenset({408, 409, 429, 500, 502, 503, 504})


def _stream_error(endpoint: Endpoint, model: str, error: Any) -> ProviderError:
    """An error object inside a 200 reply. Its status (`status_code`, a numeric `code`, or
    the error type) decides retrying: a refused request stays refused."""
    message = error.get("message") if isinstance(error, dict) else str(error)
    status: int | None = None
    if isinstance(error, dict):
        for key in ("status_code", "status", "code"):
            value = error.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                status = value
                break
        if status is None:
            status = _ERROR_TYPE_STATUS.get(str(error.get("type")))
    return ProviderError(
        f"{endpoint.name} reported an error in its reply: {message}", provider=endpoint.name,
        model=model, status=status, phase="body", request_sent=True,
        retryable=status is None or status in _RETRYABLE, body=str(error)[:500],
    )




def api_for(model: str, endpoint: Endpoint) -> str:
    """Which OpenAI API a call uses: the endpoint's `api` (for all models or this one),
    else the Responses API for a reasoning model of the `openai` provider (it keeps the
    reasoning across tool turns), else chat completions, which every compatible server
    (`generic_openai`, `local`, ...) speaks."""
    api = endpoint.api
    if isinstance(api, dict):
        api = api.get(model)
    if api:
        return api
    if is_reasoning_model(model) and endpoint.name == "openai":
        return "responses"
    return "chat_completions"


def _responses() -> WireProtocol:
    return RESPONSES


class OpenAIProtocol:
    """`PROTOCOL`: the Chat Completions wire format, shared by openai-compatible vendors;
    a call that `api_for` gives to the Responses API is handed to that protocol."""

    name = "openai"

    def capabilities(self, model: str) -> Capabilities:
        return _CAPS

    def serves(self, model: str) -> bool:
        return model.lower().startswith(OPENAI_SERVED_PREFIXES)

    def encode(self, request: ModelRequest, endpoint: Endpoint) -> HttpRequest:
        if api_for(request.model, endpoint) == "responses":
            return _responses().encode(request, endpoint)
        headers = {"content-type": "application/json"}
        if endpoint.api_key:
            headers["authorization"] = f"Bearer {endpoint.api_key}"
        if request.stream:
            headers["accept"] = "text/event-stream"
        if endpoint.headers:
            headers.update(endpoint.headers)
        if request.headers:
            headers.update(request.headers)
        return HttpRequest(
            method="POST",
            url=f"{endpoint.base_url}/chat/completions",
            headers=headers,
            body=dump_body(encode_body(request)),
            timeout=endpoint.timeout,
            stream=request.stream,
        )

    def decode(self, body: bytes, request: ModelRequest, endpoint: Endpoint) -> ModelResponse:
        if api_for(request.model, endpoint) == "responses":
            return _responses().decode(body, request, endpoint)
        obj = load_body(body)
        if not isinstance(obj, dict):
            raise ValueError("the reply is not a JSON object")
        if "error" in obj and "choices" not in obj:
            raise _stream_error(endpoint, request.model, obj["error"])
        choice = obj["choices"][0]
        message = choice["message"]
        parts: list[Part] = []
        content, reasoning = content_and_reasoning(message)
        if reasoning and _keep_reasoning(request):
            parts.append(ReasoningPart(text=reasoning))
        if content:
            parts.append(text_part(content))
        calls = message.get("tool_calls")
        if calls:
            ids: set[str] = set()
            for i, call in enumerate(calls):
                fn = call["function"]
                name, call_id, arguments = fn["name"], call.get("id"), fn.get("arguments")
                if type(name) is not str:
                    raise not_text("a tool call's name", name)
                if not call_id or type(call_id) is not str:
                    call_id = f"call_{i}"  # missing, or not text: made up
                if type(arguments) is not str:
                    arguments = whole_arguments(arguments)
                ids.add(call_id)
                parts.append(ToolCallPart(id=call_id, name=name, arguments=arguments))
            if len(ids) < len(calls):  # two calls share an id
                distinct_call_ids(parts, ids)
        # Metadata that is not text reads as unknown: the reply itself stands.
        finish, model, response_id = choice.get("finish_reason"), obj.get("model"), obj.get("id")
        return new_response(
            tuple(parts), chunk_usage(obj) or Usage(),
            finish if type(finish) is str else None,
            model if model and type(model) is str else request.model, endpoint.name,
            response_id if type(response_id) is str else None, None,
        )

    def stream_decoder(self, request: ModelRequest, endpoint: Endpoint) -> StreamDecoder:
        if api_for(request.model, endpoint) == "responses":
            return _responses().stream_decoder(request, endpoint)
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
        obj = load_body(data)
        if "error" in obj and "choices" not in obj:
            raise _stream_error(self._endpoint, self._model, obj["error"])
        for choice in obj.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            content, reasoning = content_and_reasoning(delta)
            if reasoning and self._reasoning:
                out.append(ReasoningDelta(text=reasoning))
            if content:
                out.append(TextDelta(text=content))
            for call in delta.get("tool_calls") or ():
                fn = call.get("function") or {}
                index = call.get("index")  # null reads as missing: the first call
                out.append(ToolCallDelta(index=0 if index is None else index, id=call.get("id"),
                                         name=fn.get("name"),
                                         arguments=fn.get("arguments") or ""))
            finish = choice.get("finish_reason")
            if finish is not None:
                self._finished = True
                out.append(FinishEvent(finish_reason=finish, model=obj.get("model"),
                                       response_id=obj.get("id")))
        usage = chunk_usage(obj)
        if usage is not None:
            out.append(UsageEvent(usage=usage))


PROTOCOL = OpenAIProtocol()


def __getattr__(name: str) -> Any:
    # Migration face: the public AgentLoom's provider class of this name (agentloom.compat).
    if name == "OpenAIProvider":
        from agentloom.compat.gateway import OpenAIProvider

        return OpenAIProvider
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
