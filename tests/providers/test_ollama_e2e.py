"""Ollama end to end: ProviderClient + AiohttpTransport against the fake server, with the
`ollama` SDK's pydantic types judging the fake's replies and our messages."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import ollama
import pytest

from agentloom.errors import ProviderError
from agentloom.http import AiohttpTransport
from agentloom.messages import ImagePart, Message, ModelRequest, ReasoningConfig
from agentloom.providers import Endpoint, get_protocol
from agentloom.routing import ProviderClient
from agentloom.testing._server import FakeBadBody, FakeDrop, FakeError, FakeReply
from agentloom.testing.fake_ollama import FakeOllamaServer

MODEL = "llama3.2:3b"
PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 16


@pytest.fixture
async def server() -> AsyncIterator[FakeOllamaServer]:
    fake = FakeOllamaServer()
    async with fake:
        yield fake


@pytest.fixture
async def client(server: FakeOllamaServer) -> AsyncIterator[ProviderClient]:
    transport = AiohttpTransport()
    endpoint = Endpoint(name="ollama", protocol="ollama", base_url=server.base_url)
    yield ProviderClient(endpoint, get_protocol("ollama"), transport)
    await transport.aclose()


def request(stream: bool = False, **kw: Any) -> ModelRequest:
    return ModelRequest(
        model=MODEL, stream=stream,
        messages=(Message.system("You describe pictures."),
                  Message.user("What is this?", ImagePart(media_type="image/png", data=PNG))),
        **{"reasoning": ReasoningConfig(enabled=True, level="low"), **kw},
    )


@pytest.mark.parametrize("stream", [False, True])
async def test_same_result_plain_and_streamed(
    server: FakeOllamaServer, client: ProviderClient, stream: bool
) -> None:
    server.script(FakeReply(text="A small test image.", reasoning="It is tiny.",
                            input_tokens=30, output_tokens=11))
    r = await client.complete(request(stream))
    assert r.text == "A small test image." and r.reasoning == "It is tiny."
    assert r.finish_reason == "stop" and r.provider == "ollama" and r.model == MODEL
    assert (r.usage.input_tokens, r.usage.output_tokens) == (30, 11)
    assert r.usage.reasoning_tokens is None
    assert (r.time_to_first_token is not None) == stream
    sent = server.requests[0].json
    assert sent["think"] == "low" and sent["stream"] is stream
    for message in sent["messages"]:
        # The SDK wraps images in `Image`, which serialises back to the base64 we sent.
        images = [ollama.Image(value=i) for i in message.get("images", [])]
        parsed = ollama.Message.model_validate({**message, "images": images or None})
        assert parsed.model_dump(exclude_none=True).get("images") == message.get("images")


async def test_fake_replies_parse_with_the_sdk(server: FakeOllamaServer) -> None:
    body = {"model": MODEL, "think": True}
    reply = FakeReply(text="Hi there", reasoning="r", tool_calls=[("f", {"a": 1})])
    whole = ollama.ChatResponse.model_validate(server.final(body, reply, whole=True))
    assert whole.message.thinking == "r" and whole.message.tool_calls
    for line in server.lines(body, reply):
        ollama.ChatResponse.model_validate(json.loads(line))


async def test_tool_calls_streamed(server: FakeOllamaServer, client: ProviderClient) -> None:
    server.script(FakeReply(tool_calls=[("weather", {"city": "Oslo"})]))
    r = await client.complete(request(stream=True))
    assert r.tool_calls[0].name == "weather"
    assert json.loads(r.tool_calls[0].arguments) == {"city": "Oslo"}


async def test_errors(server: FakeOllamaServer, client: ProviderClient) -> None:
    server.script(FakeError(status=404, body="model 'x' not found"),
                  FakeError(status=503, body="busy"), FakeBadBody(), FakeDrop())
    with pytest.raises(ProviderError) as info:
        await client.complete(request())
    assert info.value.status == 404 and "not found" in str(info.value)
    with pytest.raises(ProviderError) as info:
        await client.complete(request())
    assert info.value.status == 503 and info.value.retryable
    with pytest.raises(ProviderError) as info:
        await client.complete(request())
    assert info.value.phase == "body"
    with pytest.raises(ProviderError) as info:
        await client.complete(request())
    assert info.value.status is None


async def test_drop_mid_stream_is_partial(server: FakeOllamaServer,
                                          client: ProviderClient) -> None:
    server.responder = lambda _body: FakeReply(text="one two three four")
    server.script(FakeDrop(after_chunks=2))
    with pytest.raises(ProviderError) as info:
        await client.complete(request(stream=True))
    assert info.value.partial is True
