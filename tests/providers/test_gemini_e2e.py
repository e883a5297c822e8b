"""Gemini end to end: ProviderClient + AiohttpTransport against the fake server, with the
google-genai SDK's pydantic types judging the request bodies and the fake's replies."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from google.genai import types as gt

from agentloom.errors import ProviderError
from agentloom.http import AiohttpTransport
from agentloom.messages import (
    ImagePart,
    Message,
    ModelRequest,
    ReasoningConfig,
    ReasoningPart,
    ResponseFormat,
    ToolResultPart,
    ToolSpec,
)
from agentloom.providers import Endpoint, get_protocol
from agentloom.routing import ProviderClient
from agentloom.testing._server import FakeBadBody, FakeDrop, FakeError, FakeReply
from agentloom.testing.fake_gemini import FakeGeminiServer

MODEL = "gemini-2.5-flash"
PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 16


def check_request(body: dict[str, Any]) -> None:
    """Our body, read by the SDK: contents, system instruction, config and tools."""
    for content in body["contents"]:
        gt.Content.model_validate(content)
    if "systemInstruction" in body:
        gt.Content.model_validate(body["systemInstruction"])
    config = dict(body.get("generationConfig", {}))
    gt.GenerationConfig.model_validate(config)
    for tool in body.get("tools", []):
        gt.Tool.model_validate(tool)
    if "toolConfig" in body:
        gt.ToolConfig.model_validate(body["toolConfig"])
    known = {"contents", "systemInstruction", "generationConfig", "tools", "toolConfig",
             "safetySettings", "cachedContent"}
    assert set(body) <= known


@pytest.fixture
async def server() -> AsyncIterator[FakeGeminiServer]:
    fake = FakeGeminiServer()
    async with fake:
        yield fake


@pytest.fixture
async def client(server: FakeGeminiServer) -> AsyncIterator[ProviderClient]:
    transport = AiohttpTransport()
    endpoint = Endpoint(name="gemini", protocol="gemini", base_url=server.base_url,
                        api_key="g-key")
    yield ProviderClient(endpoint, get_protocol("gemini"), transport)
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
    server: FakeGeminiServer, client: ProviderClient, stream: bool
) -> None:
    server.script(FakeReply(text="A small test image.", reasoning="It is tiny.",
                            input_tokens=30, output_tokens=11, reasoning_tokens=6,
                            cached_tokens=10))
    r = await client.complete(request(stream))
    assert r.text == "A small test image."
    assert r.reasoning == "It is tiny."
    assert r.finish_reason == "STOP" and r.provider == "gemini" and r.model == MODEL
    u = r.usage
    assert (u.input_tokens, u.output_tokens, u.reasoning_tokens, u.cache_read_tokens) == (
        30, 17, 6, 10)
    assert u.input_includes_cached is True
    assert (r.time_to_first_token is not None) == stream
    seen = server.requests[0]
    action = "streamGenerateContent" if stream else "generateContent"
    assert seen.path == f"/v1beta/models/{MODEL}:{action}"
    assert seen.headers["x-goog-api-key"] == "g-key"
    check_request(seen.json)


async def test_thoughts_only_when_captured(
    server: FakeGeminiServer, client: ProviderClient
) -> None:
    server.script(FakeReply(text="ok", reasoning="secret"))
    uncaptured = request(reasoning=ReasoningConfig(enabled=True, capture=False))
    r = await client.complete(uncaptured)
    assert r.reasoning is None
    assert server.requests[0].json["generationConfig"]["thinkingConfig"] == {
        "includeThoughts": False}


@pytest.mark.parametrize("stream", [False, True])
async def test_tool_loop_with_signature(
    server: FakeGeminiServer, client: ProviderClient, stream: bool
) -> None:
    server.script(FakeReply(tool_calls=[("weather", {"city": "Oslo"}), ("time", {})],
                            reasoning_signature="U0lH"),
                  FakeReply(text="Cold, and late."))
    first_request = request(stream, tools=(ToolSpec(name="weather"), ToolSpec(name="time")))
    first = await client.complete(first_request)
    assert [c.name for c in first.tool_calls] == ["weather", "time"]
    assert any(isinstance(p, ReasoningPart) and p.signature == "U0lH" for p in first.parts)
    results = tuple(ToolResultPart(call_id=c.id, name=c.name, content="x")
                    for c in first.tool_calls)
    second = await client.complete(first_request.replace(messages=(
        *first_request.messages, first.to_message(), Message(role="tool", parts=results))))
    assert second.text == "Cold, and late."
    sent = server.requests[1].json
    check_request(sent)
    model_turn = sent["contents"][1]
    assert model_turn["parts"][0]["thoughtSignature"] == "U0lH"
    assert model_turn["parts"][0]["functionCall"] == {"name": "weather",
                                                      "args": {"city": "Oslo"}}
    assert [p["functionResponse"]["name"] for p in sent["contents"][2]["parts"]] == [
        "weather", "time"]


async def test_structured_output_request(server: FakeGeminiServer,
                                         client: ProviderClient) -> None:
    server.script('{"n": 3}')
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
              "additionalProperties": False}
    r = await client.complete(ModelRequest(
        model=MODEL, messages=(Message.user("count"),),
        response_format=ResponseFormat(kind="json_schema", schema=schema)))
    assert json.loads(r.text) == {"n": 3}
    config = server.requests[0].json["generationConfig"]
    gt.GenerationConfig.model_validate(config)
    assert "additionalProperties" not in json.dumps(config)


async def test_fake_replies_parse_with_the_sdk(server: FakeGeminiServer) -> None:
    body = {"generationConfig": {"thinkingConfig": {"includeThoughts": True}}}
    reply = FakeReply(text="Hi there", reasoning="r", tool_calls=[("f", {"a": 1})],
                      reasoning_signature="U0lH", reasoning_tokens=2, cached_tokens=1)
    parsed = gt.GenerateContentResponse.model_validate(server.response(body, MODEL, reply))
    assert parsed.usage_metadata is not None
    assert parsed.usage_metadata.thoughts_token_count == 2
    assert parsed.candidates and parsed.candidates[0].finish_reason == gt.FinishReason.STOP
    for raw in server.chunks(body, MODEL, reply):
        assert raw.endswith(b"\r\n\r\n")
        gt.GenerateContentResponse.model_validate(json.loads(raw[len(b"data: "):]))


async def test_errors(server: FakeGeminiServer, client: ProviderClient) -> None:
    server.script(FakeError(status=429, body="quota"), FakeError(status=400, body="bad"),
                  FakeBadBody(), FakeDrop())
    with pytest.raises(ProviderError) as info:
        await client.complete(request())
    assert info.value.status == 429 and info.value.retryable and "quota" in str(info.value)
    with pytest.raises(ProviderError) as info:
        await client.complete(request())
    assert info.value.status == 400 and not info.value.retryable
    with pytest.raises(ProviderError) as info:
        await client.complete(request())
    assert info.value.phase == "body"
    with pytest.raises(ProviderError) as info:
        await client.complete(request())
    assert info.value.status is None


async def test_drop_mid_stream_is_partial(server: FakeGeminiServer,
                                          client: ProviderClient) -> None:
    server.responder = lambda _body: FakeReply(text="one two three four")
    server.script(FakeDrop(after_chunks=2))
    with pytest.raises(ProviderError) as info:
        await client.complete(request(stream=True))
    assert info.value.partial is True
