"""ProviderClient + AiohttpTransport against FakeOpenAIServer on loopback: plain and
streamed replies, tool calls, usage, errors, drops and bad bodies, end to end."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from agentloom.errors import ProviderError
from agentloom.http import AiohttpTransport
from agentloom.messages import Message, ModelRequest, TextDelta, ToolSpec
from agentloom.providers import get_protocol, vendor_endpoint
from agentloom.providers._base import AttemptRecord
from agentloom.routing import ProviderClient
from agentloom.testing._server import FakeBadBody, FakeDrop, FakeError, FakeReply
from agentloom.testing.fake_openai import FakeOpenAIServer

REQ = ModelRequest(model="gpt-4o-mini", messages=(Message.user("hi"),), temperature=0)


@pytest.fixture
async def setup() -> AsyncIterator[tuple[FakeOpenAIServer, ProviderClient]]:
    transport = AiohttpTransport()
    async with FakeOpenAIServer() as server:
        assert isinstance(server, FakeOpenAIServer)
        ep = vendor_endpoint("openai", api_key="sk-fake", base_url=server.openai_base_url)
        yield server, ProviderClient(ep, get_protocol("openai"), transport)
    await transport.aclose()


async def test_plain_reply_and_recorded_request(
    setup: tuple[FakeOpenAIServer, ProviderClient]
) -> None:
    server, client = setup
    server.script(FakeReply(text="Hi there", cached_tokens=4, reasoning_tokens=2))
    resp = await client.complete(REQ)
    assert resp.text == "Hi there" and resp.finish_reason == "stop"
    assert (resp.usage.input_tokens, resp.usage.output_tokens, resp.usage.cache_read_tokens,
            resp.usage.reasoning_tokens) == (12, 7, 4, 2)
    seen = server.requests[0]
    assert seen.path == "/v1/chat/completions"
    assert seen.headers["authorization"] == "Bearer sk-fake"
    assert seen.json["messages"] == [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize("pieces", [1, 5, 50])
async def test_streamed_text_arrives_in_pieces(
    setup: tuple[FakeOpenAIServer, ProviderClient], pieces: int
) -> None:
    server, client = setup
    text = "The quick brown fox jumps over the lazy dog, twice over, for the stream test."
    server.script(FakeReply(text=text, chunks=pieces))
    events: list[Any] = []
    resp = await client.complete(REQ.replace(stream=True), on_event=events.append)
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(deltas) == pieces and "".join(deltas) == text == resp.text
    assert resp.time_to_first_token is not None and resp.time_to_first_token > 0
    assert resp.usage.input_tokens == 12  # from the include_usage chunk
    assert server.requests[0].json["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize("stream", [False, True])
async def test_tool_calls(setup: tuple[FakeOpenAIServer, ProviderClient], stream: bool) -> None:
    server, client = setup
    server.script(FakeReply(tool_calls=[("lookup", {"q": "x"}), ("other", "{}")]))
    req = REQ.replace(stream=stream, tools=(ToolSpec(name="lookup"), ToolSpec(name="other")))
    resp = await client.complete(req)
    assert [(c.id, c.name, c.arguments) for c in resp.tool_calls] == [
        ("call_0", "lookup", '{"q": "x"}'), ("call_1", "other", "{}")]
    assert resp.finish_reason == "tool_calls"


@pytest.mark.parametrize("stream", [False, True])
async def test_error_status_with_retry_after(
    setup: tuple[FakeOpenAIServer, ProviderClient], stream: bool
) -> None:
    server, client = setup
    server.script(FakeError(status=429, body={"error": {"message": "slow down"}},
                            headers={"Retry-After": "2"}))
    with pytest.raises(ProviderError) as info:
        await client.complete(REQ.replace(stream=stream))
    err = info.value
    assert (err.status, err.retryable, err.retry_after, err.request_sent) == (429, True, 2.0, True)
    assert "slow down" in str(err)


async def test_drop_before_response(setup: tuple[FakeOpenAIServer, ProviderClient]) -> None:
    server, client = setup
    server.script(FakeDrop())
    attempts: list[AttemptRecord] = []
    with pytest.raises(ProviderError) as info:
        await client.complete(REQ.replace(stream=True), on_attempt=attempts.append)
    assert info.value.status is None and info.value.retryable and not info.value.partial
    assert attempts[0].phase == info.value.phase


async def test_drop_mid_stream_is_partial(setup: tuple[FakeOpenAIServer, ProviderClient]) -> None:
    server, client = setup
    server.script(FakeDrop(after_chunks=3))
    events: list[Any] = []
    with pytest.raises(ProviderError) as info:
        await client.complete(REQ.replace(stream=True), on_event=events.append)
    assert info.value.partial is True and info.value.phase == "read"
    assert info.value.request_sent is True and events


async def test_bad_body(setup: tuple[FakeOpenAIServer, ProviderClient]) -> None:
    server, client = setup
    server.script(FakeBadBody())
    with pytest.raises(ProviderError) as info:
        await client.complete(REQ)
    assert (info.value.phase, info.value.retryable) == ("body", True)
    # The same connection still works afterwards.
    assert (await client.complete(REQ)).text == "Hello from the fake server."


async def test_models_route_and_path_without_v1(
    setup: tuple[FakeOpenAIServer, ProviderClient]
) -> None:
    server, _ = setup
    transport = AiohttpTransport()
    try:
        from agentloom.http import HttpRequest

        resp = await transport.handle(HttpRequest(method="GET", url=f"{server.base_url}/v1/models"))
        assert resp.status == 200 and b"gpt-4o-mini" in await resp.read()
        ep = vendor_endpoint("generic_openai", base_url=server.base_url)
        client = ProviderClient(ep, get_protocol("openai"), transport)
        assert (await client.complete(REQ)).text
        assert server.requests[-1].path == "/chat/completions"
        assert "authorization" not in server.requests[-1].headers
    finally:
        await transport.aclose()


def test_import_agentloom_stays_light() -> None:
    import subprocess
    import sys

    code = ("import sys, agentloom, agentloom.http, agentloom.providers; "
            "print('aiohttp' in sys.modules, 'agentloom.providers.openai' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
