"""Anthropic Messages: encode and decode tables, the SSE decoder fed in odd pieces, and the
load-time reasoning rules. Pure functions, no sockets."""

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
from agentloom.providers.anthropic import PROTOCOL, check_reasoning_settings

EP = Endpoint(name="anthropic", protocol="anthropic", base_url="https://api.anthropic.com",
              api_key="sk-test")
MODEL = "claude-sonnet-4-5"


def req(*messages: Message, **kw: Any) -> ModelRequest:
    return ModelRequest(model=MODEL, messages=messages or (Message.user("hi"),), **kw)


def body(request: ModelRequest) -> dict[str, Any]:
    http = PROTOCOL.encode(request, EP)
    assert http.body is not None
    result: dict[str, Any] = json.loads(http.body)
    return result


def test_url_headers_and_stream_flag() -> None:
    http = PROTOCOL.encode(req(stream=True, headers={"x-trace": "1"}), EP)
    assert http.url == "https://api.anthropic.com/v1/messages"
    assert http.headers["x-api-key"] == "sk-test"
    assert http.headers["anthropic-version"] == "2023-06-01"
    assert http.headers["x-trace"] == "1"
    assert http.stream is True
    assert json.loads(http.body or b"")["stream"] is True
    # A base URL that already names the version is not doubled.
    ep = Endpoint(name="a", protocol="anthropic", base_url="http://proxy/v1", api_key="k")
    assert PROTOCOL.encode(req(), ep).url == "http://proxy/v1/messages"


