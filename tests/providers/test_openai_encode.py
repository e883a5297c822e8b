"""OpenAI Chat Completions encoding: messages, media, tools, formats, reasoning models."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from agentloom.errors import ConfigError
from agentloom.messages import (
    AudioPart,
    DocumentPart,
    ImagePart,
    Message,
    ModelRequest,
    NamedToolChoice,
    ReasoningConfig,
    ReasoningPart,
    ResponseFormat,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
)
from agentloom.providers import get_protocol, vendor_endpoint
from agentloom.providers.openai import PROTOCOL, encode_body, is_reasoning_model

EP = replace(vendor_endpoint("openai", api_key="sk-test"), api="chat_completions")


def body_of(request: ModelRequest) -> dict[str, Any]:
    http = PROTOCOL.encode(request, EP)
    assert http.body is not None
    result: dict[str, Any] = json.loads(http.body)
    return result


def req(model: str = "gpt-4o", **kw: Any) -> ModelRequest:
    kw.setdefault("messages", (Message.user("hi"),))
    return ModelRequest(model=model, **kw)


def test_registry_resolves_openai_and_rejects_unknown() -> None:
    assert get_protocol("openai") is PROTOCOL
    with pytest.raises(ConfigError, match="known protocols: openai, anthropic, gemini, ollama"):
        get_protocol("cohere")


def test_url_headers_and_auth() -> None:
    http = PROTOCOL.encode(req(stream=True, headers={"x-extra": "1"}), EP)
    assert http.url == "https://api.openai.com/v1/chat/completions"
    assert http.headers["authorization"] == "Bearer sk-test"
    assert http.headers["x-extra"] == "1"
    assert http.stream is True


def test_no_key_no_authorization_header() -> None:
    ep = vendor_endpoint("generic_openai", base_url="http://127.0.0.1:9/v1/")
    http = PROTOCOL.encode(req(), ep)
    assert "authorization" not in http.headers
    assert http.url == "http://127.0.0.1:9/v1/chat/completions"


# model, max_tokens key, temperature sent, reasoning_effort sent
REASONING_TABLE = [
    ("o3", "max_completion_tokens", False, True),
    ("o3-mini", "max_completion_tokens", False, True),
    ("o4-mini-2025-04-16", "max_completion_tokens", False, True),
    ("o1", "max_completion_tokens", False, True),
    ("o1-mini", "max_tokens", True, False),
    ("gpt-5", "max_completion_tokens", False, True),
    ("gpt-5-mini", "max_completion_tokens", False, True),
    ("gpt-5-chat-latest", "max_tokens", True, False),
    ("gpt-5-chat", "max_tokens", True, False),
    ("gpt-4o", "max_tokens", True, False),
    ("gpt-4.1-mini", "max_tokens", True, False),
]


@pytest.mark.parametrize(("model", "tokens_key", "temperature", "effort"), REASONING_TABLE)
def test_reasoning_model_rules(model: str, tokens_key: str, temperature: bool,
                               effort: bool) -> None:
    body = body_of(req(model, temperature=0.3, max_tokens=50,
                       reasoning=ReasoningConfig(enabled=True, level="high", budget_tokens=99)))
    assert body[tokens_key] == 50
    other = {"max_tokens", "max_completion_tokens"} - {tokens_key}
    assert not other & body.keys()
    assert ("temperature" in body) is temperature
    if temperature:
        assert body["temperature"] == 0.3
    assert body.get("reasoning_effort") == ("high" if effort else None)
    assert "budget_tokens" not in json.dumps(body)


def test_reasoning_effort_needs_enabled_and_level() -> None:
    assert "reasoning_effort" not in body_of(req("o3", reasoning=ReasoningConfig(level="low")))
    assert "reasoning_effort" not in body_of(req("o3", reasoning=ReasoningConfig(enabled=True)))


def test_is_reasoning_model_does_not_match_lookalikes() -> None:
    assert not is_reasoning_model("o1x-custom")
    assert not is_reasoning_model("gpt-4o")
    assert is_reasoning_model("openai/o3")


def test_messages_names_media_tools_and_reasoning_dropped() -> None:
    messages = (
        Message.system("be brief"),
        Message.user("look", ImagePart(media_type="image/jpeg", data=b"\xff\xd8"),
                     ImagePart(url="https://example.com/a.png"),
                     AudioPart(media_type="audio/mpeg", data=b"ID3"), name="alice"),
        Message(role="assistant", name="bot", parts=(
            ReasoningPart(text="secret", signature="sig"),
            TextPart(text="calling"),
            ToolCallPart(id="c1", name="lookup", arguments='{"q":1}'),
        )),
        Message(role="tool", parts=(ToolResultPart(call_id="c1", name="lookup", content="42"),)),
        Message(role="assistant", parts=(ToolCallPart(id="c2", name="x", arguments="{}"),)),
    )
    body = body_of(req(messages=messages))
    out = body["messages"]
    assert out[0] == {"role": "system", "content": "be brief"}
    assert out[1]["name"] == "alice"
    assert out[1]["content"] == [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9g="}},
        {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
        {"type": "input_audio", "input_audio": {"data": "SUQz", "format": "mp3"}},
    ]
    assert out[2] == {"role": "assistant", "content": "calling", "name": "bot", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": '{"q":1}'}}
    ]}
    assert out[3] == {"role": "tool", "tool_call_id": "c1", "content": "42"}
    assert out[4]["content"] is None and out[4]["tool_calls"][0]["id"] == "c2"
    assert "secret" not in json.dumps(body)


def test_pdf_and_unknown_audio_fail_before_sending() -> None:
    with pytest.raises(ConfigError, match="document"):
        body_of(req(messages=(Message.user("x", DocumentPart(data=b"%PDF")),)))
    with pytest.raises(ConfigError, match="WAV or MP3"):
        body_of(req(messages=(Message.user("x", AudioPart(media_type="audio/ogg", data=b"")),)))


@pytest.mark.parametrize(("choice", "wire"), [
    ("auto", "auto"), ("none", "none"), ("required", "required"),
    (NamedToolChoice(name="lookup"), {"type": "function", "function": {"name": "lookup"}}),
])
def test_tools_and_tool_choice(choice: Any, wire: Any) -> None:
    vendor = {"type": "web_search_preview"}
    body = body_of(req(tools=(ToolSpec(name="lookup", description="find",
                                       parameters={"type": "object"}),),
                       tool_choice=choice, vendor_tools=(vendor,)))
    assert body["tools"] == [
        {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"},
                                          "description": "find"}},
        vendor,
    ]
    assert body["tool_choice"] == wire


def test_no_tools_no_tool_choice() -> None:
    assert "tool_choice" not in body_of(req(tool_choice="required"))


def test_response_formats() -> None:
    assert body_of(req(response_format=ResponseFormat()))["response_format"] == {
        "type": "json_object"}
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    fmt = ResponseFormat(kind="json_schema", schema=schema, name="answer", strict=False,
                         description="the answer")
    assert body_of(req(response_format=fmt))["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "answer", "strict": False, "schema": schema,
                        "description": "the answer"},
    }


def test_stream_options_and_extra_merged_last() -> None:
    body = body_of(req(stream=True, temperature=1.0, extra={"temperature": 0.0, "seed": 7}))
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["temperature"] == 0.0 and body["seed"] == 7
    assert "stream" not in encode_body(req())
