"""Small pure helpers shared by the Anthropic, Gemini and Ollama wire modules.

Each wire module differs in shape but repeats the same chores: join a base URL and a path
without doubling the version segment, merge `request.extra` over the body, build the
HTTP request, split a streamed body into lines, synthesise stable ids for providers that
send none, and turn an error payload into a `ProviderError`. Keeping them here keeps the
wire modules about their wire format only. No I/O.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from agentloom import _jsontext
from agentloom.errors import kind_of
from agentloom.messages import (
    Message,
    ModelRequest,
    Part,
    TextPart,
    ToolCallPart,
)
from agentloom.providers._base import Endpoint
from agentloom.providers._json import dump_body
from agentloom.transport import HttpRequest


def join_url(base_url: str, version: str, path: str) -> str:
    """`https://h` + `/v1` + `/messages`; a base that already ends in the version keeps it."""
    base = base_url.rstrip("/")
    if version and not base.endswith(version):
        base += version
    return base + path


def merge_over(body: dict[str, Any], extra: dict[str, Any]) -> None:
    """`extra` over `body`, objects merged key by key: a profile's
    `generationConfig.topK` must not wipe the `thinkingConfig` we wrote beside it."""
    for key, value in extra.items():
        current = body.get(key)
        if isinstance(current, dict) and isinstance(value, dict):
            merged = dict(current)
            merge_over(merged, value)
            body[key] = merged
        else:
            body[key] = value


def build_http_request(
    request: ModelRequest,
    endpoint: Endpoint,
    *,
    url: str,
    body: dict[str, Any],
    headers: dict[str, str],
) -> HttpRequest:
    """Merge `extra` over the body and endpoint/request headers over the protocol's own."""
    if request.extra:
        merge_over(body, request.extra)
    all_headers = {"content-type": "application/json", **headers, **endpoint.headers,
                   **request.headers}
    return HttpRequest(
        method="POST",
        url=url,
        headers=all_headers,
        body=dump_body(body),
        timeout=endpoint.timeout,
        stream=request.stream,
    )


def key_headers(endpoint: Endpoint, header: str) -> dict[str, str]:
    """The auth header when a key is set. A missing required key is refused earlier, by
    the client (naming the variable to set); a keyless gateway gets no header."""
    return {header: endpoint.api_key} if endpoint.api_key else {}


def speaker_text(message: Message, text: str) -> str:
    """Providers without a `name` field see a speaker as a `[alice] ` prefix."""
    if message.name and message.role in ("user", "assistant"):
        return f"[{message.name}] {text}"
    return text


def system_text(messages: tuple[Message, ...]) -> str | None:
    """All system turns joined: providers with a top-level system field take them there."""
    texts = [m.text for m in messages if m.role == "system" and m.text]
    return "\n\n".join(texts) if texts else None


def schema_instruction(request: ModelRequest) -> str | None:
    """The system-prompt sentence that asks for JSON where no native mode exists."""
    fmt = request.response_format
    if fmt is None:
        return None
    if fmt.kind == "json_schema" and fmt.schema is not None:
        schema = json.dumps(fmt.schema, ensure_ascii=False, sort_keys=True)
        text = (
            "Reply with a single JSON value that conforms to this JSON Schema, "
            f"and nothing else:\n{schema}"
        )
        if fmt.description:
            text = f"{fmt.description}\n{text}"
        return text
    return "Reply with a single JSON object, and nothing else."


def first_text_with_name(message: Message) -> list[Any]:
    """The message's parts with the speaker prefix put on its first text part."""
    parts: list[Any] = list(message.parts)
    if message.name and message.role in ("user", "assistant"):
        for i, part in enumerate(parts):
            if isinstance(part, TextPart):
                parts[i] = TextPart(text=speaker_text(message, part.text))
                break
        else:
            parts.insert(0, TextPart(text=speaker_text(message, "")))
    return parts


