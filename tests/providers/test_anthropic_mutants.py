"""Anthropic wire rules a mutation run found untested: a prefill after a conversation that
already ends with an assistant turn, the status and `request_sent` of a stream error, the
model and id of `message_start`, and the encode/decode details one by one."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentloom.errors import ConfigError, ProviderError
from agentloom.messages import (
    AudioPart,
    FinishEvent,
    ImagePart,
    Message,
    ModelRequest,
    ReasoningConfig,
    ReasoningDelta,
    ReasoningPart,
    ResponseFormat,
    TextDelta,
    TextPart,
    ToolCallDelta,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    UsageEvent,
    VendorPart,
)
from agentloom.providers._base import Endpoint
from agentloom.providers.anthropic import (
    DEFAULT_MAX_TOKENS,
    MIN_BUDGET,
    PROTOCOL,
    check_reasoning_settings,
    decode_parts,
    encode_messages,
    max_tokens_for,
    structured_mode,
    to_anthropic_schema,
)

EP = Endpoint(name="anthropic", protocol="anthropic", base_url="https://api.anthropic.com",
              api_key="sk-test")
MODEL = "claude-sonnet-4-5"
OLD_MODEL = "claude-3-5-haiku-latest"  # no native JSON schema


def req(*messages: Message, **kw: Any) -> ModelRequest:
    kw.setdefault("model", MODEL)
    return ModelRequest(messages=messages or (Message.user("hi"),), **kw)


def body(request: ModelRequest) -> dict[str, Any]:
    http = PROTOCOL.encode(request, EP)
    result: dict[str, Any] = json.loads(http.body or b"")
    return result


def sse(*events: dict[str, Any]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


# --- prefill -------------------------------------------------------------------------------


def test_a_prefill_after_an_assistant_turn_joins_that_turn() -> None:
    request = req(Message.user("q"), Message.assistant("Sure,"), prefill=" here:")
    messages = body(request)["messages"]
    assert messages == [
        {"role": "user", "content": [{"type": "text", "text": "q"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Sure,"},
                                          {"type": "text", "text": " here:"}]},
    ]


def test_a_prefill_after_a_user_turn_opens_an_assistant_turn() -> None:
    messages = body(req(Message.user("q"), prefill="A:"))["messages"]
    assert messages[-1] == {"role": "assistant", "content": [{"type": "text", "text": "A:"}]}
    assert len(messages) == 2


def test_an_empty_prefill_sends_nothing() -> None:
    assert len(body(req(Message.user("q"), prefill=""))["messages"]) == 1


def test_the_json_prefill_only_for_prompted_json_without_thinking() -> None:
    prompted = req(model=OLD_MODEL, response_format=ResponseFormat())
    assert structured_mode(prompted) == "prompted"
    assert body(prompted)["messages"][-1]["content"] == [{"type": "text", "text": "{"}]
    thinking = req(model=OLD_MODEL, response_format=ResponseFormat(),
                   reasoning=ReasoningConfig(enabled=True, budget_tokens=2000))
    assert body(thinking)["messages"][-1]["role"] == "user"
    native = req(response_format=ResponseFormat(kind="json_schema",
                                                schema={"type": "object"}))
    assert structured_mode(native) == "native"
    assert body(native)["messages"][-1]["role"] == "user"
    assert structured_mode(req()) is None


def test_the_prefill_is_put_back_in_front_of_the_first_text_only() -> None:
    request = req(Message.user("q"), prefill="{")
    raw = {"content": [{"type": "text", "text": '"a": 1}'}, {"type": "text", "text": "more"}],
           "model": MODEL, "id": "m1", "stop_reason": "end_turn", "usage": {}}
    reply = PROTOCOL.decode(json.dumps(raw).encode(), request, EP)
    assert [p.text for p in reply.parts if isinstance(p, TextPart)] == ['{"a": 1}', "more"]


# --- stream errors, message_start ---------------------------------------------------------


@pytest.mark.parametrize(("kind", "status"), [
    ("overloaded_error", 529), ("rate_limit_error", 429), ("authentication_error", 401),
    ("permission_error", 403), ("not_found_error", 404), ("request_too_large", 413),
    ("something_new", None),
])
def test_a_stream_error_names_its_status_and_was_sent(kind: str, status: int | None) -> None:
    decoder = PROTOCOL.stream_decoder(req(stream=True), EP)
    with pytest.raises(ProviderError) as info:
        decoder.feed(sse({"type": "error", "error": {"type": kind, "message": "boom"}}))
    err = info.value
    assert err.status == status
    assert err.request_sent is True and err.phase == "body"
    assert err.retryable is (kind in ("overloaded_error", "rate_limit_error"))
    assert f"anthropic stream error {kind}: boom" in str(err)
    assert err.model == MODEL and err.provider == "anthropic"
    assert json.loads(err.body or "")["error"]["type"] == kind


def test_an_error_body_without_details_still_reads() -> None:
    with pytest.raises(ProviderError, match="anthropic stream error error: ") as info:
        PROTOCOL.decode(b'{"type": "error"}', req(), EP)
    assert info.value.status is None and info.value.request_sent is True


def test_message_start_carries_the_model_the_id_and_the_input_usage() -> None:
    decoder = PROTOCOL.stream_decoder(req(stream=True), EP)
    events = decoder.feed(sse({"type": "message_start", "message": {
        "id": "msg_1", "model": "claude-sonnet-4-5-20250929",
        "usage": {"input_tokens": 12, "cache_creation_input_tokens": 3}}}))
    usage, finish = events
    assert isinstance(usage, UsageEvent) and usage.usage.input_tokens == 12
    assert usage.usage.cache_write_tokens == 3 and usage.usage.input_includes_cached is False
    assert isinstance(finish, FinishEvent)
    assert (finish.model, finish.response_id, finish.finish_reason) == (
        "claude-sonnet-4-5-20250929", "msg_1", None)


def test_stream_block_starts_of_every_kind() -> None:
    decoder = PROTOCOL.stream_decoder(req(stream=True), EP)
    events = decoder.feed(sse(
        {"type": "content_block_start", "index": 0,
         "content_block": {"type": "text", "text": "Hi"}},
        {"type": "content_block_start", "index": 1,
         "content_block": {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}}},
        {"type": "content_block_start", "index": 2,
         "content_block": {"type": "tool_use", "id": "t2", "name": "g", "input": {}}},
        {"type": "content_block_start", "index": 3,
         "content_block": {"type": "thinking", "thinking": "hmm"}},
        {"type": "content_block_start", "index": 4,
         "content_block": {"type": "thinking", "thinking": ""}},
        {"type": "content_block_start", "index": 5,
         "content_block": {"type": "redacted_thinking", "data": "D"}},
        {"type": "content_block_delta", "index": 1,
         "delta": {"type": "input_json_delta", "partial_json": "x"}},
        {"type": "content_block_delta", "index": 3,
         "delta": {"type": "thinking_delta", "thinking": "more"}},
        {"type": "content_block_delta", "index": 3,
         "delta": {"type": "signature_delta", "signature": "S"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "unknown_delta"}},
        {"type": "message_delta", "delta": {}, "usage": {"output_tokens": 5}},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}},
        {"type": "ping"},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_stop"},
    ))
    assert events == [
        TextDelta(text="Hi"),
        ToolCallDelta(index=1, id="t1", name="f", arguments='{"a": 1}'),
        ToolCallDelta(index=2, id="t2", name="g", arguments=""),
        ReasoningDelta(text="hmm"),
        ReasoningDelta(redacted="D"),
        ToolCallDelta(index=1, arguments="x"),
        ReasoningDelta(text="more"),
        ReasoningDelta(signature="S"),
        events[8],
        FinishEvent(finish_reason="end_turn"),
    ]
    assert isinstance(events[8], UsageEvent) and events[8].usage.output_tokens == 5


def test_a_stream_event_that_is_not_an_object_is_a_bad_shape() -> None:
    decoder = PROTOCOL.stream_decoder(req(stream=True), EP)
    with pytest.raises(ValueError, match="not an object"):
        decoder.feed(b"event: x\ndata: [1]\n\n")


def test_a_vendor_block_without_streamed_input_keeps_its_own() -> None:
    decoder = PROTOCOL.stream_decoder(req(stream=True), EP)
    block = {"type": "web_fetch_tool_result", "tool_use_id": "s", "content": {"a": 1}}
    events = decoder.feed(sse(
        {"type": "content_block_start", "index": 0, "content_block": block},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "input_json_delta", "partial_json": "  "}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_stop", "index": 0},  # a second stop: nothing left
    ))
    assert len(events) == 1
    assert events[0].part == VendorPart(provider="anthropic", data=block)  # type: ignore[attr-defined]


def test_the_stream_prefill_goes_in_front_of_the_first_text_once() -> None:
    decoder = PROTOCOL.stream_decoder(req(stream=True, prefill="P"), EP)
    events = decoder.feed(sse(
        {"type": "content_block_start", "index": 0,
         "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "text_delta", "text": "a"}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "text_delta", "text": "b"}},
    ))
    assert events == [TextDelta(text="P"), TextDelta(text="a"), TextDelta(text="b")]


# --- encode details ------------------------------------------------------------------------


def test_max_tokens_default_plus_the_thinking_budget() -> None:
    assert max_tokens_for(req()) == DEFAULT_MAX_TOKENS == 4096
    assert max_tokens_for(req(max_tokens=10)) == 10
    thinking = ReasoningConfig(enabled=True, budget_tokens=2000)
    assert max_tokens_for(req(reasoning=thinking)) == 2000 + DEFAULT_MAX_TOKENS
    assert max_tokens_for(req(reasoning=ReasoningConfig(enabled=False, budget_tokens=2000))) \
        == DEFAULT_MAX_TOKENS


def test_thinking_budget_boundaries_at_load() -> None:
    on = ReasoningConfig(enabled=True, budget_tokens=MIN_BUDGET)
    check_reasoning_settings(MODEL, None, on)
    check_reasoning_settings(MODEL, MIN_BUDGET + 1, on)
    with pytest.raises(ConfigError, match=r"max_tokens \(1024\) must be above"):
        check_reasoning_settings(MODEL, MIN_BUDGET, on)
    with pytest.raises(ConfigError, match=f"at least {MIN_BUDGET}"):
        check_reasoning_settings(MODEL, None, ReasoningConfig(enabled=True,
                                                              budget_tokens=MIN_BUDGET - 1))
    with pytest.raises(ConfigError, match=r"needs thinking\.budget_tokens"):
        check_reasoning_settings(MODEL, None, ReasoningConfig(enabled=True))
    check_reasoning_settings("gpt-4o", None, ReasoningConfig(enabled=True))  # not Claude
    check_reasoning_settings(MODEL, 5, ReasoningConfig(enabled=False, budget_tokens=1))
    check_reasoning_settings(MODEL, 5, None)


def test_thinking_on_the_wire_and_temperature_only_without_it() -> None:
    on = body(req(reasoning=ReasoningConfig(enabled=True, budget_tokens=2000),
                  temperature=0.3))
    assert on["thinking"] == {"type": "enabled", "budget_tokens": 2000}
    assert "temperature" not in on
    hidden = body(req(reasoning=ReasoningConfig(enabled=True, budget_tokens=2000,
                                                capture=False)))
    assert hidden["thinking"]["display"] == "omitted"
    off = body(req(temperature=0.3))
    assert off["temperature"] == 0.3 and "thinking" not in off
    assert "temperature" not in body(req())
    with pytest.raises(ConfigError, match="needs budget_tokens"):
        body(req(reasoning=ReasoningConfig(enabled=True)))


def test_the_schema_instruction_joins_the_system_prompt() -> None:
    alone = body(req(model=OLD_MODEL, response_format=ResponseFormat()))
    assert "JSON" in alone["system"] and not alone["system"].startswith("\n")
    both = body(req(Message.system("Be brief."), Message.user("q"), model=OLD_MODEL,
                    response_format=ResponseFormat()))
    assert both["system"].startswith("Be brief.\n\n")
    assert "system" not in body(req())


def test_native_schema_output_config() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}}
    out = body(req(response_format=ResponseFormat(kind="json_schema", schema=schema)))
    assert out["output_config"] == {"format": {"type": "json_schema", "schema": {
        "type": "object", "properties": {"n": {"type": "integer"}},
        "additionalProperties": False}}}


def test_to_anthropic_schema_closes_objects_and_drops_narrowing() -> None:
    schema = {
        "type": "object",
        "properties": {
            "s": {"type": "string", "maxLength": 3, "pattern": "a"},
            "l": {"type": "array", "items": {"type": "object"}, "maxItems": 2},
            "format": {"type": "string"},  # a property named like a keyword stays
        },
        "$defs": {"D": {"properties": {"x": {"minimum": 0}}}},
        "anyOf": [{"type": "object"}, {"type": "null"}],
    }
    assert to_anthropic_schema(schema) == {
        "type": "object",
        "properties": {
            "s": {"type": "string"},
            "l": {"type": "array", "items": {"type": "object", "additionalProperties": False}},
            "format": {"type": "string"},
        },
        "$defs": {"D": {"properties": {"x": {}}, "additionalProperties": False}},
        "anyOf": [{"type": "object", "additionalProperties": False}, {"type": "null"}],
        "additionalProperties": False,
    }
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(70):
        node["items"] = {}
        node = node["items"]
    out = to_anthropic_schema(deep)
    depth = 0
    while out:
        out, depth = out["items"], depth + 1
    assert depth == 65  # cut at 64 levels below the top


def test_messages_merge_by_role_and_results_open_the_user_turn() -> None:
    messages = encode_messages((
        Message.system("ignored here"),
        Message.user("q"),
        Message(role="assistant", parts=(ToolCallPart(id="c1", name="f", arguments='{"a": 1}'),)),
        Message.user("and also"),
        Message(role="tool", parts=(
            ToolResultPart(call_id="c1", name="f", content="bad", is_error=True),)),
        Message.user(""),  # no blocks: skipped
    ), MODEL)
    assert messages == [
        {"role": "user", "content": [{"type": "text", "text": "q"}]},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "c1", "name": "f", "input": {"a": 1}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "c1", "content": "bad", "is_error": True},
            {"type": "text", "text": "and also"}]},
    ]


def test_parts_other_providers_made_are_not_sent() -> None:
    messages = encode_messages((
        Message.user("q"),
        Message(role="assistant", parts=(
            ReasoningPart(text="unsigned"),
            ReasoningPart(text="", redacted="R"),
            ReasoningPart(text="t", signature="S"),
            VendorPart(provider="openai", data={"type": "x"}),
            VendorPart(provider="anthropic", data={"type": "server_tool_use", "id": "s"}),
        )),
    ), MODEL)
    assert messages[1]["content"] == [
        {"type": "redacted_thinking", "data": "R"},
        {"type": "thinking", "thinking": "t", "signature": "S"},
        {"type": "server_tool_use", "id": "s"},
    ]


def test_media_needs_data_or_url_and_audio_is_refused() -> None:
    with pytest.raises(ConfigError, match="does not take audio"):
        audio = AudioPart(data=b"x", media_type="audio/wav")
        encode_messages((Message(role="user", parts=(audio,)),), MODEL)
    with pytest.raises(ConfigError, match="an image attachment has neither data nor url"):
        encode_messages((Message(role="user", parts=(ImagePart(media_type="image/png"),)),), MODEL)


def test_tools_with_cache_auto_mark_the_last_tool_and_choice_is_sent() -> None:
    tools = (ToolSpec(name="a", description="A", parameters={"type": "object"}),
             ToolSpec(name="b", description="B", parameters={"type": "object"}))
    out = body(req(tools=tools, cache="auto"))
    assert "cache_control" not in out["tools"][0]
    assert out["tools"][1]["cache_control"] == {"type": "ephemeral"}
    assert out["tool_choice"] == {"type": "auto"}
    plain = body(req(tools=tools))
    assert all("cache_control" not in t for t in plain["tools"])
    assert "tools" not in body(req()) and "tool_choice" not in body(req())
    assert "stream" not in body(req())


def test_cache_auto_skips_thinking_blocks_when_marking() -> None:
    out = body(req(Message.user("q"),
                   Message(role="assistant", parts=(TextPart(text="t"),
                                            ReasoningPart(text="r", signature="S"))),
                   cache="auto"))
    last = out["messages"][-1]["content"]
    assert last[0] == {"type": "text", "text": "t", "cache_control": {"type": "ephemeral"}}
    assert "cache_control" not in last[1]
    assert "system" not in out


# --- decode details -------------------------------------------------------------------------


def test_decode_parts_of_every_kind() -> None:
    parts = decode_parts([
        {"type": "text"},
        {"type": "tool_use", "id": "t", "name": "f"},
        {"type": "thinking", "signature": "S"},
        {"type": "redacted_thinking"},
        {"type": "mcp_tool_use", "id": "m"},
        {"no": "type"},
    ], None)
    assert parts == (
        TextPart(text=""),
        ToolCallPart(id="t", name="f", arguments="{}"),
        ReasoningPart(text="", signature="S"),
        ReasoningPart(text="", redacted=""),
        VendorPart(provider="anthropic", data={"type": "mcp_tool_use", "id": "m"}),
    )


def test_decode_falls_back_to_the_requested_model_and_reads_usage() -> None:
    raw = {"content": [], "usage": {"input_tokens": 3, "output_tokens": 4,
                                    "cache_read_input_tokens": 5}}
    reply = PROTOCOL.decode(json.dumps(raw).encode(), req(), EP)
    assert reply.model == MODEL and reply.response_id is None and reply.finish_reason is None
    assert (reply.usage.input_tokens, reply.usage.output_tokens, reply.usage.cache_read_tokens,
            reply.usage.reasoning_tokens) == (3, 4, 5, None)
    with pytest.raises(ValueError, match="no content list"):
        PROTOCOL.decode(b'{"content": "x"}', req(), EP)
    with pytest.raises(ValueError, match="no content list"):
        PROTOCOL.decode(b"[1]", req(), EP)
