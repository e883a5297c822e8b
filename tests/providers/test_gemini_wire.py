"""Gemini: encode and decode tables, the schema adapter, the SSE decoder in odd pieces."""

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
    NamedToolChoice,
    ReasoningConfig,
    ReasoningPart,
    ResponseFormat,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
)
from agentloom.providers._assemble import ResponseBuilder
from agentloom.providers._base import Endpoint
from agentloom.providers.gemini import PROTOCOL, to_gemini_schema

EP = Endpoint(name="gemini", protocol="gemini",
              base_url="https://generativelanguage.googleapis.com", api_key="g-key")
MODEL = "gemini-2.5-flash"


def req(*messages: Message, **kw: Any) -> ModelRequest:
    return ModelRequest(model=MODEL, messages=messages or (Message.user("hi"),), **kw)


def body(request: ModelRequest) -> dict[str, Any]:
    http = PROTOCOL.encode(request, EP)
    result: dict[str, Any] = json.loads(http.body or b"")
    return result


def test_urls_and_key_header() -> None:
    plain = PROTOCOL.encode(req(), EP)
    assert plain.url == ("https://generativelanguage.googleapis.com/v1beta/models/"
                         "gemini-2.5-flash:generateContent")
    assert plain.headers["x-goog-api-key"] == "g-key" and plain.stream is False
    streamed = PROTOCOL.encode(req(stream=True), EP)
    assert streamed.url.endswith("/models/gemini-2.5-flash:streamGenerateContent?alt=sse")
    assert streamed.stream is True
    assert "stream" not in json.loads(streamed.body or b"")


def test_contents_system_and_generation_config() -> None:
    b = body(req(Message.system("Be brief."), Message.user("hi", name="alice"),
                 Message.assistant("hello"), Message.user("more"),
                 temperature=0.2, max_tokens=400, extra={"safetySettings": []}))
    assert b["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert b["contents"] == [
        {"role": "user", "parts": [{"text": "[alice] hi"}]},
        {"role": "model", "parts": [{"text": "hello"}]},
        {"role": "user", "parts": [{"text": "more"}]},
    ]
    assert b["generationConfig"] == {"temperature": 0.2, "maxOutputTokens": 400}
    assert b["safetySettings"] == []
    # Objects in `extra` merge key by key with what the encoder wrote.
    merged = body(req(max_tokens=5, reasoning=ReasoningConfig(enabled=True),
                      extra={"generationConfig": {"topK": 3}}))
    assert merged["generationConfig"] == {"maxOutputTokens": 5, "topK": 3,
                                          "thinkingConfig": {"includeThoughts": True}}


@pytest.mark.parametrize(
    ("reasoning", "config"),
    [
        (None, None),
        (ReasoningConfig(enabled=False, budget_tokens=100, level="low"), None),
        (ReasoningConfig(enabled=True), {"includeThoughts": True}),
        (ReasoningConfig(enabled=True, budget_tokens=1024),
         {"includeThoughts": True, "thinkingBudget": 1024}),
        (ReasoningConfig(enabled=True, level="high", capture=False),
         {"includeThoughts": False, "thinkingLevel": "HIGH"}),
    ],
)
def test_reasoning_table_row(reasoning: ReasoningConfig | None,
                             config: dict[str, Any] | None) -> None:
    b = body(req(reasoning=reasoning))
    assert b.get("generationConfig", {}).get("thinkingConfig") == config


def test_media_parts() -> None:
    b = body(req(Message.user("see", ImagePart(media_type="image/png", data=b"img"),
                              DocumentPart(data=b"%PDF"),
                              AudioPart(media_type="audio/mpeg", data=b"ID3"))))
    parts = b["contents"][0]["parts"]
    assert parts[1] == {"inlineData": {"mimeType": "image/png", "data": "aW1n"}}
    assert parts[2]["inlineData"]["mimeType"] == "application/pdf"
    assert parts[3]["inlineData"]["mimeType"] == "audio/mpeg"
    with pytest.raises(ConfigError, match="by URL"):
        body(req(Message.user("x", ImagePart(url="https://example.com/a.png"))))


