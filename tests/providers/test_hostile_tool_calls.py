"""Hostile streamed tool calls.

A tool call whose index is not a whole number (text, a fraction, true/false, a list): the
reply is refused as unreadable, in every protocol that streams indexes, instead of the
call being dropped and the raw index left among the reply's parts.

Arguments in thousands of pieces that never close: each piece costs its own length (the
old assembler copied the whole argument string so far on every piece, so 80,000 pieces
of 80 bytes, a 13 MB stream, held the event loop for a minute and more). Measured by the
memory one more piece allocates, which is deterministic, not by time.
"""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agentloom.errors import ProviderError
from agentloom.http import AiohttpTransport
from agentloom.messages import (
    Message,
    ModelRequest,
    ModelResponse,
    ToolCallDelta,
    ToolCallPart,
)
from agentloom.providers import get_protocol, vendor_endpoint
from agentloom.providers._assemble import ResponseBuilder
from agentloom.providers._base import Endpoint
from agentloom.routing import ProviderClient
from agentloom.testing._server import FakeBadBody
from agentloom.testing.fake_openai import FakeOpenAIServer

BAD_INDEXES = ["0", 1.5, True, [0], {"i": 0}]


def _sse(*events: dict[str, Any], named: bool = False) -> bytes:
    return b"".join(
        ((f"event: {e['type']}\n" if named else "") + f"data: {json.dumps(e)}\n\n").encode()
        for e in events)


def _openai(index: Any) -> bytes:
    call = {"index": index, "id": "c1", "type": "function",
            "function": {"name": "get", "arguments": '{"a":1}'}}
    return _sse({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]},
                {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}
                ) + b"data: [DONE]\n\n"


def _anthropic(index: Any) -> bytes:
    return _sse(
        {"type": "message_start", "message": {"id": "m", "model": "claude-sonnet-4-5",
                                              "usage": {"input_tokens": 1}}},
        {"type": "content_block_start", "index": index,
         "content_block": {"type": "tool_use", "id": "c1", "name": "get", "input": {}}},
        {"type": "content_block_delta", "index": index,
         "delta": {"type": "input_json_delta", "partial_json": '{"a":1}'}},
        {"type": "content_block_stop", "index": index},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
        {"type": "message_stop"}, named=True)


def _responses(index: Any) -> bytes:
    item = {"type": "function_call", "id": "fc1", "call_id": "c1", "name": "get",
            "arguments": ""}
    return _sse(
        {"type": "response.output_item.added", "output_index": index, "item": item},
        {"type": "response.function_call_arguments.delta", "output_index": index,
         "delta": '{"a":1}'},
        {"type": "response.completed", "response": {"id": "r", "status": "completed",
                                                    "model": "gpt-5", "output": []}},
        named=True)


CASES = {
    "openai": ("openai", "gpt-4o", _openai),
    "anthropic": ("anthropic", "claude-sonnet-4-5", _anthropic),
    "responses": ("openai_responses", "gpt-5", _responses),
}


def _decode(case: str, index: Any) -> ModelResponse:
    protocol, model, make = CASES[case]
    ep = Endpoint(name=case, protocol=protocol, base_url="http://127.0.0.1:1", api_key="k")
    request = ModelRequest(model=model, messages=(Message.user("hi"),), stream=True)
    decoder = get_protocol(protocol).stream_decoder(request, ep)
    builder = ResponseBuilder(model)
    for event in decoder.feed(make(index)) + decoder.close():
        builder.add(event)
    return builder.build(provider=case)


@pytest.mark.parametrize("case", CASES)
def test_a_whole_number_index_gives_the_call(case: str) -> None:
    response = _decode(case, 0)
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("c1", "get", '{"a":1}')]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("index", BAD_INDEXES, ids=repr)
def test_an_index_that_is_not_a_whole_number_is_a_bad_reply(case: str, index: Any) -> None:
    try:
        response = _decode(case, index)
    except (ValueError, TypeError) as exc:  # the client makes both a body error
        assert isinstance(index, list | dict) or "index" in str(exc)
        return
    pytest.fail(f"decoded to parts {response.parts!r}, tool calls {response.tool_calls!r}")


def test_an_openai_null_index_reads_as_a_missing_one() -> None:
    response = _decode("openai", None)
    assert response.tool_calls == (ToolCallPart(id="c1", name="get", arguments='{"a":1}'),)


def test_a_piece_of_unending_arguments_costs_the_piece_not_the_arguments() -> None:
    builder = ResponseBuilder("m")
    builder.add(ToolCallDelta(index=0, id="c1", name="write", arguments='{"text": "'))
    piece = "x" * 64
    for _ in range(1024 * 1024 // len(piece)):  # 1 MiB of arguments so far
        builder.add(ToolCallDelta(index=0, arguments=piece))
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        builder.add(ToolCallDelta(index=0, arguments=piece))
        extra = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert extra < 64 * 1024, f"one {len(piece)}-character piece allocated {extra} bytes"
    builder.add(ToolCallDelta(index=0, arguments='"}'))
    (call,) = builder.build(provider="p").tool_calls
    assert json.loads(call.arguments) == {"text": "x" * (1024 * 1024 + 64)}


@pytest.mark.parametrize("arguments", [5, {"a": 1}, ["{"]], ids=repr)
def test_arguments_that_are_not_text_are_a_bad_reply(arguments: Any) -> None:
    builder = ResponseBuilder("m")
    with pytest.raises(ValueError, match="arguments are"):
        builder.add(ToolCallDelta(index=0, id="c1", name="f", arguments=arguments))


@pytest.fixture
async def server() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as s:
        yield s  # type: ignore[misc]


async def test_the_client_raises_a_body_error_naming_the_index(
        server: FakeOpenAIServer) -> None:
    transport = AiohttpTransport()
    try:
        ep = vendor_endpoint("openai", api_key="sk", base_url=server.openai_base_url)
        client = ProviderClient(ep, get_protocol("openai"), transport)
        server.script(FakeBadBody(body=_openai("0")))
        request = ModelRequest(model="gpt-4o", messages=(Message.user("hi"),), stream=True)
        with pytest.raises(ProviderError) as info:
            await client.complete(request)
    finally:
        await transport.aclose()
    assert (info.value.phase, info.value.request_sent, info.value.provider) == (
        "body", True, "openai")
    assert "index" in str(info.value)
