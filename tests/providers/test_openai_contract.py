"""Contract tests: our request bodies against the openai SDK's parameter types, and the
fake server's replies through the SDK's response models (test-only dependency)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest

from agentloom.http import AiohttpTransport, HttpRequest
from agentloom.messages import (
    AudioPart,
    ImagePart,
    Message,
    ModelRequest,
    NamedToolChoice,
    ReasoningConfig,
    ResponseFormat,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
)
from agentloom.providers import vendor_endpoint
from agentloom.providers.openai import PROTOCOL
from agentloom.testing._server import FakeReply
from agentloom.testing.fake_openai import FakeOpenAIServer

pydantic = pytest.importorskip("pydantic")
params = pytest.importorskip("openai.types.chat.completion_create_params")
chat_types = pytest.importorskip("openai.types.chat")

NON_STREAM = pydantic.TypeAdapter(params.CompletionCreateParamsNonStreaming)
STREAM = pydantic.TypeAdapter(params.CompletionCreateParamsStreaming)
EP = replace(vendor_endpoint("openai", api_key="sk"), api="chat_completions")

MESSAGES = (
    Message.system("sys"),
    Message.user("look", ImagePart(data=b"\x89PNG"), ImagePart(url="https://e.com/a.png"),
                 AudioPart(media_type="audio/wav", data=b"RIFF"), name="alice"),
    Message(role="assistant", name="bob", parts=(
        TextPart(text="let me see"), ToolCallPart(id="c1", name="f", arguments="{}"))),
    Message(role="tool", parts=(ToolResultPart(call_id="c1", name="f", content="1"),)),
)
SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"],
          "additionalProperties": False}
CASES = [
    ModelRequest(model="gpt-4o", messages=MESSAGES, temperature=0.2, max_tokens=10),
    ModelRequest(model="o3", messages=MESSAGES, max_tokens=10,
                 reasoning=ReasoningConfig(enabled=True, level="medium"),
                 tools=(ToolSpec(name="f", description="d"),),
                 tool_choice=NamedToolChoice(name="f")),
    ModelRequest(model="gpt-5-chat", messages=MESSAGES, tools=(ToolSpec(name="f"),),
                 tool_choice="required",
                 response_format=ResponseFormat(kind="json_schema", schema=SCHEMA)),
    ModelRequest(model="gpt-4o-mini", messages=MESSAGES, response_format=ResponseFormat()),
]


def body(http: HttpRequest) -> dict[str, Any]:
    assert http.body is not None
    result: dict[str, Any] = json.loads(http.body)
    return result


@pytest.mark.parametrize("request_", CASES)
@pytest.mark.parametrize("stream", [False, True])
def test_request_bodies_match_sdk_params(request_: ModelRequest, stream: bool) -> None:
    sent = body(PROTOCOL.encode(request_.replace(stream=stream), EP))
    adapter = STREAM if stream else NON_STREAM
    adapter.validate_python(sent, strict=False)
    # TypedDicts ignore unknown keys: check there are none.
    allowed = set(params.CompletionCreateParamsBase.__annotations__) | {"stream"}
    assert set(sent) <= allowed


@pytest.fixture
async def server() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as s:
        assert isinstance(s, FakeOpenAIServer)
        yield s


async def _post(server: FakeOpenAIServer, request: ModelRequest) -> bytes:
    transport = AiohttpTransport()
    try:
        http = PROTOCOL.encode(request, vendor_endpoint(
            "generic_openai", base_url=server.openai_base_url))
        http.stream = False
        resp = await transport.handle(http)
        return await resp.read()
    finally:
        await transport.aclose()


REPLIES = [
    FakeReply(text="hello world"),
    FakeReply(tool_calls=[("f", {"a": 1})], cached_tokens=3, reasoning_tokens=5),
    FakeReply(text="thinking done", reasoning="hmm", finish_reason="length"),
]


@pytest.mark.parametrize("reply", REPLIES)
async def test_fake_replies_parse_as_sdk_models(server: FakeOpenAIServer,
                                                reply: FakeReply) -> None:
    server.script(reply, reply)
    raw = await _post(server, CASES[0])
    completion = chat_types.ChatCompletion.model_validate_json(raw)
    assert completion.choices[0].finish_reason == (reply.finish_reason or (
        "tool_calls" if reply.tool_calls else "stop"))
    raw_stream = await _post(server, CASES[0].replace(stream=True))
    lines = [line[6:] for line in raw_stream.split(b"\n\n") if line.startswith(b"data: ")]
    assert lines[-1] == b"[DONE]"
    chunks = [chat_types.ChatCompletionChunk.model_validate_json(line) for line in lines[:-1]]
    assert chunks[-1].usage is not None and chunks[-1].choices == []
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == reply.text
