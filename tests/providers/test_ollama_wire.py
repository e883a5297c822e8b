"""Ollama: encode and decode tables, the NDJSON decoder in odd pieces, routing by name."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentloom.errors import ConfigError, ProviderError
from agentloom.messages import (
    AudioPart,
    DocumentPart,
    ImagePart,
    Message,
    ModelRequest,
    ReasoningConfig,
    ResponseFormat,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
)
from agentloom.providers._assemble import ResponseBuilder
from agentloom.providers._base import Endpoint
from agentloom.providers.ollama import PROTOCOL

EP = Endpoint(name="ollama", protocol="ollama", base_url="http://127.0.0.1:11434")
MODEL = "llama3.2:3b"


def req(*messages: Message, **kw: Any) -> ModelRequest:
    return ModelRequest(model=MODEL, messages=messages or (Message.user("hi"),), **kw)


def body(request: ModelRequest) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(PROTOCOL.encode(request, EP).body or b"")
    return result


def test_url_no_key_and_options() -> None:
    http = PROTOCOL.encode(req(temperature=0.1, max_tokens=50, stream=True), EP)
    assert http.url == "http://127.0.0.1:11434/api/chat"
    assert "authorization" not in http.headers and http.stream is True
    b = json.loads(http.body or b"")
    assert b["stream"] is True
    assert b["options"] == {"temperature": 0.1, "num_predict": 50}
    assert body(req())["stream"] is False and "options" not in body(req())


@pytest.mark.parametrize(
    ("reasoning", "think"),
    [
        (None, None),
        (ReasoningConfig(enabled=False, level="high"), None),
        (ReasoningConfig(enabled=True), True),
        (ReasoningConfig(enabled=True, level="medium", budget_tokens=500), "medium"),
    ],
)
def test_reasoning_table_row(reasoning: ReasoningConfig | None, think: Any) -> None:
    b = body(req(reasoning=reasoning))
    assert b.get("think") == think
    assert "500" not in json.dumps(b)  # budget_tokens is ignored


def test_format() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    assert body(req(response_format=ResponseFormat(kind="json_schema", schema=schema)))[
        "format"] == schema
    assert body(req(response_format=ResponseFormat()))["format"] == "json"


def test_messages_images_tools_and_speakers() -> None:
    assistant = Message(role="assistant", parts=(
        TextPart(text="Let me check."),
        ToolCallPart(id="c1", name="f", arguments='{"q": "x"}'),
    ))
    b = body(req(
        Message.system("Sys"),
        Message.user("see", ImagePart(data=b"img"), name="alice"),
        assistant,
        Message(role="tool", parts=(ToolResultPart(call_id="c1", name="f", content="42"),)),
        tools=(ToolSpec(name="f", description="d"),), tool_choice="required",
    ))
    assert b["messages"] == [
        {"role": "system", "content": "Sys"},
        {"role": "user", "content": "[alice] see", "images": ["aW1n"]},
        {"role": "assistant", "content": "Let me check.",
         "tool_calls": [{"function": {"name": "f", "arguments": {"q": "x"}}}]},
        {"role": "tool", "content": "42", "tool_name": "f"},
    ]
    assert b["tools"] == [{"type": "function", "function": {
        "name": "f", "description": "d", "parameters": {"type": "object", "properties": {}}}}]
    assert "tool_choice" not in b  # Ollama has none
    # A turn holding tool results and text keeps both: the results first.
    mixed = Message(role="user", parts=(ToolResultPart(call_id="c1", name="f", content="1"),
                                        TextPart(text="and now?")))
    assert body(req(mixed))["messages"] == [
        {"role": "tool", "content": "1", "tool_name": "f"},
        {"role": "user", "content": "and now?"},
    ]


@pytest.mark.parametrize("part", [ImagePart(url="https://x/a.png"), DocumentPart(data=b"%"),
                                  AudioPart(data=b"RIFF")])
def test_refused_media(part: Any) -> None:
    with pytest.raises(ConfigError):
        body(req(Message.user("x", part)))


def test_decode_whole() -> None:
    reply = {"model": MODEL, "created_at": "2026-01-01T00:00:00Z", "done": True,
             "done_reason": "stop", "prompt_eval_count": 11, "eval_count": 4,
             "message": {"role": "assistant", "content": "Hi", "thinking": "hm",
                         "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]}}
    r = PROTOCOL.decode(json.dumps(reply).encode(), req(), EP)
    assert r.text == "Hi" and r.reasoning == "hm"
    assert r.tool_calls[0].name == "f" and json.loads(r.tool_calls[0].arguments) == {"a": 1}
    assert r.tool_calls[0].id.startswith("call_0_")
    assert r.finish_reason == "stop"
    assert (r.usage.input_tokens, r.usage.output_tokens, r.usage.reasoning_tokens) == (11, 4,
                                                                                       None)
    with pytest.raises(ProviderError, match="model not found"):
        PROTOCOL.decode(b'{"error": "model not found"}', req(), EP)


LINES = b"".join(json.dumps(x).encode() + b"\n" for x in [
    {"model": MODEL, "message": {"role": "assistant", "content": "", "thinking": "Hmm"},
     "done": False},
    {"model": MODEL, "message": {"role": "assistant", "content": "Hé"}, "done": False},
    {"model": MODEL, "message": {"role": "assistant", "content": "llo ✓"}, "done": False},
    {"model": MODEL, "message": {"role": "assistant", "content": "", "tool_calls": [
        {"function": {"name": "f", "arguments": {}}}]}, "done": False},
    {"model": MODEL, "message": {"role": "assistant", "content": ""}, "done": True,
     "done_reason": "stop", "prompt_eval_count": 3, "eval_count": 9},
])


@pytest.mark.parametrize("size", [1, 2, 9, 50, len(LINES)])
def test_stream_decoder_any_chunking(size: int) -> None:
    decoder = PROTOCOL.stream_decoder(req(stream=True), EP)
    builder = ResponseBuilder(MODEL)
    for i in range(0, len(LINES), size):
        for event in decoder.feed(LINES[i:i + size]):
            builder.add(event)
    for event in decoder.close():
        builder.add(event)
    r = builder.build(provider="ollama")
    assert r.reasoning == "Hmm" and r.text == "Héllo ✓"
    assert [c.name for c in r.tool_calls] == ["f"]
    assert r.finish_reason == "stop" and r.usage.output_tokens == 9


def test_serves_local_names_only() -> None:
    for name in ("llama3.2:3b", "qwen2.5", "mistral", "some/custom:latest", "gemma3"):
        assert PROTOCOL.serves(name), name
    for name in ("gpt-4o-mini", "claude-sonnet-4-5", "gemini-2.5-pro", "o3-mini", "unknown"):
        assert not PROTOCOL.serves(name), name
    caps = PROTOCOL.capabilities(MODEL)
    assert caps.image and not caps.image_url and not caps.pdf and not caps.audio_types
    assert caps.forced_tool_choice is False
