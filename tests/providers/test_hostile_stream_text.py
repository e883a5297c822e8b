"""A stream whose text or reasoning piece is not text (a number, a list): the call fails
with a body ProviderError, never a bare TypeError out of `ProviderClient.complete` (the
pieces were joined in `ResponseBuilder.build`, after the client stopped mapping errors,
so retries, fallback and the run summary never saw a provider failure)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentloom.errors import ProviderError
from agentloom.http import AiohttpTransport
from agentloom.messages import Message, ModelRequest, ReasoningDelta, TextDelta
from agentloom.providers import get_protocol, vendor_endpoint
from agentloom.providers._assemble import ResponseBuilder
from agentloom.routing import ProviderClient
from agentloom.testing._server import FakeBadBody
from agentloom.testing.fake_anthropic import FakeAnthropicServer


def _events(*events: dict[str, Any]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


@pytest.mark.parametrize("delta", [
    {"type": "text_delta", "text": 5},
    {"type": "text_delta", "text": ["a"]},
    {"type": "thinking_delta", "thinking": 5},
    {"type": "signature_delta", "signature": {"s": 1}},
], ids=lambda d: f"{d['type']}-{type(next(iter(v for k, v in d.items() if k != 'type'))).__name__}")
async def test_a_piece_that_is_not_text_is_a_body_error(delta: dict[str, Any]) -> None:
    body = _events(
        {"type": "message_start", "message": {"id": "m", "model": "claude-sonnet-4-5",
                                              "usage": {"input_tokens": 1}}},
        {"type": "content_block_start", "index": 0,
         "content_block": {"type": "thinking" if "text" not in delta else "text",
                           "text": "", "thinking": ""}},
        {"type": "content_block_delta", "index": 0, "delta": delta},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}},
        {"type": "message_stop"})
    transport = AiohttpTransport()
    try:
        async with FakeAnthropicServer() as server:
            server.script(FakeBadBody(body=body))
            ep = vendor_endpoint("anthropic", api_key="sk", base_url=server.base_url)
            client = ProviderClient(ep, get_protocol("anthropic"), transport)
            request = ModelRequest(model="claude-sonnet-4-5", messages=(Message.user("hi"),),
                                   stream=True)
            with pytest.raises(ProviderError) as info:
                await client.complete(request)
    finally:
        await transport.aclose()
    assert (info.value.provider, info.value.phase, info.value.request_sent) == (
        "anthropic", "body", True)
    assert "not text" in str(info.value)


def test_text_and_reasoning_that_are_text_still_assemble() -> None:
    builder = ResponseBuilder("m")
    for event in (ReasoningDelta(text="think"), ReasoningDelta(signature="sig"),
                  TextDelta(text="hel"), TextDelta(text="lo")):
        builder.add(event)
    response = builder.build(provider="p")
    assert (response.reasoning, response.text) == ("think", "hello")