@pytest.mark.parametrize(
    ("choice", "config"),
    [("auto", {"mode": "AUTO"}), ("required", {"mode": "ANY"}), ("none", {"mode": "NONE"}),
     (NamedToolChoice(name="f"), {"mode": "ANY", "allowedFunctionNames": ["f"]})],
)
def test_tools_and_choice(choice: Any, config: dict[str, Any]) -> None:
    vendor: dict[str, Any] = {"googleSearch": {}}
    params = {"type": "object", "properties": {"q": {"type": "string"}},
              "required": ["q"], "additionalProperties": False}
    b = body(req(tools=(ToolSpec(name="f", description="d", parameters=params),),
                 tool_choice=choice, vendor_tools=(vendor,)))
    assert b["tools"][0] == {"functionDeclarations": [{
        "name": "f", "description": "d",
        "parameters": {"type": "OBJECT", "properties": {"q": {"type": "STRING"}},
                       "required": ["q"]}}]}
    assert b["tools"][1] == vendor
    assert b["toolConfig"] == {"functionCallingConfig": config}


def test_tool_turns_and_signatures_go_back() -> None:
    assistant = Message(role="assistant", parts=(
        ReasoningPart(text="thinking text is not sent back"),
        ReasoningPart(text="", signature="SIG"),
        ToolCallPart(id="call_0_x", name="f", arguments='{"q": "a"}'),
        ToolCallPart(id="call_1_y", name="g", arguments="{}"),
    ))
    b = body(req(Message.user("go"), assistant,
                 Message(role="tool", parts=(
                     ToolResultPart(call_id="call_0_x", name="f", content="A"),
                     ToolResultPart(call_id="call_1_y", name="g", content="bad",
                                    is_error=True)))))
    model_turn = b["contents"][1]
    assert model_turn["role"] == "model"
    assert model_turn["parts"] == [
        {"functionCall": {"name": "f", "args": {"q": "a"}}, "thoughtSignature": "SIG"},
        {"functionCall": {"name": "g", "args": {}}},
    ]
    assert b["contents"][2] == {"role": "user", "parts": [
        {"functionResponse": {"name": "f", "response": {"result": "A"}}},
        {"functionResponse": {"name": "g", "response": {"error": "bad"}}},
    ]}
    # Without calls, a signature rides on the turn's text.
    text_turn = Message(role="assistant", parts=(ReasoningPart(text="", signature="S2"),
                                                 TextPart(text="ok")))
    assert body(req(Message.user("a"), text_turn))["contents"][1]["parts"] == [
        {"text": "ok", "thoughtSignature": "S2"}]


def test_structured_output_native() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    b = body(req(response_format=ResponseFormat(kind="json_schema", schema=schema)))
    assert b["generationConfig"]["responseMimeType"] == "application/json"
    assert b["generationConfig"]["responseSchema"] == {
        "type": "OBJECT", "properties": {"n": {"type": "INTEGER"}}, "required": ["n"]}
    plain = body(req(response_format=ResponseFormat()))
    assert plain["generationConfig"] == {"responseMimeType": "application/json"}


