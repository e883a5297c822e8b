"""llama.cpp's dialect: a request with tools goes out as a schema-constrained reply, and
the constrained reply comes back as a tool call or an answer. Against a loopback server
that answers as llama.cpp does (Chat Completions); the real embedded model is in
test_local_model.py."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from agentloom.cli import main as cli_main
from agentloom.http import AiohttpTransport
from agentloom.messages import (
    Message,
    ModelRequest,
    NamedToolChoice,
    ResponseFormat,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
)
from agentloom.providers import Endpoint, get_protocol
from agentloom.providers.llamacpp import DEFAULT_MAX_TOKENS, MAX_STRING_CHARS, reply_schema
from agentloom.routing import ProviderClient
from agentloom.testing._server import FakeReply
from agentloom.testing.fake_openai import FakeOpenAIServer

WEATHER = ToolSpec(name="get_weather", description="Current weather",
                   parameters={"type": "object", "properties": {"city": {"type": "string"}},
                               "required": ["city"]})
TIME = ToolSpec(name="get_time", description="Current time",
                parameters={"type": "object", "properties": {"tz": {"type": "string"}},
                            "required": ["tz"]})
ASK = ModelRequest(model="smollm2", messages=(Message.user("Weather in Paris?"),),
                   tools=(WEATHER, TIME), tool_choice="required")


@pytest.fixture
async def setup() -> AsyncIterator[tuple[FakeOpenAIServer, ProviderClient]]:
    transport = AiohttpTransport()
    async with FakeOpenAIServer() as server:
        assert isinstance(server, FakeOpenAIServer)
        endpoint = Endpoint(name="local", protocol="llamacpp",
                            base_url=server.openai_base_url, models=("smollm2",))
        yield server, ProviderClient(endpoint, get_protocol("llamacpp"), transport)
    await transport.aclose()


def _sent(server: FakeOpenAIServer) -> dict[str, Any]:
    body = server.requests[-1].json
    assert isinstance(body, dict)
    return body


async def test_required_tool_becomes_a_schema_and_the_reply_a_tool_call(
        setup: tuple[FakeOpenAIServer, ProviderClient]) -> None:
    server, client = setup
    server.script(FakeReply(text='{"tool": "get_weather", "arguments": {"city": "Paris"}}'))
    resp = await client.complete(ASK)
    sent = _sent(server)
    assert "tools" not in sent and "tool_choice" not in sent
    schema = sent["response_format"]["json_schema"]["schema"]
    # Only calls fit a required choice: no {"answer": ...} branch.
    jsonschema.validate({"tool": "get_time", "arguments": {"tz": "UTC"}}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"answer": "sunny"}, schema)
    with pytest.raises(jsonschema.ValidationError):  # arguments by the tool's own schema
        jsonschema.validate({"tool": "get_weather", "arguments": {}}, schema)
    system = sent["messages"][0]
    assert system["role"] == "system" and "get_weather" in system["content"]
    assert "You must call a tool now." in system["content"]
    assert sent["max_tokens"] == DEFAULT_MAX_TOKENS
    assert resp.finish_reason == "tool_calls" and resp.text == ""
    (call,) = resp.tool_calls
    assert (call.name, json.loads(call.arguments)) == ("get_weather", {"city": "Paris"})


async def test_auto_admits_an_answer_and_decodes_it_as_text(
        setup: tuple[FakeOpenAIServer, ProviderClient]) -> None:
    server, client = setup
    server.script(FakeReply(text='{"answer": "It is sunny."}'))
    resp = await client.complete(ASK.replace(tool_choice="auto", max_tokens=40))
    schema = _sent(server)["response_format"]["json_schema"]["schema"]
    jsonschema.validate({"answer": "x"}, schema)
    jsonschema.validate({"tool": "get_weather", "arguments": {"city": "x"}}, schema)
    assert _sent(server)["max_tokens"] == 40  # the caller's own limit wins
    assert resp.text == "It is sunny." and resp.tool_calls == ()
    assert resp.finish_reason == "stop"


def test_a_named_tool_narrows_the_schema_to_that_tool() -> None:
    schema = reply_schema(ASK.replace(tool_choice=NamedToolChoice(name="get_time")))
    jsonschema.validate({"tool": "get_time", "arguments": {"tz": "UTC"}}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"tool": "get_weather", "arguments": {"city": "x"}}, schema)


def test_auto_with_a_response_schema_constrains_the_answer_too() -> None:
    fmt = ResponseFormat(kind="json_schema", schema={
        "type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    schema = reply_schema(ASK.replace(tool_choice="auto", response_format=fmt))
    jsonschema.validate({"answer": {"n": 3}}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"answer": "three"}, schema)


async def test_earlier_tool_turns_are_sent_as_plain_turns(
        setup: tuple[FakeOpenAIServer, ProviderClient]) -> None:
    server, client = setup
    server.script(FakeReply(text='{"answer": "21 C in Paris."}'))
    history = (
        Message.system("Be brief."),
        Message.user("Weather in Paris?"),
        Message(role="assistant", parts=(ToolCallPart(id="c1", name="get_weather",
                                                      arguments='{"city": "Paris"}'),)),
        Message(role="tool", parts=(ToolResultPart(call_id="c1", name="get_weather",
                                                   content='{"temp_c": 21}'),)),
    )
    resp = await client.complete(ASK.replace(messages=history, tool_choice="auto"))
    roles = [(m["role"], m["content"]) for m in _sent(server)["messages"]]
    assert roles[0][0] == "system" and roles[0][1].startswith("Be brief.\n\nYou can call")
    assert roles[2] == ("assistant",
                        '{"tool": "get_weather", "arguments": {"city": "Paris"}}')
    assert roles[3] == ("user", 'Result of get_weather: {"temp_c": 21}')
    assert resp.text == "21 C in Paris."


async def test_streamed_tool_call_arrives_whole_at_the_end(
        setup: tuple[FakeOpenAIServer, ProviderClient]) -> None:
    server, client = setup
    server.script(FakeReply(text='{"tool": "get_weather", "arguments": {"city": "Oslo"}}',
                            chunks=6))
    events: list[Any] = []
    resp = await client.complete(ASK.replace(stream=True), on_event=events.append)
    assert [e.kind for e in events if e.kind in ("text_delta", "tool_call_delta")] == [
        "tool_call_delta"]  # no half-made JSON reaches a stream consumer
    assert resp.finish_reason == "tool_calls"
    assert json.loads(resp.tool_calls[0].arguments) == {"city": "Oslo"}


async def test_a_reply_cut_off_mid_object_stays_text(
        setup: tuple[FakeOpenAIServer, ProviderClient]) -> None:
    server, client = setup
    server.script(FakeReply(text='{"tool": "get_wea', finish_reason="length"))
    resp = await client.complete(ASK)
    assert resp.tool_calls == () and resp.parts == (TextPart(text='{"tool": "get_wea'),)
    assert resp.finish_reason == "length"  # the loop sees a truncated turn, not a call


async def test_without_tools_it_is_plain_chat_completions(
        setup: tuple[FakeOpenAIServer, ProviderClient]) -> None:
    server, client = setup
    server.script(FakeReply(text="Hello!"))
    resp = await client.complete(ModelRequest(model="smollm2",
                                              messages=(Message.user("hi"),)))
    sent = _sent(server)
    assert "response_format" not in sent and sent["messages"] == [
        {"role": "user", "content": "hi"}]
    assert resp.text == "Hello!"


async def test_a_workflow_names_a_llamacpp_server_of_its_own(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    async with FakeOpenAIServer() as server:
        assert isinstance(server, FakeOpenAIServer)
        server.script(FakeReply(text='{"city": "Paris"}'))
        flow = tmp_path / "mine.yaml"
        flow.write_text(f"""
