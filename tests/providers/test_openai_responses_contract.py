"""The official `openai` SDK's types judge our Responses API wire: the requests we send
validate as `ResponseCreateParams`, and the fake server's replies (plain and every
streamed event) validate as `Response` and `ResponseStreamEvent`."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest
from openai.types.responses import Response, ResponseStreamEvent, response_create_params
from pydantic import TypeAdapter

from agentloom.http import AiohttpTransport, HttpRequest
from agentloom.messages import (
    Message,
    ModelRequest,
    ReasoningConfig,
    ResponseFormat,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    VendorPart,
)
from agentloom.providers import get_protocol, vendor_endpoint
from agentloom.testing._server import FakeReply
from agentloom.testing.fake_openai import FakeOpenAIServer

PARAMS = {False: TypeAdapter(response_create_params.ResponseCreateParamsNonStreaming),
          True: TypeAdapter(response_create_params.ResponseCreateParamsStreaming)}
EVENT = TypeAdapter(ResponseStreamEvent)
EP = replace(vendor_endpoint("openai", api_key="k"), api="responses")
TOOL = ToolSpec(name="weather", description="Weather",
                parameters={"type": "object", "properties": {"city": {"type": "string"}}})


def force(value: Any) -> Any:
    """Pydantic validates Iterable fields lazily: walk them so every item is checked."""
    if isinstance(value, dict):
        return {k: force(v) for k, v in value.items()}
    if isinstance(value, (str, bytes)):
        return value
    if hasattr(value, "__iter__"):
        return [force(v) for v in value]
    return value


REQUESTS = [
    ModelRequest(model="gpt-4.1", messages=(Message.system("S."), Message.user("hi")),
                 temperature=0.3, max_tokens=20),
    ModelRequest(
        model="o3", tools=(TOOL,), vendor_tools=({"type": "web_search"},),
        reasoning=ReasoningConfig(enabled=True, level="low"), cache="auto",
        messages=(
            Message.user("weather?"),
            Message(role="assistant", parts=(
                VendorPart(provider="openai_responses",
                           data={"id": "rs_1", "type": "reasoning", "summary": [],
                                 "encrypted_content": "enc"}),
                ToolCallPart(id="call_1", name="weather", arguments='{"city": "Oslo"}'))),
            Message(role="tool", parts=(ToolResultPart(call_id="call_1", name="weather",
                                                       content="cold"),)),
        )),
    ModelRequest(model="gpt-5", messages=(Message.user("json"),),
                 response_format=ResponseFormat(kind="json_schema", name="answer",
                                                schema={"type": "object"})),
]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("request_", REQUESTS)
def test_requests_are_sdk_params(request_: ModelRequest, stream: bool) -> None:
    body = json.loads(get_protocol("openai").encode(request_.replace(stream=stream), EP).body)
    force(PARAMS[stream].validate_python(body))


@pytest.fixture
async def server() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as srv:
        assert isinstance(srv, FakeOpenAIServer)
        yield srv


# Newer API versions always send `cache_write_tokens`, which the SDK requires.
REPLIES = [FakeReply(text="Hello there", cache_write_tokens=0),
           FakeReply(reasoning="thinking", tool_calls=[("weather", {"city": "Oslo"})],
                     cache_write_tokens=0),
           FakeReply(text="cut", finish_reason="max_output_tokens", cache_write_tokens=0)]


@pytest.mark.parametrize("reply", REPLIES)
async def test_fake_server_replies_are_sdk_responses(
    server: FakeOpenAIServer, reply: FakeReply
) -> None:
    transport = AiohttpTransport()
    try:
        for stream in (False, True):
            server.script(reply)
            body = {"model": "o3", "input": "hi", "stream": stream,
                    "include": ["reasoning.encrypted_content"]}
            response = await transport.handle(HttpRequest(
                method="POST", url=server.openai_base_url + "/responses",
                headers={"content-type": "application/json"},
                body=json.dumps(body).encode(), stream=stream))
            raw = await response.read()
            await response.aclose()
            if not stream:
                Response.model_validate_json(raw)
                continue
            events = [line[6:] for line in raw.decode().splitlines()
                      if line.startswith("data: ")]
            assert events
            for data in events:
                EVENT.validate_json(data)
    finally:
        await transport.aclose()