def test_system_is_top_level_and_extra_merges_over_body() -> None:
    b = body(req(Message.system("Be brief."), Message.user("hi"),
                 extra={"top_k": 5, "max_tokens": 99}))
    assert b["system"] == "Be brief."
    assert b["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    assert b["top_k"] == 5 and b["max_tokens"] == 99


@pytest.mark.parametrize(
    ("max_tokens", "reasoning", "sent"),
    [
        (None, None, 4096),
        (400, None, 400),
        (None, ReasoningConfig(enabled=True, budget_tokens=4000), 8096),
        (8000, ReasoningConfig(enabled=True, budget_tokens=4000), 8000),
        (None, ReasoningConfig(enabled=False, budget_tokens=4000), 4096),
    ],
)
def test_max_tokens_rule(max_tokens: int | None, reasoning: ReasoningConfig | None,
                         sent: int) -> None:
    assert body(req(max_tokens=max_tokens, reasoning=reasoning))["max_tokens"] == sent


def test_reasoning_table_row() -> None:
    b = body(req(temperature=0.3, reasoning=ReasoningConfig(enabled=True, budget_tokens=2000,
                                                            level="high")))
    assert b["thinking"] == {"type": "enabled", "budget_tokens": 2000}
    assert "temperature" not in b  # Anthropic refuses a temperature with thinking on
    assert "high" not in json.dumps(b)  # level is ignored
    hidden = body(req(reasoning=ReasoningConfig(enabled=True, budget_tokens=2000,
                                                capture=False)))
    assert hidden["thinking"] == {"type": "enabled", "budget_tokens": 2000,
                                  "display": "omitted"}
    off = body(req(temperature=0.3, reasoning=ReasoningConfig(enabled=False, budget_tokens=9)))
    assert "thinking" not in off and off["temperature"] == 0.3


def test_load_time_rules() -> None:
    check_reasoning_settings(MODEL, None, ReasoningConfig(enabled=True, budget_tokens=4000))
    check_reasoning_settings(MODEL, 8000, ReasoningConfig(enabled=True, budget_tokens=4000))
    check_reasoning_settings(MODEL, 100, None)
    check_reasoning_settings("gpt-4o", 100, ReasoningConfig(enabled=True))  # not Claude
    with pytest.raises(ConfigError, match="budget_tokens"):
        check_reasoning_settings(MODEL, None, ReasoningConfig(enabled=True))
    with pytest.raises(ConfigError, match=r"max_tokens \(4000\) must be above"):
        check_reasoning_settings(MODEL, 4000, ReasoningConfig(enabled=True, budget_tokens=4000))
    with pytest.raises(ConfigError, match="at least 1024"):
        check_reasoning_settings(MODEL, None, ReasoningConfig(enabled=True, budget_tokens=100))
    with pytest.raises(ConfigError):
        body(req(reasoning=ReasoningConfig(enabled=True)))


def test_media_blocks() -> None:
    msg = Message.user(
        "look",
        ImagePart(media_type="image/jpeg", data=b"\xff\xd8"),
        ImagePart(url="https://example.com/a.png"),
        DocumentPart(data=b"%PDF-1.4"),
    )
    content = body(req(msg))["messages"][0]["content"]
    assert content[1] == {"type": "image", "source": {"type": "base64",
                                                      "media_type": "image/jpeg",
                                                      "data": "/9g="}}
    assert content[2] == {"type": "image", "source": {"type": "url",
                                                      "url": "https://example.com/a.png"}}
    assert content[3]["type"] == "document"
    assert content[3]["source"]["media_type"] == "application/pdf"
    with pytest.raises(ConfigError, match="audio"):
        body(req(Message.user("x", AudioPart(data=b"RIFF"))))


def test_tool_loop_turns_keep_signatures_and_group_results() -> None:
    assistant = Message(role="assistant", parts=(
        ReasoningPart(text="think", signature="SIG1"),
        ReasoningPart(text="", redacted="OPAQUE"),
        ReasoningPart(text="from another provider"),  # unsigned: not sent
        TextPart(text="Calling."),
        ToolCallPart(id="t1", name="a", arguments='{"x": 1}'),
        ToolCallPart(id="t2", name="b", arguments="not json"),
    ))
    messages = (
        Message.user("go"), assistant,
        Message(role="tool", parts=(ToolResultPart(call_id="t1", name="a", content="1"),)),
        Message(role="tool", parts=(ToolResultPart(call_id="t2", name="b", content="boom",
                                                   is_error=True),)),
        Message.user("and then?"),
    )
    b = body(req(*messages, tools=(ToolSpec(name="a"), ToolSpec(name="b"))))
    turns = b["messages"]
    assert [t["role"] for t in turns] == ["user", "assistant", "user"]
    blocks = turns[1]["content"]
    assert blocks[0] == {"type": "thinking", "thinking": "think", "signature": "SIG1"}
    assert blocks[1] == {"type": "redacted_thinking", "data": "OPAQUE"}
    assert blocks[2] == {"type": "text", "text": "Calling."}
    assert blocks[3] == {"type": "tool_use", "id": "t1", "name": "a", "input": {"x": 1}}
    assert blocks[4]["input"] == {"_raw_arguments": "not json"}
    assert turns[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "t1", "content": "1"},
        {"type": "tool_result", "tool_use_id": "t2", "content": "boom", "is_error": True},
        {"type": "text", "text": "and then?"},
    ]


@pytest.mark.parametrize(
    ("choice", "wire"),
    [("auto", {"type": "auto"}), ("required", {"type": "any"}), ("none", {"type": "none"}),
     (NamedToolChoice(name="a"), {"type": "tool", "name": "a"})],
)
def test_tools_and_choice(choice: Any, wire: dict[str, Any]) -> None:
    vendor = {"type": "web_search_20250305", "name": "web_search", "max_uses": 2}
    b = body(req(tools=(ToolSpec(name="a", description="d",
                                 parameters={"type": "object", "properties": {}}),),
                 tool_choice=choice, vendor_tools=(vendor,)))
    assert b["tools"][0] == {"name": "a", "description": "d",
                             "input_schema": {"type": "object", "properties": {}}}
    assert b["tools"][1] == vendor
    assert b["tool_choice"] == wire
    assert "tools" not in body(req())


def test_speaker_prefix() -> None:
    b = body(req(Message.user("hello", name="alice"), Message.assistant("hi", name="bob"),
                 Message.user("next")))
    assert b["messages"][0]["content"][0]["text"] == "[alice] hello"
    assert b["messages"][1]["content"][0]["text"] == "[bob] hi"


