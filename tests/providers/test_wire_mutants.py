"""Wire rules of the OpenAI, OpenAI Responses and Gemini protocols that a mutation run
found untested: the status each error type stands for, in-reply errors, the fields a
decoder reads (ids, finish reasons, reasoning summaries), and schema conversion details."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentloom.errors import ProviderError
from agentloom.messages import (
    ImagePart,
    Message,
    ModelRequest,
    ReasoningConfig,
    ReasoningDelta,
    ToolCallDelta,
)
from agentloom.providers import get_protocol
from agentloom.providers._base import Endpoint
from agentloom.providers.gemini import to_gemini_schema
from agentloom.providers.openai_responses import finish_reason

OPENAI = get_protocol("openai")
RESPONSES = get_protocol("openai_responses")
GEMINI = get_protocol("gemini")
EP = Endpoint(name="openai", protocol="openai", base_url="http://127.0.0.1:9/v1", api_key="k")
REP = Endpoint(name="openai", protocol="openai_responses", base_url="http://127.0.0.1:9/v1",
               api_key="k")
GEP = Endpoint(name="gemini", protocol="gemini", base_url="http://127.0.0.1:9", api_key="k")


def req(model: str = "gpt-4o-mini", **kw: Any) -> ModelRequest:
    return ModelRequest(model=model, messages=(Message.user("hi"),), **kw)


# --- OpenAI chat completions ---------------------------------------------------------------


@pytest.mark.parametrize(("kind", "status", "retryable"), [
    ("invalid_request_error", 400, False), ("authentication_error", 401, False),
    ("permission_error", 403, False), ("not_found_error", 404, False),
    ("rate_limit_error", 429, True), ("server_error", 500, True), ("mystery", None, True),
])
def test_openai_in_reply_error_types_map_to_statuses(
    kind: str, status: int | None, retryable: bool
) -> None:
    body = json.dumps({"error": {"type": kind, "message": "m"}}).encode()
    with pytest.raises(ProviderError) as info:
        OPENAI.decode(body, req(), EP)
    assert (info.value.status, info.value.retryable) == (status, retryable)
    assert info.value.request_sent is True and info.value.phase == "body"
    assert "reported an error in its reply: m" in str(info.value)


def test_openai_a_numeric_code_wins_over_the_type() -> None:
    body = json.dumps({"error": {"type": "server_error", "code": 400}}).encode()
    with pytest.raises(ProviderError) as info:
        OPENAI.decode(body, req(), EP)
    assert info.value.status == 400 and not info.value.retryable
    body = json.dumps({"error": {"type": "server_error", "code": True}}).encode()
    with pytest.raises(ProviderError) as info:
        OPENAI.decode(body, req(), EP)
    assert info.value.status == 500


def test_openai_a_tool_call_without_an_id_is_numbered() -> None:
    body = {"choices": [{"message": {"content": None, "tool_calls": [
        {"function": {"name": "f", "arguments": "{}"}},
        {"id": "", "function": {"name": "g"}},
        {"id": "x", "function": {"name": "h", "arguments": "{\"a\":1}"}},
    ]}, "finish_reason": "tool_calls"}]}
    reply = OPENAI.decode(json.dumps(body).encode(), req(), EP)
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [
        ("call_0", "f", "{}"), ("call_1", "g", ""), ("x", "h", '{"a":1}')]


def test_openai_an_empty_assistant_turn_sends_empty_content() -> None:
    from agentloom.messages import TextPart

    request = ModelRequest(model="gpt-4o-mini", messages=(
        Message.user("q"), Message(role="assistant", parts=()),
        Message(role="assistant", parts=(TextPart(text="a"),))))
    sent = json.loads(OPENAI.encode(request, EP).body or b"")["messages"]
    assert sent[1] == {"role": "assistant", "content": ""}
    assert sent[2] == {"role": "assistant", "content": "a"}


# --- OpenAI Responses ----------------------------------------------------------------------


@pytest.mark.parametrize(("error", "status"), [
    ({"type": "not_found_error"}, 404), ({"type": "permission_error"}, 403),
    ({"code": "rate_limit_exceeded"}, 429), ({"type": "rate_limit_error"}, 429),
    ({"code": "server_is_overloaded"}, 503), ({"type": "server_error"}, 500),
    ({"status": 418, "type": "server_error"}, 418), ({"code": "odd"}, None),
])
def test_responses_error_types_and_codes_map_to_statuses(
    error: dict[str, Any], status: int | None
) -> None:
    decoder = RESPONSES.stream_decoder(req("o4-mini", stream=True), REP)
    event = {"type": "error", "error": {**error, "message": "m"}}
    with pytest.raises(ProviderError) as info:
        decoder.feed(f"event: error\ndata: {json.dumps(event)}\n\n".encode())
    assert info.value.status == status
    assert info.value.retryable is (status is None or status in (429, 500, 502, 503, 504))
    assert info.value.request_sent is True


def test_responses_a_failed_response_raises_its_error() -> None:
    decoder = RESPONSES.stream_decoder(req("o4-mini", stream=True), REP)
    event = {"type": "response.failed",
             "response": {"error": {"code": "server_is_overloaded", "message": "busy"}}}
    with pytest.raises(ProviderError, match="busy") as info:
        decoder.feed(f"data: {json.dumps(event)}\n\n".encode())
    assert info.value.status == 503


@pytest.mark.parametrize(("response", "reason"), [
    ({"incomplete_details": {"reason": "max_output_tokens"}, "status": "incomplete"},
     "max_output_tokens"),
    ({"incomplete_details": {}, "status": "incomplete"}, "incomplete"),
    ({"incomplete_details": None, "status": "completed", "output": []}, "stop"),
    ({"status": "completed", "output": [{"type": "function_call"}]}, "tool_calls"),
    ({}, None),
])
def test_responses_finish_reason(response: dict[str, Any], reason: str | None) -> None:
    assert finish_reason(response) == reason


def test_responses_streamed_summaries_arrive_only_when_reasoning_is_kept() -> None:
    events = [
        {"type": "response.reasoning_summary_text.delta", "output_index": 0, "delta": "why"},
        {"type": "response.reasoning_summary_text.delta", "output_index": 0, "delta": ""},
        {"type": "response.output_item.done", "output_index": 0,
         "item": {"type": "reasoning", "id": "r", "summary": [{"text": "why"}]}},
        {"type": "response.output_item.added", "output_index": 1,
         "item": {"type": "function_call", "call_id": "c", "name": "f"}},
        {"type": "response.output_item.added", "output_index": 2,
         "item": {"type": "function_call", "id": "i", "name": "g", "arguments": "{}"}},
    ]
    body = "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode()
    kept = RESPONSES.stream_decoder(
        req("o4-mini", stream=True, reasoning=ReasoningConfig(level="low")), REP).feed(body)
    assert [e for e in kept if isinstance(e, ReasoningDelta)] == [ReasoningDelta(text="why")]
    calls = [e for e in kept if isinstance(e, ToolCallDelta)]
    assert calls == [ToolCallDelta(index=1, id="c", name="f", arguments=""),
                     ToolCallDelta(index=2, id="i", name="g", arguments="{}")]
    dropped = RESPONSES.stream_decoder(
        req("o4-mini", stream=True, reasoning=ReasoningConfig(level="low", capture=False)),
        REP).feed(body)
    assert not [e for e in dropped if isinstance(e, ReasoningDelta)]


def test_responses_streams_ask_for_an_event_stream_and_images_go_as_data_urls() -> None:
    assert RESPONSES.encode(req("o4-mini", stream=True), REP).headers["accept"] == (
        "text/event-stream")
    assert "accept" not in RESPONSES.encode(req("o4-mini"), REP).headers
    request = ModelRequest(model="o4-mini", messages=(
        Message.user("see", ImagePart(media_type="image/png", data=b"\x89P")),))
    content = json.loads(RESPONSES.encode(request, REP).body or b"")["input"][0]["content"]
    assert {"type": "input_image", "image_url": "data:image/png;base64,iVA="} in content


# --- Gemini ---------------------------------------------------------------------------------


def test_gemini_streamed_chunks_carry_the_response_id_and_model() -> None:
    chunk = {"candidates": [{"content": {"parts": [{"text": "hi"}]}, "finishReason": "STOP"}],
             "modelVersion": "gemini-2.5-flash-001", "responseId": "resp-1"}
    decoder = GEMINI.stream_decoder(req("gemini-2.5-flash", stream=True), GEP)
    events = decoder.feed(f"data: {json.dumps(chunk)}\n\n".encode())
    finish = events[-1]
    assert (finish.finish_reason, finish.model, finish.response_id) == (  # type: ignore[attr-defined]
        "STOP", "gemini-2.5-flash-001", "resp-1")


@pytest.mark.parametrize(("schema", "converted"), [
    ({"type": "integer", "format": "int64"}, {"type": "INTEGER", "format": "int64"}),
    ({"type": "integer", "format": "float"}, {"type": "INTEGER"}),
    ({"type": "number", "format": "double"}, {"type": "NUMBER", "format": "double"}),
    ({"type": "string", "format": "date-time"}, {"type": "STRING", "format": "date-time"}),
    ({"type": "string", "format": "email"}, {"type": "STRING"}),
])
def test_gemini_keeps_only_the_formats_it_knows(
    schema: dict[str, Any], converted: dict[str, Any]
) -> None:
    assert to_gemini_schema(schema) == converted


def test_gemini_an_unknown_or_non_string_ref_is_dropped_and_a_known_one_resolved() -> None:
    schema = {"$defs": {"N": {"type": "integer"}}, "type": "object", "properties": {
        "a": {"$ref": "#/$defs/N", "description": "an a"},
        "b": {"$ref": "#/$defs/Missing", "type": "string"},
        "c": {"$ref": 5, "type": "boolean"},
    }}
    assert to_gemini_schema(schema)["properties"] == {
        "a": {"type": "INTEGER", "description": "an a"},
        "b": {"type": "STRING"},
        "c": {"type": "BOOLEAN"},
    }


# --- Ollama ---------------------------------------------------------------------------------

OLLAMA = get_protocol("ollama")
OEP = Endpoint(name="ollama", protocol="ollama", base_url="http://127.0.0.1:9", api_key=None)


def test_ollama_refuses_documents_and_audio_by_name() -> None:
    from agentloom.errors import ConfigError
    from agentloom.messages import AudioPart, DocumentPart

    for part, label in ((DocumentPart(data=b"%PDF"), "PDF"),
                        (AudioPart(data=b"x", media_type="audio/wav"), "audio")):
        request = ModelRequest(model="llama3", messages=(Message.user("x", part),))
        with pytest.raises(ConfigError, match=f"does not take {label} attachments"):
            OLLAMA.encode(request, OEP)


def test_ollama_sends_vendor_tools_after_its_own() -> None:
    from agentloom.messages import ToolSpec

    request = ModelRequest(model="llama3", messages=(Message.user("x"),),
                           tools=(ToolSpec(name="f", description="F", parameters={}),),
                           vendor_tools=({"type": "web_search"},))
    tools = json.loads(OLLAMA.encode(request, OEP).body or b"")["tools"]
    assert [t.get("type") for t in tools] == ["function", "web_search"]
    only_vendor = ModelRequest(model="llama3", messages=(Message.user("x"),),
                               vendor_tools=({"type": "web_search"},))
    assert json.loads(OLLAMA.encode(only_vendor, OEP).body or b"")["tools"] == [
        {"type": "web_search"}]


def test_ollama_numbers_tool_calls_across_chunks() -> None:
    chunks = [
        {"message": {"tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]}},
        {"message": {"tool_calls": [{"function": {"name": "g", "arguments": "{}"}}]}},
    ]
    decoder = OLLAMA.stream_decoder(ModelRequest(model="llama3", messages=(), stream=True), OEP)
    events = decoder.feed("".join(json.dumps(c) + "\n" for c in chunks).encode())
    calls = [e for e in events if isinstance(e, ToolCallDelta)]
    assert [(c.index, c.name, c.arguments) for c in calls] == [(0, "f", '{"a": 1}'),
                                                              (1, "g", "{}")]
    assert calls[0].id != calls[1].id


def test_protocol_names() -> None:
    assert (OPENAI.name, RESPONSES.name, GEMINI.name, OLLAMA.name) == (
        "openai", "openai_responses", "gemini", "ollama")


@pytest.mark.parametrize("module", ["openai", "ollama", "anthropic", "gemini"])
def test_provider_modules_name_a_missing_attribute(module: str) -> None:
    import importlib

    mod = importlib.import_module(f"agentloom.providers.{module}")
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        mod.Nope  # noqa: B018


def test_the_migration_faces_resolve() -> None:
    from agentloom.compat import gateway
    from agentloom.providers import anthropic, ollama, openai

    assert ollama.OllamaProvider is gateway.OllamaProvider
    assert anthropic.AnthropicProvider is gateway.AnthropicProvider
    assert openai.OpenAIProvider is gateway.OpenAIProvider


# --- OpenAI Responses: encode details ------------------------------------------------------


def responses_body(request: ModelRequest) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(RESPONSES.encode(request, REP).body or b"")
    return result


def test_responses_documents_need_data_or_url() -> None:
    from agentloom.errors import ConfigError
    from agentloom.messages import DocumentPart

    request = ModelRequest(model="o4-mini", messages=(Message.user("x", DocumentPart()),))
    with pytest.raises(ConfigError, match="a document attachment has neither data nor url"):
        RESPONSES.encode(request, REP)
    url = ModelRequest(model="o4-mini", messages=(
        Message.user("x", DocumentPart(url="https://e/x.pdf")),))
    assert {"type": "input_file", "file_url": "https://e/x.pdf"} in (
        responses_body(url)["input"][0]["content"])


def test_responses_a_named_user_speaks_in_brackets() -> None:
    request = ModelRequest(model="o4-mini", messages=(Message.user("hi", name="ada"),
                                                      Message.assistant("yo", name="bot")))
    items = responses_body(request)["input"]
    assert items[0]["content"][0] == {"type": "input_text", "text": "[ada] hi"}
    assert items[1] == {"role": "assistant", "content": "[bot] yo"}


def test_responses_text_formats() -> None:
    from agentloom.messages import ResponseFormat

    schema = ResponseFormat(kind="json_schema", schema={"type": "object"}, name="r",
                            description="the reply")
    fmt = responses_body(req("o4-mini", response_format=schema))["text"]["format"]
    assert fmt == {"type": "json_schema", "name": "r", "schema": {"type": "object"},
                   "strict": True, "description": "the reply"}
    plain = responses_body(req("o4-mini", response_format=ResponseFormat()))
    assert plain["text"]["format"] == {"type": "json_object"}


def test_responses_an_error_that_is_not_an_object_keeps_its_text() -> None:
    decoder = RESPONSES.stream_decoder(req("o4-mini", stream=True), REP)
    event = {"type": "response.failed", "response": {"error": "plain words"}}
    with pytest.raises(ProviderError, match="reported an error in its reply: plain words"):
        decoder.feed(f"data: {json.dumps(event)}\n\n".encode())


def test_gemini_a_nullable_union_stays_nullable() -> None:
    out = to_gemini_schema({"type": ["string", "integer", "null"]})
    assert out["nullable"] is True
    assert [o["type"] for o in out["anyOf"]] == ["STRING", "INTEGER"]
    assert "nullable" not in to_gemini_schema({"type": ["string", "integer"]})


def test_responses_a_summary_delta_is_passed_on_as_it_arrives() -> None:
    event = {"type": "response.reasoning_summary_text.delta", "output_index": 0,
             "delta": "thinking..."}
    decoder = RESPONSES.stream_decoder(req("o4-mini", stream=True), REP)
    assert decoder.feed(f"data: {json.dumps(event)}\n\n".encode()) == [
        ReasoningDelta(text="thinking...")]


def test_gemini_all_of_resolves_each_reference_before_merging() -> None:
    schema = {
        "$defs": {"Named": {"type": "object", "properties": {"name": {"type": "string"}},
                            "required": ["name"]}},
        "allOf": [{"$ref": "#/$defs/Named"},
                  {"properties": {"age": {"type": "integer"}}, "required": ["age"]}],
    }
    out = to_gemini_schema(schema)
    assert out["type"] == "OBJECT"
    assert out["properties"] == {"name": {"type": "STRING"}, "age": {"type": "INTEGER"}}
    assert out["required"] == ["name", "age"]
