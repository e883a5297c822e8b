"""The OpenAI Responses wire protocol (`POST /v1/responses`), plain and streamed (SSE).

Pure translation, no I/O. What the format asks of us, and how we answer:
- A request is `instructions` (our system turns) and `input`, a list of items: messages,
  `function_call` items (our tool calls) and `function_call_output` items (our results).
- Reasoning models think in `reasoning` items. With `store: false` the server keeps
  nothing, so we ask for `include: ["reasoning.encrypted_content"]` and keep each item
  whole as a `VendorPart` (provider `openai_responses`); the next turn of a tool loop sends
  it back unchanged, so the model keeps its reasoning across tool calls. Its summary text
  is also a `ReasoningPart`, for callers to read (and is not sent back: the item is).
- Hosted tools (web search, file search, code interpreter, MCP, ...) are vendor tools:
  their calls and results come back as items that are kept and returned the same way.
- Structured output goes in `text.format`; function tools are sent with `strict: false`,
  since the API's default (strict) would refuse most hand-written schemas.
- There is no finish reason. A completed reply gets the words of chat completions
  (`tool_calls` when it calls a function, else `stop`), so the two OpenAI APIs read
  alike; an incomplete one gives its own reason (`max_output_tokens`, `content_filter`).
- Usage: `input_tokens` includes cached tokens (`input_includes_cached=True`);
  `output_tokens` includes reasoning tokens, which are reported apart as well.
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
    key_headers,
    not_text,
    prompt_cache_key,
    system_text,
    token_count,
    whole_arguments,
)
from agentloom.providers._json import load_body
from agentloom.providers._sse import SSEParser
from agentloom.providers.profiles import OPENAI_SERVED_PREFIXES, is_reasoning_model
from agentloom.transport import HttpRequest

if TYPE_CHECKING:
    from agentloom.providers._sse import SSEEvent

VENDOR = "openai_responses"
"""The `provider` of the items this protocol keeps as `VendorPart`s."""
_ERROR_STATUS = {"invalid_request_error": 400, "authentication_error": 401,
                 "permission_error": 403, "not_found_error": 404, "rate_limit_error": 429,
                 "rate_limit_exceeded": 429, "server_error": 500, "server_is_overloaded": 503}
_RETRYABLE = frozenset({429, 500, 502, 503, 504})

_CAPS = Capabilities(
    tools=True, forced_tool_choice=True, native_json_schema=True, image=True, image_url=True,
    pdf=True, audio_types=frozenset(), reasoning="effort", speaker_names=False,
)


def _is_reasoning(model: str) -> bool:
    return is_reasoning_model(model)


# --- encode ---------------------------------------------------------------------------------


def _data_url(media_type: str, data: bytes) -> str:
    return f"data:{media_type};base64,{base64.b64encode(data).decode('ascii')}"


def _input_part(part: Part) -> dict[str, Any] | None:
    if isinstance(part, TextPart):
        return {"type": "input_text", "text": part.text} if part.text else None
    if isinstance(part, ImagePart):
        if part.data is not None:
            return {"type": "input_image", "image_url": _data_url(part.media_type, part.data)}
        if part.url is not None:
            return {"type": "input_image", "image_url": part.url}
        raise ConfigError("an image attachment has neither data nor url")
    if isinstance(part, DocumentPart):
        if part.data is not None:
            return {"type": "input_file", "filename": "document.pdf",
                    "file_data": _data_url(part.media_type, part.data)}
        if part.url is not None:
            return {"type": "input_file", "file_url": part.url}
        raise ConfigError("a document attachment has neither data nor url")
    if isinstance(part, AudioPart):
        raise ConfigError("the OpenAI Responses API does not take audio attachments")
    return None


def _speaker(message: Message, text: str) -> str:
    return f"[{message.name}] {text}" if message.name else text


def encode_input(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            continue
        if message.role == "assistant":
            for part in message.parts:
                if isinstance(part, VendorPart):
                    if part.provider == VENDOR:
                        items.append(dict(part.data))
                elif isinstance(part, TextPart) and part.text:
                    items.append({"role": "assistant", "content": _speaker(message, part.text)})
                elif isinstance(part, ToolCallPart):
                    items.append({"type": "function_call", "call_id": part.id,
                                  "name": part.name, "arguments": part.arguments or "{}"})
                # Reasoning text stays behind: its item (a VendorPart) goes back instead.
            continue
        content: list[dict[str, Any]] = []
        for part in message.parts:
            if isinstance(part, ToolResultPart):
                items.append({"type": "function_call_output", "call_id": part.call_id,
                              "output": part.content})
            elif (block := _input_part(part)) is not None:
                content.append(block)
        if content:
            if message.name and content[0]["type"] == "input_text":
                content[0] = {**content[0], "text": _speaker(message, content[0]["text"])}
            items.append({"role": "user", "content": content})
    return items


def _tool_choice(choice: Any) -> Any:
    if isinstance(choice, NamedToolChoice):
        return {"type": "function", "name": choice.name}
    return choice


def _text_format(request: ModelRequest) -> dict[str, Any] | None:
    fmt = request.response_format
    if fmt is None:
        return None
    if fmt.kind == "json_schema" and fmt.schema is not None:
        spec: dict[str, Any] = {"type": "json_schema", "name": fmt.name, "schema": fmt.schema,
                                "strict": fmt.strict}
        if fmt.description:
            spec["description"] = fmt.description
        return spec
    return {"type": "json_object"}


def encode_body(request: ModelRequest) -> dict[str, Any]:
    body: dict[str, Any] = {"model": request.model, "input": encode_input(request.messages)}
    system = system_text(request.messages)
    if system:
        body["instructions"] = system
    reasoning_model = _is_reasoning(request.model)
    if request.max_tokens is not None:
        body["max_output_tokens"] = request.max_tokens
    if request.temperature is not None and not reasoning_model:
        body["temperature"] = request.temperature
    r = request.reasoning
    if reasoning_model:
        settings: dict[str, Any] = {}
        if r is not None and r.enabled and r.level is not None:
            settings["effort"] = r.level
        if r is not None and r.enabled and r.capture:
            settings["summary"] = "auto"
        if settings:
            body["reasoning"] = settings
        # Nothing is stored server-side, so the reasoning comes back encrypted, to be sent
        # again with the next turn of a tool loop.
        body["include"] = ["reasoning.encrypted_content"]
        body["store"] = False
    tools: list[dict[str, Any]] = [
        {"type": "function", "name": t.name, "description": t.description,
         "parameters": t.parameters, "strict": False}
        for t in request.tools
    ]
    tools.extend(request.vendor_tools)
    if tools:
        body["tools"] = tools
        body["tool_choice"] = _tool_choice(request.tool_choice)
    fmt = _text_format(request)
    if fmt is not None:
        body["text"] = {"format": fmt}
    if request.stream:
        body["stream"] = True
    if request.cache == "auto":
        body["prompt_cache_key"] = prompt_cache_key(request)
    return body


# --- decode ---------------------------------------------------------------------------------


def decode_usage(raw: Any) -> Usage:
    if not isinstance(raw, dict):
        return Usage()
    inp = raw.get("input_tokens_details")
    out = raw.get("output_tokens_details")
    inp = inp if isinstance(inp, dict) else {}
    out = out if isinstance(out, dict) else {}
    return Usage(
        input_tokens=token_count(raw.get("input_tokens")),
        output_tokens=token_count(raw.get("output_tokens")),
        cache_read_tokens=token_count(inp.get("cached_tokens")),
        cache_write_tokens=token_count(inp.get("cache_write_tokens")),
        reasoning_tokens=token_count(out.get("reasoning_tokens")),
        input_includes_cached=True,
    )


def finish_reason(response: dict[str, Any]) -> str | None:
    """`incomplete_details.reason`, else the status (`completed` as `stop` or
    `tool_calls`); one that is not text reads as unknown."""
    details = response.get("incomplete_details")
    if isinstance(details, dict):
        reason = details.get("reason")
        if reason and type(reason) is str:
            return reason
    status = response.get("status")
    if status == "completed":
        calls = any(isinstance(i, dict) and i.get("type") == "function_call"
                    for i in response.get("output") or ())
        return "tool_calls" if calls else "stop"
    return status if type(status) is str else None


def _error(provider: str, model: str, error: Any) -> ProviderError:
    err = error if isinstance(error, dict) else {"message": str(error)}
    status = err.get("status")
    if not isinstance(status, int):
        status = _ERROR_STATUS.get(str(err.get("type"))) or _ERROR_STATUS.get(str(err.get("code")))
    return ProviderError(
        f"{provider} reported an error in its reply: {err.get('message', '')}",
        provider=provider, model=model, status=status, phase="body", request_sent=True,
        retryable=status is None or status in _RETRYABLE, body=json.dumps(err)[:500],
    )


def _summary_text(item: dict[str, Any]) -> str:
    return "".join(s.get("text", "") for s in item.get("summary") or ()
                   if isinstance(s, dict))


def _message_text(item: dict[str, Any]) -> str:
    return "".join(c.get("text", "") for c in item.get("content") or ()
                   if isinstance(c, dict) and c.get("type") == "output_text")


def _call_id(item: dict[str, Any]) -> str | None:
    """A call's `call_id`, else its item `id`; one that is not text is none."""
    call_id = item.get("call_id")
    if call_id and type(call_id) is str:
        return call_id
    call_id = item.get("id")
    return call_id if call_id and type(call_id) is str else None