def test_structured_output_goes_to_system_and_prefills() -> None:
    """On a model without the native output format."""
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    request = req(Message.system("Sys."), Message.user("x"),
                  response_format=ResponseFormat(kind="json_schema", schema=schema)
                  ).replace(model="claude-sonnet-4-0")
    b = body(request)
    assert b["system"].startswith("Sys.\n\n")
    assert json.dumps(schema, sort_keys=True) in b["system"]
    assert b["messages"][-1] == {"role": "assistant", "content": [{"type": "text", "text": "{"}]}
    reply = {"id": "m", "type": "message", "role": "assistant", "model": MODEL,
             "content": [{"type": "text", "text": '"name": "x"}'}], "stop_reason": "end_turn",
             "usage": {"input_tokens": 1, "output_tokens": 2}}
    decoded = PROTOCOL.decode(json.dumps(reply).encode(), request, EP)
    assert decoded.text == '{"name": "x"}'
    # With thinking on, Anthropic refuses a prefill: the schema still goes to the system.
    thinking = request.replace(reasoning=ReasoningConfig(enabled=True, budget_tokens=1024))
    assert body(thinking)["messages"][-1]["role"] == "user"
    # An explicit prefill is honoured as given.
    assert body(req(prefill="Answer:"))["messages"][-1]["content"][0]["text"] == "Answer:"


def test_native_structured_output_where_the_model_has_it() -> None:
    from agentloom.providers.anthropic import structured_mode

    schema = {"type": "object", "properties": {
        "name": {"type": "string", "minLength": 1},
        "tags": {"type": "array", "items": {"type": "object", "properties": {}}}}}
    request = req(Message.system("Sys."), Message.user("x"),
                  response_format=ResponseFormat(kind="json_schema", schema=schema)
                  ).replace(model="claude-sonnet-4-5")
    assert structured_mode(request) == "native"
    b = body(request)
    assert b["system"] == "Sys." and b["messages"][-1]["role"] == "user"
    assert b["output_config"] == {"format": {"type": "json_schema", "schema": {
        "type": "object", "additionalProperties": False, "properties": {
            "name": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "object", "properties": {},
                                                "additionalProperties": False}}}}}}
    reply = {"id": "m", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
             "content": [{"type": "text", "text": '{"name": "x"}'}], "stop_reason": "end_turn",
             "usage": {"input_tokens": 1, "output_tokens": 2}}
    assert PROTOCOL.decode(json.dumps(reply).encode(), request, EP).text == '{"name": "x"}'
    # Thinking does not stop the native format (it stops a prefill).
    thinking = request.replace(reasoning=ReasoningConfig(enabled=True, budget_tokens=1024))
    assert "output_config" in body(thinking)
    # A bare JSON object has no schema to send: prompted, as on older models.
    bare = request.replace(response_format=ResponseFormat(kind="json_object"))
    assert structured_mode(bare) == "prompted" and "output_config" not in body(bare)
    assert structured_mode(request.replace(model="claude-3-opus-latest")) == "prompted"


def test_decode_message() -> None:
    reply = {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x-2025",
        "content": [
            {"type": "thinking", "thinking": "hmm", "signature": "S"},
            {"type": "redacted_thinking", "data": "R"},
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"q": "x"}},
        ],
        "stop_reason": "tool_use", "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 20, "cache_read_input_tokens": 5,
                  "cache_creation_input_tokens": 3},
    }
    r = PROTOCOL.decode(json.dumps(reply).encode(), req(), EP)
    assert r.parts[0] == ReasoningPart(text="hmm", signature="S")
    assert r.parts[1] == ReasoningPart(text="", redacted="R")
    assert r.text == "Let me look."
    assert r.tool_calls[0] == ToolCallPart(id="toolu_1", name="lookup", arguments='{"q": "x"}')
    assert r.finish_reason == "tool_use" and r.model == "claude-x-2025"
    assert r.response_id == "msg_1" and r.provider == "anthropic"
    u = r.usage
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens) == (
        10, 20, 5, 3)
    assert u.reasoning_tokens is None and u.input_includes_cached is False
    # A usage without cache fields leaves them unknown (None), never zero.
    bare = {**reply, "usage": {"input_tokens": 1, "output_tokens": 1}}
    assert PROTOCOL.decode(json.dumps(bare).encode(), req(), EP).usage.cache_read_tokens is None