def test_schema_adapter_rewrites_what_gemini_refuses() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$defs": {"Item": {"type": "object", "additionalProperties": False,
                           "properties": {"id": {"const": "x"},
                                          "when": {"type": "string", "format": "date"},
                                          "at": {"type": "string", "format": "date-time"}},
                           "required": ["id", "missing"]}},
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "d"},
            "size": {"type": ["integer", "null"], "exclusiveMinimum": 0},
            "either": {"oneOf": [{"type": "string"}, {"type": "number"}]},
            "level": {"enum": [1, 2, 3]},
            "both": {"allOf": [{"properties": {"a": {"type": "string"}}, "required": ["a"]},
                               {"properties": {"b": {"type": "string"}}}]},
        },
    }
    original = json.dumps(schema, sort_keys=True)
    out = to_gemini_schema(schema)
    assert json.dumps(schema, sort_keys=True) == original  # input untouched
    text = json.dumps(out)
    for refused in ("$ref", "$defs", "additionalProperties", "const", "$schema",
                    "exclusiveMinimum"):
        assert refused not in text
    item = out["properties"]["items"]["items"]
    assert item["type"] == "OBJECT" and item["required"] == ["id"]
    assert item["properties"]["id"] == {"type": "STRING", "enum": ["x"]}
    assert "format" not in item["properties"]["when"]
    assert item["properties"]["at"]["format"] == "date-time"
    assert out["properties"]["note"] == {"type": "STRING", "description": "d", "nullable": True}
    assert out["properties"]["size"] == {"type": "INTEGER", "nullable": True}
    assert out["properties"]["either"] == {"anyOf": [{"type": "STRING"}, {"type": "NUMBER"}]}
    # Gemini takes enums on strings only: the values are checked on our side.
    assert out["properties"]["level"] == {"type": "INTEGER"}
    assert out["properties"]["both"]["required"] == ["a"]
    assert set(out["properties"]["both"]["properties"]) == {"a", "b"}
    # The adapted schema is still a schema the SDK accepts.
    from google.genai import types as gt

    gt.Schema.model_validate(out)


def test_recursive_ref_stops() -> None:
    schema = {"$defs": {"Node": {"type": "object", "properties": {
        "next": {"$ref": "#/$defs/Node"}}}}, "$ref": "#/$defs/Node"}
    out = to_gemini_schema(schema)
    assert out["type"] == "OBJECT" and "$ref" not in json.dumps(out)
    assert "$defs" in schema  # the input is left as it was


REPLY = {
    "candidates": [{"content": {"role": "model", "parts": [
        {"text": "Pondering.", "thought": True},
        {"text": "Answer."},
        {"functionCall": {"name": "f", "args": {"q": 1}}, "thoughtSignature": "SIG"},
    ]}, "finishReason": "STOP", "index": 0}],
    "usageMetadata": {"promptTokenCount": 20, "candidatesTokenCount": 5,
                      "thoughtsTokenCount": 7, "cachedContentTokenCount": 4,
                      "totalTokenCount": 32},
    "modelVersion": "gemini-2.5-flash-001", "responseId": "r1",
}


def test_decode_reply() -> None:
    r = PROTOCOL.decode(json.dumps(REPLY).encode(), req(), EP)
    assert r.parts[0] == ReasoningPart(text="Pondering.")
    assert r.parts[1] == TextPart(text="Answer.")
    assert r.parts[2] == ReasoningPart(text="", signature="SIG")
    call = r.parts[3]
    assert isinstance(call, ToolCallPart) and call.name == "f" and call.arguments == '{"q": 1}'
    again = PROTOCOL.decode(json.dumps(REPLY).encode(), req(), EP)
    assert again.tool_calls[0].id == call.id  # stable ids
    assert r.finish_reason == "STOP" and r.model == "gemini-2.5-flash-001"
    u = r.usage
    assert (u.input_tokens, u.output_tokens, u.reasoning_tokens, u.cache_read_tokens) == (
        20, 12, 7, 4)
    assert u.input_includes_cached is True and u.cache_write_tokens is None
    no_usage = {k: v for k, v in REPLY.items() if k != "usageMetadata"}
    assert PROTOCOL.decode(json.dumps(no_usage).encode(), req(), EP).usage.input_tokens is None


def test_decode_blocked_and_errors() -> None:
    blocked = {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {
        "promptTokenCount": 3}}
    r = PROTOCOL.decode(json.dumps(blocked).encode(), req(), EP)
    assert r.finish_reason == "SAFETY" and r.parts == ()
    with pytest.raises(ValueError):
        PROTOCOL.decode(b"[1, 2", req(), EP)
    err = {"error": {"code": 503, "message": "busy", "status": "UNAVAILABLE"}}
    with pytest.raises(ProviderError) as info:
        PROTOCOL.decode(json.dumps(err).encode(), req(), EP)
    assert info.value.retryable is True