name: mine
providers:
  box: {{type: llamacpp, base_url: "{server.openai_base_url}", models: [smollm2]}}
config: {{provider: box, model: smollm2}}
steps:
  - id: pick
    type: llm_call
    prompt: "Pick a city"
    response_schema:
      type: json_schema
      schema: {{type: object, properties: {{city: {{type: string}}}}, required: [city]}}
    output: pick
""", encoding="utf-8")
        code = await asyncio.to_thread(cli_main, ["run", str(flow), "--json",
                                                  "--store", str(tmp_path / "runs.db")])
        out = json.loads(capsys.readouterr().out)
        assert code == 0 and out["state"]["pick"] == {"city": "Paris"}
        sent = _sent(server)
        assert sent["response_format"]["type"] == "json_schema"
        assert sent["max_tokens"] == DEFAULT_MAX_TOKENS


async def test_strings_the_schema_leaves_unbounded_are_bounded_in_the_constraint(
        setup: tuple[FakeOpenAIServer, ProviderClient]) -> None:
    # A small model can repeat itself inside a string until max_tokens cuts the JSON off;
    # the constraint bounds such strings (what is validated stays the caller's schema).
    server, client = setup
    fmt = ResponseFormat(kind="json_schema", schema={
        "type": "object", "required": ["name", "kind", "code"],
        "properties": {"name": {"type": "string"}, "kind": {"enum": ["a", "b"]},
                       "code": {"type": "string", "maxLength": 5}}})
    server.script(FakeReply(text='{"name": "x", "kind": "a", "code": "c"}'),
                  FakeReply(text='{"tool": "get_weather", "arguments": {"city": "Oslo"}}'))
    await client.complete(ModelRequest(model="smollm2", messages=(Message.user("hi"),),
                                       response_format=fmt))
    props = _sent(server)["response_format"]["json_schema"]["schema"]["properties"]
    assert props["name"]["maxLength"] == MAX_STRING_CHARS
    assert "maxLength" not in props["kind"] and props["code"]["maxLength"] == 5
    assert "maxLength" not in fmt.schema["properties"]["name"]  # type: ignore[index]
    await client.complete(ASK)
    call = _sent(server)["response_format"]["json_schema"]["schema"]["anyOf"][0]
    assert call["properties"]["arguments"]["properties"]["city"]["maxLength"] == (
        MAX_STRING_CHARS)