def decode_output(output: list[Any], keep_reasoning: bool) -> tuple[Part, ...]:
    parts: list[Part] = []
    ids: set[str] = set()
    repeated = False
    for index, item in enumerate(output):
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "message":
            text = _message_text(item)
            if text:
                parts.append(TextPart(text=text))
        elif kind == "function_call":
            name, arguments = item.get("name", ""), item.get("arguments")
            if type(name) is not str:
                raise not_text("a tool call's name", name)
            if type(arguments) is not str:
                arguments = whole_arguments(arguments)
            # No id: the one a stream's assembler gives (its output index).
            call_id = _call_id(item) or f"call_{index}"
            if call_id in ids:
                repeated = True
            ids.add(call_id)
            parts.append(ToolCallPart(id=call_id, name=name, arguments=arguments))
        else:
            if kind == "reasoning" and keep_reasoning and _summary_text(item):
                parts.append(ReasoningPart(text=_summary_text(item)))
            parts.append(VendorPart(provider=VENDOR, data=item))
    if repeated:
        distinct_call_ids(parts, ids)
    return tuple(parts)


def _keep_reasoning(request: ModelRequest) -> bool:
    return request.reasoning is None or request.reasoning.capture


def decode(body: bytes, request: ModelRequest, endpoint: Endpoint) -> ModelResponse:
    data = load_body(body)
    if not isinstance(data, dict):
        raise bad_shape(endpoint.name, request.model, "the reply is not an object")
    if data.get("error") and not data.get("output"):
        raise _error(endpoint.name, request.model, data["error"])
    if not isinstance(data.get("output"), list):
        raise bad_shape(endpoint.name, request.model, "no output list")
    model, response_id = data.get("model"), data.get("id")
    return ModelResponse(
        parts=decode_output(data["output"], _keep_reasoning(request)),
        usage=decode_usage(data.get("usage")),
        finish_reason=finish_reason(data),
        # Metadata that is not text reads as unknown: the reply itself stands.
        model=model if model and type(model) is str else request.model,
        provider=endpoint.name,
        response_id=response_id if type(response_id) is str else None,
    )


