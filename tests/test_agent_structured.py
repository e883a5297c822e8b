"""`Agent(output_schema=...)` through `agentloom.structured`, against the fake servers:
JSON mode without tools, the schema in the system prompt with tools (no JSON mode, no
Anthropic prefill), validation with re-asks, and schemas refused at construction."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai_thread import agent_env
from pydantic import BaseModel

from agentloom import Agent
from agentloom.errors import AgentLoopError, ConfigError, StructuredOutputError
from agentloom.structured import ResponseSchemaSpec
from agentloom.testing._server import FakeReply
from agentloom.testing.fake_anthropic import FakeAnthropicServer
from agentloom.testing.fake_openai import FakeOpenAIServer
from agentloom.testing.scripted import ScriptedModel


class City(BaseModel):
    """A city and its population."""

    name: str
    population: int


CITY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "population": {"type": "integer"}},
    "required": ["name", "population"],
    "additionalProperties": False,
}
OSLO = '{"name": "Oslo", "population": 700000}'


def population(city: str) -> int:
    """The population of a city."""
    return {"Oslo": 700000}.get(city, 0)


def system_texts(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "system"]


def test_pydantic_schema_without_tools_uses_native_json_mode(
        openai_server: FakeOpenAIServer) -> None:
    openai_server.script(OSLO)
    with Agent.from_env(agent_env(openai_server), output_schema=City) as agent:
        result = agent.run_result("Largest city in Norway?")
    assert result.output == City(name="Oslo", population=700000)
    body = openai_server.requests[0].json
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "City"
    assert fmt["json_schema"]["strict"] is True
    assert system_texts(body) == []
    assert result.text == OSLO


def test_json_schema_dict_reasks_with_the_validators_errors(
        openai_server: FakeOpenAIServer) -> None:
    openai_server.script('{"name": "Oslo", "population": "many"}', f"Sure: {OSLO}")
    with Agent.from_env(agent_env(openai_server), output_schema=CITY_SCHEMA, name="city") as agent:
        result = agent.run_result("Largest city in Norway?")
    assert result.output == {"name": "Oslo", "population": 700000}
    assert openai_server.requests[0].json["response_format"]["json_schema"]["name"] == "city"
    reask = openai_server.requests[1].json["messages"][-1]
    assert reask["role"] == "user" and "$.population" in reask["content"]
    assert result.summary.iterations == 2 and result.summary.status == "completed"


def test_schema_with_tools_goes_in_the_system_prompt(openai_server: FakeOpenAIServer) -> None:
    openai_server.script(FakeReply(tool_calls=[("population", {"city": "Oslo"})]), OSLO)
    with Agent.from_env(agent_env(openai_server), tools=[population], output_schema=City,
                        system_prompt="You know Norway.") as agent:
        result = agent.run_result("Largest city in Norway?")
    assert result.output == City(name="Oslo", population=700000)
    for seen in openai_server.requests:
        body = seen.json
        assert "response_format" not in body and body["tools"]
        own, instruction = system_texts(body)
        assert own == "You know Norway."
        assert "single JSON object" in instruction and '"population"' in instruction
    # The transcript keeps the conversation as written: the instruction is the request's.
    assert [m.role for m in result.transcript] == ["system", "user", "assistant", "tool",
                                                   "assistant"]
    assert result.transcript[0].text == "You know Norway."


def test_continued_conversation_does_not_repeat_the_instruction(
        openai_server: FakeOpenAIServer) -> None:
    openai_server.script(OSLO, '{"name": "Bergen", "population": 290000}')
    with Agent.from_env(agent_env(openai_server), tools=[population],
                        output_schema=City) as agent:
        first = agent.run_conversation_result([], "Largest city?")
        second = agent.run_conversation_result(first.transcript, "Second largest?")
    assert second.output == City(name="Bergen", population=290000)
    assert len(system_texts(openai_server.requests[1].json)) == 1


def test_anthropic_with_tools_gets_no_prefill() -> None:
    server = FakeAnthropicServer()
    server.start_in_thread()
    try:
        env = {"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": server.base_url,
               "AGENTLOOM_MODEL": "claude-haiku-4-5"}
        server.script(FakeReply(tool_calls=[("population", {"city": "Oslo"})]), OSLO)
        with Agent.from_env(env, tools=[population], output_schema=City) as agent:
            assert agent.run_result("Largest city?").output.population == 700000
        server.script(OSLO)
        with Agent.from_env(env, output_schema=City) as agent:
            assert agent.run_result("Largest city?").output.name == "Oslo"
    finally:
        server.stop_thread()
    with_tools, no_tools = server.requests[0].json, server.requests[2].json
    assert with_tools["messages"][-1]["role"] == "user"  # no assistant `{` turn
    assert "single JSON object" in json.dumps(with_tools["system"])
    # Without tools, Anthropic's native output format (claude-haiku-4-5 has it): no prefill.
    assert no_tools["output_config"]["format"]["schema"]["properties"]["name"]
    assert no_tools["messages"][-1]["role"] == "user"


def test_exhausted_reasks_raise_with_the_summary() -> None:
    model = ScriptedModel(["not json", '{"name": 1}'])
    with Agent(model, output_schema=City, max_reasks=1) as agent, \
            pytest.raises(AgentLoopError) as info:
        agent.run_result("?")
    assert isinstance(info.value.__cause__, StructuredOutputError)
    assert info.value.summary is not None and info.value.summary.iterations == 2


def test_a_spec_is_taken_as_is() -> None:
    spec = ResponseSchemaSpec.from_json_schema(CITY_SCHEMA, name="place", strict=False)
    model = ScriptedModel([OSLO])
    with Agent(model, output_schema=spec) as agent:
        assert agent.output_schema is spec
        assert agent.run_result("?").output["name"] == "Oslo"
    fmt = model.requests[0].response_format
    assert fmt is not None and fmt.name == "place" and fmt.strict is False


def test_bad_schemas_are_refused_at_construction() -> None:
    with pytest.raises(ConfigError, match="output_schema"):
        Agent(ScriptedModel([]), output_schema=42)
    open_schema = {"type": "object", "properties": {"a": {"type": "string"}},
                   "additionalProperties": True}
    with pytest.raises(ConfigError):
        Agent(ScriptedModel([]), output_schema=open_schema)
    with pytest.raises(ConfigError):  # refused with tools too: one rule everywhere
        Agent(ScriptedModel([]), output_schema=open_schema, tools=[population])
    with pytest.raises(ConfigError, match="max_reasks"):
        Agent(ScriptedModel([]), output_schema=City, max_reasks=-1)
