"""The OpenAI Responses API: selection per provider and model, the wire both ways against
the fake server (plain and streamed), and a tool loop that keeps the model's reasoning."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from agentloom import Agent
from agentloom.errors import ConfigError
from agentloom.http import AiohttpTransport
from agentloom.messages import (
    Message,
    ModelRequest,
    ReasoningConfig,
    ResponseFormat,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolSpec,
    VendorPart,
)
from agentloom.providers import endpoints_from_env, get_protocol, vendor_endpoint
from agentloom.providers.openai import api_for
from agentloom.routing import ProviderClient
from agentloom.routing._providers import endpoint_from_config
from agentloom.testing._server import FakeReply
from agentloom.testing.fake_openai import FakeOpenAIServer

WEATHER = ToolSpec(name="weather", description="Weather in a city",
                   parameters={"type": "object", "properties": {"city": {"type": "string"}}})


def test_reasoning_models_of_openai_default_to_the_responses_api() -> None:
    openai = vendor_endpoint("openai", api_key="k")
    assert api_for("o3", openai) == "responses"
    assert api_for("gpt-5.1", openai) == "responses"
    assert api_for("gpt-4o", openai) == "chat_completions"
    compatible = vendor_endpoint("generic_openai", base_url="http://127.0.0.1:9/v1")
    assert api_for("o3", compatible) == "chat_completions"


def test_api_is_chosen_per_provider_or_per_model() -> None:
    every = endpoint_from_config("openai", {"api": "chat_completions"}, env={})
    assert api_for("o3", every) == "chat_completions"
    per_model = endpoint_from_config(
        "vllm", {"base_url": "http://127.0.0.1:9/v1", "api": {"gpt-4.1": "responses"}}, env={})
    assert api_for("gpt-4.1", per_model) == "responses"
    assert api_for("gpt-4o", per_model) == "chat_completions"
    with pytest.raises(ConfigError, match=r"providers.openai.api: expected responses or"):
        endpoint_from_config("openai", {"api": "completions"}, env={})
    (from_env,) = endpoints_from_env({"OPENAI_API_KEY": "k", "OPENAI_API": "responses"})
    assert api_for("gpt-4o", from_env) == "responses"
    with pytest.raises(ConfigError, match="OPENAI_API must be one of"):
        endpoints_from_env({"OPENAI_API_KEY": "k", "OPENAI_API": "legacy"})


def test_request_body_for_a_reasoning_model() -> None:
    request = ModelRequest(
        model="o3", messages=(Message.system("Be brief."), Message.user("hi")), max_tokens=50,
        temperature=0.2, tools=(WEATHER,), vendor_tools=({"type": "web_search"},),
        reasoning=ReasoningConfig(enabled=True, level="high"),
        response_format=ResponseFormat(kind="json_schema", schema={"type": "object"},
                                       name="answer"))
    http = get_protocol("openai").encode(request, vendor_endpoint("openai", api_key="k"))
    body = json.loads(http.body)
    assert http.url == "https://api.openai.com/v1/responses"
    assert http.headers["authorization"] == "Bearer k"
    assert body == {
        "model": "o3", "instructions": "Be brief.",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
        "max_output_tokens": 50, "reasoning": {"effort": "high", "summary": "auto"},
        "include": ["reasoning.encrypted_content"], "store": False,
        "tools": [{"type": "function", "name": "weather", "description": "Weather in a city",
                   "parameters": WEATHER.parameters, "strict": False},
                  {"type": "web_search"}],
        "tool_choice": "auto",
        "text": {"format": {"type": "json_schema", "name": "answer",
                            "schema": {"type": "object"}, "strict": True}},
    }


@pytest.fixture
async def client() -> AsyncIterator[tuple[FakeOpenAIServer, ProviderClient]]:
    transport = AiohttpTransport()
    async with FakeOpenAIServer() as server:
        assert isinstance(server, FakeOpenAIServer)
        endpoint = vendor_endpoint("openai", api_key="k", base_url=server.openai_base_url)
        yield server, ProviderClient(endpoint, get_protocol("openai"), transport)
    await transport.aclose()


async def test_plain_reply_with_cached_and_reasoning_tokens(
    client: tuple[FakeOpenAIServer, ProviderClient],
) -> None:
    server, provider = client
    server.script(FakeReply(text="Hi there", reasoning="Greet back.", cached_tokens=4,
                            reasoning_tokens=3, model="o3-2025-04-16"))
    resp = await provider.complete(ModelRequest(model="o3", messages=(Message.user("hi"),)))
    assert server.requests[0].path == "/v1/responses"
    assert resp.text == "Hi there" and resp.reasoning == "Greet back."
    assert resp.finish_reason == "stop" and resp.model == "o3-2025-04-16"
    u = resp.usage
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.reasoning_tokens,
            u.input_includes_cached) == (12, 7, 4, 3, True)
    (item,) = [p for p in resp.parts if isinstance(p, VendorPart)]
    assert item.data["type"] == "reasoning" and item.data["encrypted_content"]


async def test_streamed_text_and_call_arguments_arrive_as_deltas(
    client: tuple[FakeOpenAIServer, ProviderClient],
) -> None:
    server, provider = client
    server.script(FakeReply(text="Let me check the weather now",
                            tool_calls=[("weather", {"city": "Paris"})], reasoning_tokens=5))
    events: list[StreamEvent] = []
    resp = await provider.complete(
        ModelRequest(model="gpt-5", messages=(Message.user("weather?"),), tools=(WEATHER,),
                     stream=True), on_event=events.append)
    assert len([e for e in events if isinstance(e, TextDelta)]) == 6
    assert len([e for e in events if isinstance(e, ToolCallDelta)]) == 3
    assert resp.text == "Let me check the weather now"
    (call,) = resp.tool_calls
    assert (call.name, json.loads(call.arguments)) == ("weather", {"city": "Paris"})
    assert resp.finish_reason == "tool_calls" and resp.usage.reasoning_tokens == 5


@pytest.fixture
def threaded() -> Iterator[FakeOpenAIServer]:
    srv = FakeOpenAIServer()
    srv.start_in_thread()
    try:
        yield srv
    finally:
        srv.stop_thread()


def test_tool_loop_sends_the_reasoning_item_back(threaded: FakeOpenAIServer) -> None:
    threaded.script(
        FakeReply(reasoning="I need the weather.", reasoning_signature="enc-secret-1",
                  tool_calls=[("weather", {"city": "Paris"})]),
        FakeReply(text="Sunny in Paris.", reasoning="The tool said sunny."),
    )

    def weather(city: str) -> str:
        """Weather in a city."""
        return f"sunny in {city}"

    env = {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": threaded.base_url + "/v1",
           "AGENTLOOM_MODEL": "o4-mini"}
    with Agent.from_env(env, tools=[weather]) as agent:
        result = agent.run_result("Weather in Paris?")
    assert result.text == "Sunny in Paris."
    first, second = (r.json for r in threaded.requests)
    assert first["store"] is False and first["include"] == ["reasoning.encrypted_content"]
    kinds = [item.get("type", "message") for item in second["input"]]
    assert kinds == ["message", "reasoning", "function_call", "function_call_output"]
    reasoning, call, output = second["input"][1:]
    assert reasoning["encrypted_content"] == "enc-secret-1"
    assert reasoning["summary"] == [{"type": "summary_text", "text": "I need the weather."}]
    assert call["call_id"] == output["call_id"] and output["output"] == "sunny in Paris"


def test_hosted_tool_items_go_back_unchanged(threaded: FakeOpenAIServer) -> None:
    """A hosted tool's call comes back as an item; the next turn sends it as it came."""
    item = {"id": "ws_1", "type": "web_search_call", "status": "completed",
            "action": {"type": "search", "query": "agentloom"}}
    part = VendorPart(provider="openai_responses", data=item)
    messages = (Message.user("search"), Message(role="assistant", parts=(part,)),
                Message.user("and?"))
    body = json.loads(get_protocol("openai").encode(
        ModelRequest(model="gpt-4.1", messages=messages,
                     vendor_tools=({"type": "web_search"},)),
        dataclasses.replace(vendor_endpoint("openai", api_key="k"), api="responses")).body)
    assert body["input"][1] == item
    assert body["tools"] == [{"type": "web_search"}]


