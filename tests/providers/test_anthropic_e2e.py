"""Anthropic end to end: ProviderClient + AiohttpTransport against the fake server, and the
official SDK's types as the judge of the wire shapes (requests we send, replies it sends)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any, get_type_hints

import pytest
from anthropic import types as at
from pydantic import TypeAdapter

from agentloom.errors import ProviderError
from agentloom.http import AiohttpTransport
from agentloom.messages import (
    ImagePart,
    Message,
    ModelRequest,
    ReasoningConfig,
    ReasoningPart,
    StreamEvent,
    ToolResultPart,
    ToolSpec,
)
from agentloom.providers import Endpoint, get_protocol
from agentloom.routing import ProviderClient
from agentloom.testing._server import FakeBadBody, FakeDrop, FakeError, FakeReply
from agentloom.testing.fake_anthropic import FakeAnthropicServer

MODEL = "claude-sonnet-4-5"
PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 16


def force(value: Any) -> Any:
    """Pydantic validates Iterable fields lazily: walk them so every item is checked."""
    if isinstance(value, dict):
        return {k: force(v) for k, v in value.items()}
    if isinstance(value, (str, bytes)):
        return value
    if hasattr(value, "__iter__"):
        return [force(v) for v in value]
    return value


_PARAMS = {True: at.message_create_params.MessageCreateParamsStreaming,
           False: at.message_create_params.MessageCreateParamsNonStreaming}
# Kept alive: a lazily validated iterator needs its adapter's definitions.
_ADAPTERS: dict[bool, TypeAdapter[Any]] = {k: TypeAdapter(v) for k, v in _PARAMS.items()}


def check_request(body: dict[str, Any]) -> None:
    streaming = bool(body.get("stream"))
    params = _PARAMS[streaming]
    force(_ADAPTERS[streaming].validate_python(body))
    # The installed SDK no longer lists temperature; the spec sends it as given, and the
    # API still takes it on models without thinking.
    known = set(get_type_hints(params)) | {"temperature"}
    assert set(body) <= known, set(body) - known


@pytest.fixture
async def server() -> AsyncIterator[FakeAnthropicServer]:
    fake = FakeAnthropicServer()
    async with fake:
        yield fake


@pytest.fixture
async def client(server: FakeAnthropicServer) -> AsyncIterator[ProviderClient]:
    transport = AiohttpTransport()
    endpoint = Endpoint(name="anthropic", protocol="anthropic", base_url=server.base_url,
                        api_key="sk-test")
    yield ProviderClient(endpoint, get_protocol("anthropic"), transport)
    await transport.aclose()


def request(stream: bool = False, **kw: Any) -> ModelRequest:
    return ModelRequest(
        model=MODEL, stream=stream,
        messages=(Message.system("You describe pictures."),
                  Message.user("What is this?", ImagePart(media_type="image/png", data=PNG))),
        **{"reasoning": ReasoningConfig(enabled=True, budget_tokens=2000), **kw},
    )


@pytest.mark.parametrize("stream", [False, True])
async def test_same_result_plain_and_streamed(
    server: FakeAnthropicServer, client: ProviderClient, stream: bool
) -> None:
    server.script(FakeReply(text="A small test image.", reasoning="It is tiny.",
                            reasoning_signature="SIG", input_tokens=30, output_tokens=11,
                            cached_tokens=8, cache_write_tokens=2))
    events: list[StreamEvent] = []
    r = await client.complete(request(stream), on_event=events.append)
    assert r.text == "A small test image."
    assert r.parts[0] == ReasoningPart(text="It is tiny.", signature="SIG")
    assert r.finish_reason == "end_turn" and r.provider == "anthropic" and r.model == MODEL
    u = r.usage
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens) == (
        30, 11, 8, 2)
    assert u.input_includes_cached is False
    assert (r.time_to_first_token is not None) == stream
    assert bool(events) == stream
    seen = server.requests[0]
    assert seen.path == "/v1/messages" and seen.headers["x-api-key"] == "sk-test"
    assert seen.json["max_tokens"] == 2000 + 4096
    check_request(seen.json)


async def test_thinking_signature_goes_back_on_the_next_turn(
    server: FakeAnthropicServer, client: ProviderClient
) -> None:
    server.script(
        FakeReply(reasoning="Need the weather.", reasoning_signature="SIG-1",
                  tool_calls=[("weather", {"city": "Oslo"})]),
        FakeReply(text="It is cold."),
    )
    first_request = request(tools=(ToolSpec(name="weather"),))
    first = await client.complete(first_request)
    assert first.finish_reason == "tool_use"
    call = first.tool_calls[0]
    second_request = first_request.replace(messages=(
        *first_request.messages, first.to_message(),
        Message(role="tool", parts=(ToolResultPart(call_id=call.id, name=call.name,
                                                   content="-3 C"),)),
    ))
    second = await client.complete(second_request)
    assert second.text == "It is cold."
    sent = server.requests[1].json
    check_request(sent)
    assistant = sent["messages"][1]["content"]
    assert assistant[0] == {"type": "thinking", "thinking": "Need the weather.",
                            "signature": "SIG-1"}
    assert assistant[-1]["type"] == "tool_use" and assistant[-1]["id"] == call.id
    assert sent["messages"][2]["content"][0]["tool_use_id"] == call.id


async def test_uncaptured_thinking_keeps_its_signature(
    server: FakeAnthropicServer, client: ProviderClient
) -> None:
    server.script(FakeReply(text="ok", reasoning="secret", reasoning_signature="SIG"))
    r = await client.complete(request(
        stream=True, reasoning=ReasoningConfig(enabled=True, budget_tokens=2000, capture=False)))
    assert r.reasoning is None
    assert ReasoningPart(text="", signature="SIG") in r.parts


async def test_fake_replies_parse_with_the_sdk(server: FakeAnthropicServer) -> None:
    reply = FakeReply(text="Hi there", reasoning="r", tool_calls=[("f", {"a": 1})],
                      cached_tokens=3)
    message = at.Message.model_validate(server.message({"model": MODEL}, reply))
    assert [b.type for b in message.content] == ["thinking", "text", "tool_use"]
    assert message.usage.cache_read_input_tokens == 3
    adapter: TypeAdapter[Any] = TypeAdapter(at.RawMessageStreamEvent)
    kinds = []
    for raw in server.events({"model": MODEL}, reply):
        text = raw.decode()
        data = text.split("data: ", 1)[1].strip()
        event = json.loads(data)
        if event["type"] != "ping":
            adapter.validate_python(event)
        kinds.append(event["type"])
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"


async def test_prefill_is_continued_and_returned_whole(
    server: FakeAnthropicServer, client: ProviderClient
) -> None:
    from agentloom.messages import ResponseFormat

    server.script('{"label": "cat"}', '{"label": "dog"}')
    base = ModelRequest(model=MODEL, messages=(Message.user("classify"),),
                        response_format=ResponseFormat())
    assert (await client.complete(base)).text == '{"label": "cat"}'
    assert (await client.complete(base.replace(stream=True))).text == '{"label": "dog"}'
    assert server.requests[0].json["messages"][-1]["content"][0]["text"] == "{"


async def test_errors(server: FakeAnthropicServer, client: ProviderClient) -> None:
    server.script(FakeError(status=429, body="slow down", headers={"retry-after": "3"}),
                  FakeError(status=400, body="bad"), FakeBadBody(), FakeDrop())
    plain = request()
    with pytest.raises(ProviderError) as info:
        await client.complete(plain)
    assert info.value.status == 429 and info.value.retryable and info.value.retry_after == 3
    assert "slow down" in str(info.value)
    with pytest.raises(ProviderError) as info:
        await client.complete(plain)
    assert info.value.status == 400 and not info.value.retryable
    with pytest.raises(ProviderError) as info:
        await client.complete(plain)
    assert info.value.phase == "body"
    with pytest.raises(ProviderError) as info:
        await client.complete(plain)
    assert info.value.status is None and info.value.retryable


async def test_drop_mid_stream_is_partial(
    server: FakeAnthropicServer, client: ProviderClient
) -> None:
    server.responder = lambda _body: FakeReply(text="one two three four five")
    server.script(FakeDrop(after_chunks=4))
    with pytest.raises(ProviderError) as info:
        await client.complete(request(stream=True))
    assert info.value.partial is True


async def test_missing_key_is_refused_by_the_fake(server: FakeAnthropicServer) -> None:
    transport = AiohttpTransport()
    try:
        keyless = ProviderClient(
            Endpoint(name="anthropic", protocol="anthropic", base_url=server.base_url),
            get_protocol("anthropic"), transport)
        with pytest.raises(ProviderError) as info:
            await keyless.complete(request())
        assert info.value.status == 401
    finally:
        await transport.aclose()


def test_every_block_kind_is_a_valid_sdk_param() -> None:
    from agentloom.messages import (
        DocumentPart,
        NamedToolChoice,
        ResponseFormat,
        TextPart,
        ToolCallPart,
    )
    from agentloom.providers.anthropic import encode_body

    conversation = (
        Message.system("Sys."),
        Message.user("look", ImagePart(media_type="image/png", data=PNG),
                     ImagePart(url="https://example.com/a.png"), DocumentPart(data=b"%PDF"),
                     name="alice"),
        Message(role="assistant", parts=(
            ReasoningPart(text="t", signature="S"), ReasoningPart(text="", redacted="R"),
            TextPart(text="calling"), ToolCallPart(id="t1", name="f", arguments="{}"))),
        Message(role="tool", parts=(ToolResultPart(call_id="t1", name="f", content="x",
                                                   is_error=True),)),
    )
    for stream in (False, True):
        check_request(encode_body(ModelRequest(
            model=MODEL, messages=conversation, stream=stream, temperature=0.5, max_tokens=99,
            tools=(ToolSpec(name="f"),), tool_choice=NamedToolChoice(name="f"),
            vendor_tools=({"type": "web_search_20250305", "name": "web_search"},),
            response_format=ResponseFormat(kind="json_schema", schema={"type": "object"}),
        )))