class ResponsesStreamDecoder:
    """SSE events to stream events. Output indexes key tool calls; a finished item that is
    not a message or a call (reasoning, hosted tools) is emitted whole, when done."""

    def __init__(self, request: ModelRequest, endpoint: Endpoint) -> None:
        self._sse = SSEParser()
        self._provider = endpoint.name
        self._model = request.model
        self._reasoning = _keep_reasoning(request)
        self._done = False
        self._summarised: set[int] = set()

    def feed(self, data: bytes) -> list[StreamEvent]:
        return self._handle(self._sse.feed(data))

    def close(self) -> list[StreamEvent]:
        out = self._handle(self._sse.close())
        if not self._done:
            raise ProviderError(
                f"{self._provider} ended the stream before it finished",
                provider=self._provider, model=self._model, phase="read",
                request_sent=True, retryable=True,
            )
        return out

    def _handle(self, events: list[SSEEvent]) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        for event in events:
            if event.data.strip() == "[DONE]":
                continue
            payload = load_body(event.data)
            if not isinstance(payload, dict):
                raise bad_shape(self._provider, self._model, "an SSE event is not an object")
            self._event(payload, out)
        return out

    def _event(self, p: dict[str, Any], out: list[StreamEvent]) -> None:
        kind = p.get("type")
        index = p.get("output_index", 0)
        if kind == "response.output_text.delta":
            if p.get("delta"):
                out.append(TextDelta(text=p["delta"]))
        elif kind == "response.reasoning_summary_text.delta":
            if p.get("delta") and self._reasoning:
                self._summarised.add(index)
                out.append(ReasoningDelta(text=p["delta"]))
        elif kind == "response.output_item.added":
            item = p.get("item") or {}
            if item.get("type") == "function_call":
                out.append(ToolCallDelta(index=index, id=_call_id(item),
                                         name=item.get("name"),
                                         arguments=item.get("arguments") or ""))
        elif kind == "response.function_call_arguments.delta":
            out.append(ToolCallDelta(index=index, arguments=p.get("delta") or ""))
        elif kind == "response.output_item.done":
            item = p.get("item") or {}
            if item.get("type") not in ("message", "function_call"):
                text = _summary_text(item) if item.get("type") == "reasoning" else ""
                if text and self._reasoning and index not in self._summarised:
                    out.append(ReasoningDelta(text=text))
                out.append(VendorEvent(part=VendorPart(provider=VENDOR, data=item)))
        elif kind in ("response.completed", "response.incomplete"):
            self._done = True
            response = p.get("response") or {}
            out.append(UsageEvent(usage=decode_usage(response.get("usage"))))
            out.append(FinishEvent(finish_reason=finish_reason(response),
                                   model=response.get("model"), response_id=response.get("id")))
        elif kind == "response.failed":
            response = p.get("response") or {}
            raise _error(self._provider, self._model, response.get("error") or {})
        elif kind == "error":
            raise _error(self._provider, self._model, p.get("error") or p)
        # created, in_progress, content parts, hosted tools' progress: nothing we keep.


# --- the protocol object ------------------------------------------------------------------


class ResponsesProtocol:
    name = "openai_responses"

    def capabilities(self, model: str) -> Capabilities:
        return _CAPS

    def serves(self, model: str) -> bool:
        return model.lower().startswith(OPENAI_SERVED_PREFIXES)

    def encode(self, request: ModelRequest, endpoint: Endpoint) -> HttpRequest:
        headers = key_headers(endpoint, "authorization")
        if headers:
            headers["authorization"] = f"Bearer {headers['authorization']}"
        if request.stream:
            headers["accept"] = "text/event-stream"
        return build_http_request(request, endpoint, url=f"{endpoint.base_url}/responses",
                                  body=encode_body(request), headers=headers)

    def decode(self, body: bytes, request: ModelRequest, endpoint: Endpoint) -> ModelResponse:
        return decode(body, request, endpoint)

    def stream_decoder(self, request: ModelRequest, endpoint: Endpoint) -> ResponsesStreamDecoder:
        return ResponsesStreamDecoder(request, endpoint)


PROTOCOL = ResponsesProtocol()