STREAM = b"".join(
    b"data: " + json.dumps(chunk).encode() + b"\r\n\r\n"
    for chunk in [
        {"candidates": [{"content": {"role": "model", "parts": [
            {"text": "Hmm ", "thought": True}]}}], "modelVersion": MODEL, "responseId": "s"},
        {"candidates": [{"content": {"role": "model", "parts": [{"text": "Grüß "}]}}]},
        {"candidates": [{"content": {"role": "model", "parts": [{"text": "dich ✓"}]}}],
         "usageMetadata": {"promptTokenCount": 5}},
        {"candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"name": "f", "args": {}}, "thoughtSignature": "S"},
            {"functionCall": {"name": "g", "args": {"x": [1]}}}]},
            "finishReason": "STOP"}],
         "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 6,
                           "thoughtsTokenCount": 2}},
    ]
)


@pytest.mark.parametrize("size", [1, 3, 5, 17, len(STREAM)])
def test_stream_decoder_any_chunking(size: int) -> None:
    decoder = PROTOCOL.stream_decoder(req(stream=True), EP)
    builder = ResponseBuilder(MODEL)
    for i in range(0, len(STREAM), size):
        for event in decoder.feed(STREAM[i:i + size]):
            builder.add(event)
    for event in decoder.close():
        builder.add(event)
    r = builder.build(provider="gemini")
    assert r.reasoning == "Hmm "
    assert r.text == "Grüß dich ✓"
    assert [c.name for c in r.tool_calls] == ["f", "g"]
    assert len({c.id for c in r.tool_calls}) == 2
    assert any(isinstance(p, ReasoningPart) and p.signature == "S" for p in r.parts)
    assert r.finish_reason == "STOP"
    assert (r.usage.input_tokens, r.usage.output_tokens, r.usage.reasoning_tokens) == (5, 8, 2)


def test_capabilities_and_serves() -> None:
    caps = PROTOCOL.capabilities(MODEL)
    assert caps.image and not caps.image_url and caps.pdf and "audio/wav" in caps.audio_types
    assert caps.native_json_schema and caps.reasoning == "thinking_config"
    assert PROTOCOL.serves("gemini-2.5-pro") and PROTOCOL.serves("models/gemini-2.0-flash")
    assert not PROTOCOL.serves("claude-3") and not PROTOCOL.serves("gemma3:4b")


def test_a_system_prompt_alone_still_opens_with_a_user_turn() -> None:
    from agentloom.providers.gemini import encode_body

    request = ModelRequest(model="gemini-2.5-flash", messages=(Message.system("Use tools."),),
                           tools=(ToolSpec(name="now"),))
    body = encode_body(request)
    assert body["contents"] == [{"role": "user", "parts": [{"text": ""}]}]
    assert body["systemInstruction"] == {"parts": [{"text": "Use tools."}]}
    opens_with_model = encode_body(request.replace(messages=(Message.assistant("Hi."),
                                                             Message.user("Go."))))
    assert [c["role"] for c in opens_with_model["contents"]] == ["user", "model", "user"]


def test_two_signatures_on_consecutive_parts_stay_two() -> None:
    chunk = {"candidates": [{"content": {"role": "model", "parts": [
        {"functionCall": {"name": "a", "args": {}}, "thoughtSignature": "sig-1"},
        {"functionCall": {"name": "b", "args": {}}, "thoughtSignature": "sig-2"}]},
        "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 10, "toolUsePromptTokenCount": 5,
                          "candidatesTokenCount": 2}}
    request = ModelRequest(model="gemini-2.5-flash", messages=(Message.user("x"),),
                           stream=True)
    decoder = PROTOCOL.stream_decoder(request, EP)
    builder = ResponseBuilder(request.model)
    for event in decoder.feed(f"data: {json.dumps(chunk)}\n\n".encode()) + decoder.close():
        builder.add(event)
    reply = builder.build(provider="gemini")
    assert [p.signature for p in reply.parts if isinstance(p, ReasoningPart)] == [
        "sig-1", "sig-2"]
    assert reply.usage.input_tokens == 15  # Gemini's own tools' prompt counts as input