def test_decode_bad_bodies() -> None:
    with pytest.raises(ValueError):
        PROTOCOL.decode(b"{not json", req(), EP)
    with pytest.raises(ValueError):
        PROTOCOL.decode(b'{"id": "x"}', req(), EP)
    err = {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}
    with pytest.raises(ProviderError) as info:
        PROTOCOL.decode(json.dumps(err).encode(), req(), EP)
    assert info.value.retryable is True


_SSE_EVENTS: list[dict[str, Any]] = [
    {"type": "message_start", "message": {
        "id": "msg_s", "type": "message", "role": "assistant", "model": MODEL,
        "content": [], "stop_reason": None,
        "usage": {"input_tokens": 9, "output_tokens": 1, "cache_read_input_tokens": 4,
                  "cache_creation_input_tokens": 0}}},
    {"type": "content_block_start", "index": 0,
     "content_block": {"type": "thinking", "thinking": "", "signature": ""}},
    {"type": "content_block_delta", "index": 0,
     "delta": {"type": "thinking_delta", "thinking": "Let me "}},
    {"type": "content_block_delta", "index": 0,
     "delta": {"type": "thinking_delta", "thinking": "think ✓."}},
    {"type": "content_block_delta", "index": 0,
     "delta": {"type": "signature_delta", "signature": "SIGX"}},
    {"type": "content_block_stop", "index": 0},
    {"type": "ping"},
    {"type": "content_block_start", "index": 1,
     "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 1,
     "delta": {"type": "text_delta", "text": "Héllo "}},
    {"type": "content_block_delta", "index": 1,
     "delta": {"type": "text_delta", "text": "wörld"}},
    {"type": "content_block_stop", "index": 1},
    {"type": "content_block_start", "index": 2,
     "content_block": {"type": "tool_use", "id": "toolu_9", "name": "f", "input": {}}},
    {"type": "content_block_delta", "index": 2,
     "delta": {"type": "input_json_delta", "partial_json": '{"a": '}},
    {"type": "content_block_delta", "index": 2,
     "delta": {"type": "input_json_delta", "partial_json": "1}"}},
    {"type": "content_block_stop", "index": 2},
    {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
     "usage": {"output_tokens": 33}},
    {"type": "message_stop"},
]
SSE = b"".join(
    f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in _SSE_EVENTS
)


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64, len(SSE)])
def test_stream_decoder_any_chunking(size: int) -> None:
    decoder = PROTOCOL.stream_decoder(req(stream=True), EP)
    builder = ResponseBuilder(MODEL)
    for i in range(0, len(SSE), size):
        for event in decoder.feed(SSE[i:i + size]):
            builder.add(event)
    for event in decoder.close():
        builder.add(event)
    r = builder.build(provider="anthropic")
    assert r.parts[0] == ReasoningPart(text="Let me think ✓.", signature="SIGX")
    assert r.text == "Héllo wörld"
    assert r.tool_calls == (ToolCallPart(id="toolu_9", name="f", arguments='{"a": 1}'),)
    assert r.finish_reason == "tool_use" and r.response_id == "msg_s"
    assert (r.usage.input_tokens, r.usage.output_tokens, r.usage.cache_read_tokens) == (9, 33, 4)


def test_stream_prefill_and_error_event() -> None:
    request = req(stream=True, response_format=ResponseFormat())
    decoder = PROTOCOL.stream_decoder(request, EP)
    events = decoder.feed(
        b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
        b'"content_block":{"type":"text","text":""}}\n\n'
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        b'"delta":{"type":"text_delta","text":"\\"a\\": 1}"}}\n\n'
    )
    assert "".join(getattr(e, "text", "") for e in events) == '{"a": 1}'
    with pytest.raises(ProviderError) as info:
        decoder.feed(b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error",'
                     b'"message":"Overloaded"}}\n\n')
    assert info.value.retryable is True and info.value.phase == "body"


def test_capabilities_and_serves() -> None:
    caps = PROTOCOL.capabilities("claude-sonnet-4-0")
    assert caps.image and caps.image_url and caps.pdf and not caps.audio_types
    assert caps.native_json_schema is False and caps.forced_tool_choice is True
    assert PROTOCOL.capabilities("claude-sonnet-4-5").native_json_schema is True
    assert PROTOCOL.serves("claude-3-5-haiku-latest")
    assert not PROTOCOL.serves("gpt-4o") and not PROTOCOL.serves("gemini-2.5-pro")