def prompt_cache_key(request: ModelRequest) -> str:
    """A key naming the request's stable prefix (model, system prompt, tools): requests
    that share it are routed to the same prompt cache (OpenAI's `prompt_cache_key`)."""
    head = json.dumps([request.model, system_text(request.messages),
                       [(t.name, t.description, t.parameters) for t in request.tools],
                       list(request.vendor_tools)], sort_keys=True, default=str)
    return "agentloom-" + hashlib.sha256(head.encode()).hexdigest()[:24]


def stable_call_id(index: int, name: str, arguments: str) -> str:
    """A deterministic id for providers that send none (Gemini, Ollama): the same reply
    gives the same id, so recordings and replays agree."""
    digest = hashlib.sha1(f"{name}\x00{arguments}".encode()).hexdigest()[:10]
    return f"call_{index}_{digest}"


def distinct_call_ids(parts: list[Part], taken: set[str]) -> None:
    """Give each call of `parts` that repeats an earlier call's id one of its own, in place:
    `c1`, `c1` become `c1`, `c1_2`. `taken` holds every id of the reply; a new id is none of
    them, so an id sent once stays as it came. The loop answers each call under its id,
    and a provider refuses the next request when two calls or two results share one
    (`tool_use ids must be unique`); some servers reuse one id across parallel calls.

    Called only for a reply that repeats an id. Linear: each base id's counter only grows,
    so each id of the reply is stepped over at most once."""
    seen: set[str] = set()
    counters: dict[str, int] = {}
    for i, part in enumerate(parts):
        if not isinstance(part, ToolCallPart):
            continue
        call_id = part.id
        if call_id in seen:
            n = counters.get(call_id, 1) + 1
            while f"{call_id}_{n}" in taken:
                n += 1
            counters[call_id] = n
            new_id = f"{call_id}_{n}"
            taken.add(new_id)
            parts[i] = ToolCallPart(id=new_id, name=part.name, arguments=part.arguments)
            call_id = new_id
        seen.add(call_id)


def whole_arguments(value: Any) -> str:
    """A non-streamed call's arguments that are not text: a JSON object is read as its JSON
    text (as the protocols whose arguments are objects send them), null as none; anything
    else (a list, a number, true/false) is no arguments object, a ValueError (the client's
    body error), as a streamed piece that is not text is."""
    if value is None:
        return ""
    if type(value) is dict:
        return json.dumps(value, ensure_ascii=False)
    raise ValueError(f"a tool call's arguments are {kind_of(value)}, not text")


def not_text(what: str, value: Any) -> ValueError:
    """A field that must be text and is not (a tool call's name, a text part): the
    client's body error."""
    return ValueError(f"{what} is {kind_of(value)}, not text")


def loads_object(text: str) -> dict[str, Any]:
    """Arguments as the model wrote them, as an object; invalid JSON goes back wrapped,
    so the provider still gets a valid body."""
    if not text:
        return {}
    try:
        value = _jsontext.loads(text)
    except ValueError:
        return {"_raw_arguments": text}
    return value if isinstance(value, dict) else {"_value": value}


MAX_TOKEN_COUNT = 10**12
"""Above this a reported token count is no real count (no call reads a trillion tokens)."""


def token_count(value: Any) -> int | None:
    """A usage field as a count of tokens, or None (unreported) when it is not one: a
    negative number, text, a fraction, NaN, true/false or an absurd size from a broken or
    hostile server must not lower a budget's spending or break the pricing. A whole number
    written as a float (`12.0`) is that count."""
    if type(value) is int:
        return value if 0 <= value <= MAX_TOKEN_COUNT else None
    if type(value) is float and value.is_integer() and 0 <= value <= MAX_TOKEN_COUNT:
        return int(value)
    return None


def bad_shape(provider: str, model: str, what: str) -> ValueError:
    """A reply of the wrong shape. ValueError, as for JSON that does not parse: the client
    turns both into one body error."""
    return ValueError(f"{provider} reply for model {model}: {what}")
