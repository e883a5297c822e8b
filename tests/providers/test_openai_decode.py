"""OpenAI Chat Completions decoding: whole replies, streams, usage None-vs-zero."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentloom.errors import ProviderError
from agentloom.messages import (
    FinishEvent,
    Message,
    ModelRequest,
    ReasoningConfig,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    Usage,
    UsageEvent,
)
from agentloom.providers import vendor_endpoint
from agentloom.providers._assemble import ResponseBuilder
from agentloom.providers.openai import PROTOCOL, decode_usage

EP = vendor_endpoint("generic_openai", base_url="http://127.0.0.1:1/v1")
REQ = ModelRequest(model="gpt-4o", messages=(Message.user("hi"),))


def completion(message: dict[str, Any], usage: Any = None, finish: str = "stop") -> bytes:
    obj: dict[str, Any] = {"id": "r1", "model": "gpt-4o-2024", "choices": [
        {"index": 0, "message": message, "finish_reason": finish}]}
    if usage is not None:
        obj["usage"] = usage
    return json.dumps(obj).encode()


def test_decode_text_tool_calls_reasoning_and_ids() -> None:
    body = completion({"role": "assistant", "content": "hello", "reasoning_content": "think",
                       "tool_calls": [{"id": "c1", "type": "function",
                                       "function": {"name": "f", "arguments": '{"a":1}'}}]},
                      {"prompt_tokens": 10, "completion_tokens": 5}, finish="tool_calls")
    resp = PROTOCOL.decode(body, REQ, EP)
    assert resp.text == "hello" and resp.reasoning == "think"
    assert resp.tool_calls[0].name == "f" and resp.tool_calls[0].arguments == '{"a":1}'
    assert (resp.finish_reason, resp.model, resp.provider, resp.response_id) == (
        "tool_calls", "gpt-4o-2024", "generic_openai", "r1")


def test_reasoning_dropped_when_capture_is_off() -> None:
    req = REQ.replace(reasoning=ReasoningConfig(enabled=True, capture=False))
    body = completion({"role": "assistant", "content": "x", "reasoning_content": "think"})
    assert PROTOCOL.decode(body, req, EP).reasoning is None


@pytest.mark.parametrize(("raw", "expected"), [
    (None, None),
    ({}, Usage(input_includes_cached=True)),
    ({"prompt_tokens": 0, "completion_tokens": 0},
     Usage(input_tokens=0, output_tokens=0, input_includes_cached=True)),
    ({"prompt_tokens": 100, "completion_tokens": 20,
      "prompt_tokens_details": {"cached_tokens": 64},
      "completion_tokens_details": {"reasoning_tokens": 12}},
     Usage(input_tokens=100, output_tokens=20, cache_read_tokens=64, reasoning_tokens=12,
           input_includes_cached=True)),
    ({"prompt_tokens": 3, "prompt_tokens_details": None},
     Usage(input_tokens=3, input_includes_cached=True)),
])
def test_usage_none_means_unreported(raw: Any, expected: Usage | None) -> None:
    assert decode_usage(raw) == expected


def test_missing_usage_is_all_none() -> None:
    resp = PROTOCOL.decode(completion({"role": "assistant", "content": "x"}), REQ, EP)
    assert resp.usage.input_tokens is None and resp.usage.output_tokens is None


def sse(*objs: Any) -> bytes:
    return b"".join(
        b"data: " + (o if isinstance(o, bytes) else json.dumps(o).encode()) + b"\n\n"
        for o in objs
    )


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "r9", "model": "gpt-4o-x",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


STREAM = sse(
    chunk({"role": "assistant", "content": ""}),
    chunk({"reasoning_content": "hm"}),
    chunk({"content": "Hel"}),
    chunk({"content": "lo"}),
    chunk({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "f", "arguments": ""}}]}),
    chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"a"'}}]}),
    chunk({"tool_calls": [{"index": 0, "function": {"arguments": ":1}"}}]}),
    chunk({}, "tool_calls"),
    {"id": "r9", "choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": 2}},
    b"[DONE]",
)


@pytest.mark.parametrize("size", [1, 9, 64, len(STREAM)])
def test_stream_events_in_any_chunking(size: int) -> None:
    decoder = PROTOCOL.stream_decoder(REQ, EP)
    events = []
    for i in range(0, len(STREAM), size):
        events += decoder.feed(STREAM[i : i + size])
    events += decoder.close()
    assert events == [
        ReasoningDelta(text="hm"), TextDelta(text="Hel"), TextDelta(text="lo"),
        ToolCallDelta(index=0, id="c1", name="f"),
        ToolCallDelta(index=0, arguments='{"a"'), ToolCallDelta(index=0, arguments=":1}"),
        FinishEvent(finish_reason="tool_calls", model="gpt-4o-x", response_id="r9"),
        UsageEvent(usage=Usage(input_tokens=4, output_tokens=2, input_includes_cached=True)),
    ]
    builder = ResponseBuilder("gpt-4o")
    for e in events:
        builder.add(e)
    resp = builder.build(provider="generic_openai")
    assert resp.text == "Hello" and resp.tool_calls[0].arguments == '{"a":1}'
    assert resp.usage.output_tokens == 2 and resp.finish_reason == "tool_calls"


def test_stream_that_ends_early_is_a_read_error() -> None:
    decoder = PROTOCOL.stream_decoder(REQ, EP)
    decoder.feed(sse(chunk({"content": "Hel"})))
    with pytest.raises(ProviderError) as info:
        decoder.close()
    assert info.value.phase == "read" and info.value.retryable


def test_error_event_in_stream_raises() -> None:
    decoder = PROTOCOL.stream_decoder(REQ, EP)
    with pytest.raises(ProviderError, match="overloaded"):
        decoder.feed(sse({"error": {"message": "overloaded", "type": "server_error"}}))


def test_capabilities_and_serves() -> None:
    caps = PROTOCOL.capabilities("gpt-4o")
    assert caps.image and caps.image_url and not caps.pdf and caps.speaker_names
    assert caps.audio_types == {"audio/wav", "audio/mpeg"} and caps.reasoning == "effort"
    assert caps.forced_tool_choice and caps.native_json_schema
    for model in ("gpt-4o", "o3-mini", "o1", "chatgpt-4o-latest", "gpt-5"):
        assert PROTOCOL.serves(model)
    for model in ("claude-sonnet-4-5", "gemini-2.5-pro", "llama3"):
        assert not PROTOCOL.serves(model)