def test_stream_keeps_consecutive_thinking_blocks_apart() -> None:
    def ev(data: dict[str, Any]) -> bytes:
        return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()

    stream = b"".join([
        ev({"type": "content_block_start", "index": 0,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        ev({"type": "content_block_delta", "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "first"}}),
        ev({"type": "content_block_delta", "index": 0,
            "delta": {"type": "signature_delta", "signature": "S1"}}),
        ev({"type": "content_block_start", "index": 1,
            "content_block": {"type": "redacted_thinking", "data": "OPAQUE"}}),
        ev({"type": "content_block_start", "index": 2,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        ev({"type": "content_block_delta", "index": 2,
            "delta": {"type": "thinking_delta", "thinking": "second"}}),
        ev({"type": "content_block_delta", "index": 2,
            "delta": {"type": "signature_delta", "signature": "S2"}}),
    ])
    decoder = PROTOCOL.stream_decoder(req(stream=True), EP)
    builder = ResponseBuilder(MODEL)
    for event in decoder.feed(stream):
        builder.add(event)
    parts = builder.build(provider="anthropic").parts
    assert parts == (ReasoningPart(text="first", signature="S1"),
                     ReasoningPart(text="", redacted="OPAQUE"),
                     ReasoningPart(text="second", signature="S2"))


@pytest.mark.parametrize(("kind", "status", "retryable"), [
    ("invalid_request_error", 400, False),
    ("overloaded_error", 529, True),
    ("api_error", 500, True),
])
def test_an_error_event_in_a_200_stream_keeps_its_status(
    kind: str, status: int, retryable: bool
) -> None:
    decoder = PROTOCOL.stream_decoder(req(Message.user("x"), stream=True), EP)
    start = {"type": "message_start", "message": {"id": "m", "model": MODEL, "usage": {}}}
    body = (f"event: message_start\ndata: {json.dumps(start)}\n\n"
            f'event: error\ndata: {{"type":"error","error":{{"type":"{kind}",'
            f'"message":"bad"}}}}\n\n').encode()
    with pytest.raises(ProviderError) as info:
        decoder.feed(body)
    assert (info.value.status, info.value.retryable) == (status, retryable)


def test_server_side_tool_blocks_are_vendor_parts_sent_back_as_given() -> None:
    from agentloom.messages import VendorPart

    use = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
           "input": {"query": "looms"}}
    result = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
              "content": [{"type": "web_search_result", "url": "https://example.com",
                           "title": "Looms", "encrypted_content": "e1"}]}
    events = [
        {"type": "message_start", "message": {"id": "m", "model": MODEL, "usage": {}}},
        {"type": "content_block_start", "index": 0,
         "content_block": {**use, "input": {}}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "input_json_delta", "partial_json": '{"query": '}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "input_json_delta", "partial_json": '"looms"}'}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": result},
        {"type": "content_block_stop", "index": 1},
        {"type": "content_block_start", "index": 2,
         "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 2,
         "delta": {"type": "text_delta", "text": "Looms weave."}},
        {"type": "content_block_stop", "index": 2},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {}},
    ]
    body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()
    decoder = PROTOCOL.stream_decoder(req(Message.user("x"), stream=True), EP)
    builder = ResponseBuilder(MODEL)
    for event in decoder.feed(body) + decoder.close():
        builder.add(event)
    reply = builder.build(provider="anthropic")
    assert reply.tool_calls == () and reply.text == "Looms weave."
    assert [p.data for p in reply.parts if isinstance(p, VendorPart)] == [use, result]
    again = body_of(req(Message.user("x"), reply.to_message(), Message.user("more")))
    assert again["messages"][1]["content"] == [use, result,
                                               {"type": "text", "text": "Looms weave."}]
    # Another provider's vendor blocks never reach Anthropic.
    foreign = Message(role="assistant", parts=(VendorPart(provider="openai_responses",
                                                          data={"type": "reasoning"}),))
    assert len(body_of(req(Message.user("x"), foreign, Message.user("y")))["messages"]) == 1


def body_of(request: ModelRequest) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(PROTOCOL.encode(request, EP).body)
    return parsed