def test_chat_completions_leave_vendor_items_out() -> None:
    part = VendorPart(provider="openai_responses", data={"type": "reasoning", "id": "rs_1"})
    messages = (Message.user("a"), Message(role="assistant", parts=(part,)),
                Message.user("b"))
    body = json.loads(get_protocol("openai").encode(
        ModelRequest(model="gpt-4o", messages=messages),
        vendor_endpoint("openai", api_key="k")).body)
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]




def test_a_streamed_reply_keeps_each_reasoning_item_before_its_call() -> None:
    from agentloom.providers._assemble import ResponseBuilder

    rs1 = {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "e1"}
    rs2 = {"id": "rs_2", "type": "reasoning", "summary": [], "encrypted_content": "e2"}
    events: list[dict[str, Any]] = []
    for index, (rs, name) in enumerate([(rs1, "a"), (rs2, "b")]):
        events += [
            {"type": "response.output_item.done", "output_index": 2 * index, "item": rs},
            {"type": "response.output_item.added", "output_index": 2 * index + 1,
             "item": {"type": "function_call", "call_id": f"c{index}", "name": name,
                      "arguments": ""}},
            {"type": "response.function_call_arguments.delta",
             "output_index": 2 * index + 1, "delta": "{}"},
        ]
    events.append({"type": "response.completed", "response": {
        "status": "completed", "model": "o3", "output": [], "usage": None}})
    body = "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode()
    request = ModelRequest(model="o3", messages=(Message.user("x"),), stream=True)
    endpoint = dataclasses.replace(vendor_endpoint("openai", api_key="k"), api="responses")
    decoder = get_protocol("openai").stream_decoder(request, endpoint)
    builder = ResponseBuilder("o3")
    for event in decoder.feed(body) + decoder.close():
        builder.add(event)
    reply = builder.build(provider="openai")
    again = json.loads(get_protocol("openai").encode(
        request.replace(messages=(Message.user("x"), reply.to_message())), endpoint).body)
    assert [i.get("id") or i.get("call_id") for i in again["input"][1:]] == [
        "rs_1", "c0", "rs_2", "c1"]
