"""Agents defined once (`agents:`) and run as steps, end to end against every provider's
fake server: two agents with their own tools and instructions take turns in one
conversation, the second ending with a schema-checked answer (re-asked once); the YAML
agent and the Python `Agent` are one thing; and the load-time refusals."""

from __future__ import annotations

import json
from typing import Any

import pytest
from servers_for_steps import ALL, EXAMPLES, VENDORS, bodies, run_example, served, system_of

from agentloom.loop.agent import Agent
from agentloom.testing._server import FakeReply
from agentloom.tools import ToolRegistry
from agentloom.workflow import load_workflow_text
from agentloom.workflow.load.problems import WorkflowProblems
from agentloom.workflow.schema.agents import AgentDef
from agentloom.workflow.steps.agent import AgentSpec

TOOL_LOG: list[tuple[str, Any]] = []


def lookup_date(event: str) -> str:
    """The date of an event.

    Args:
        event: what happens.
    """
    TOOL_LOG.append(("lookup_date", event))
    return "Friday 5 December"


def word_count(text: str) -> int:
    """How many words a text has.

    Args:
        text: the text.
    """
    TOOL_LOG.append(("word_count", text))
    return len(text.split())


def _review_flow(vendor: str) -> str:
    text = (EXAMPLES / "agents_review.yaml").read_text()
    return text.replace("gpt-4o-mini", VENDORS[vendor].model)


def _tool_names(vendor: str, body: dict[str, Any]) -> list[str]:
    if vendor == "gemini":
        return [f["name"] for t in body.get("tools", []) for f in t["functionDeclarations"]]
    if vendor == "anthropic":
        return [t["name"] for t in body.get("tools", [])]
    return [t["function"]["name"] for t in body.get("tools", [])]


@pytest.mark.parametrize("vendor", ALL)
async def test_two_agents_take_turns_in_one_conversation(vendor: str) -> None:
    TOOL_LOG.clear()
    improved = "Our release ships on Friday 5 December."
    async with served(vendor) as (server, runtime):
        server.script(
            FakeReply(tool_calls=[("lookup_date", {"event": "release"})]),
            FakeReply(text=improved),
            FakeReply(tool_calls=[("word_count", {"text": improved})]),
            FakeReply(text='{"approved": true}'),  # no reason: re-asked
            FakeReply(text='Verdict: {"approved": true, "reason": "Clear and dated."}'),
            FakeReply(text="We ship Friday!"),
        )
        result = await run_example(vendor, server, runtime, _review_flow(vendor),
                                   tools=ToolRegistry([lookup_date, word_count]))
        sent = bodies(server)
    assert result.status.value == "success", result.error
    assert [("lookup_date", "release"), ("word_count", improved)] == TOOL_LOG
    assert result.state["improved"] == improved
    assert result.state["verdict"] == {"approved": True, "reason": "Clear and dated."}
    assert result.steps["review"].attempts == 1 and result.steps["review"].iterations == 3
    # Only final texts are stored, each under its agent's name; tool turns and the
    # re-ask are not.
    stored = result.state["review"]["messages"]
    assert [(m["role"], m.get("name")) for m in stored] == [
        ("user", None), ("assistant", "writer"), ("assistant", "reviewer")]
    assert stored[2]["content"].startswith("Verdict: {")
    write_1, write_2, review_1, _, review_3, announce = sent
    # Each agent has its own tools and instructions.
    assert _tool_names(vendor, write_1) == ["lookup_date"]
    assert _tool_names(vendor, review_1) == ["word_count"]
    assert system_of(vendor, write_1).startswith("You improve drafts.")
    reviewer_system = system_of(vendor, review_1)
    assert reviewer_system.startswith("You review the writer's draft")
    assert '"approved"' in reviewer_system and "improve drafts" not in reviewer_system
    # The writer's turn reaches the reviewer as something said to it, by name.
    said = json.dumps(review_1)
    assert ('"name": "writer"' in said) if vendor == "openai" else ("[writer] " in said)
    assert "did not match the required JSON shape" in json.dumps(review_3)
    # Agent turns don't stream, and the tool loop results went back to the model.
    assert all(not b.get("stream") for b in sent)
    assert "Friday 5 December" in json.dumps(write_2)
    assert "Approved: true. Reason: Clear and dated." in json.dumps(announce)


async def test_an_agent_without_tools_uses_the_native_schema() -> None:
    text = """\
name: n
agents:
  judge:
    instructions: "Judge."
    output_schema:
      type: json_schema
      schema: {type: object, properties: {ok: {type: boolean}}, required: [ok]}
    settings: {temperature: 0.1, max_tokens: 50}
config: {stream: true}
steps:
  - {id: j, type: agent, agent: judge, prompt: "Is 2 even?", output: o}
"""
    async with served("openai") as (server, runtime):
        server.script(FakeReply(text='{"ok": true}'))
        result = await run_example("openai", server, runtime, text)
        body = bodies(server)[0]
    assert result.state["o"] == {"ok": True}
    assert body["response_format"]["json_schema"]["name"] == "judge"
    assert body["temperature"] == 0.1 and not body.get("stream")
    assert body["messages"][0] == {"role": "system", "content": "Judge."}


async def test_a_yaml_agent_and_a_python_agent_are_the_same_thing() -> None:
    wf = load_workflow_text(_review_flow("openai"))
    definition = wf.definition.agents["reviewer"]
    spec = AgentSpec.from_definition("reviewer", definition)
    assert spec.tools == ("word_count",) and spec.output_schema is not None
    # Python -> YAML -> Python gives the same spec.
    again = AgentSpec.from_definition("reviewer", AgentDef.model_validate(spec.to_definition()))
    assert again == spec
    async with served("openai") as (server, runtime):
        server.script(FakeReply(text='{"approved": false, "reason": "Too short."}'))
        agent = spec.to_agent(runtime.client(model=spec.model), tools=[word_count])
        assert isinstance(agent, Agent) and agent.system_prompt == spec.instructions
        assert agent.name == "reviewer" and agent.max_iterations == 5
        result = await agent.arun_result("Review: ship Friday.")
        body = bodies(server)[0]
    assert result.output == {"approved": False, "reason": "Too short."}
    assert body["messages"][0]["content"].startswith("You review the writer's draft")
    assert [t["function"]["name"] for t in body["tools"]] == ["word_count"]
    back = AgentSpec.from_agent(agent)
    assert (back.name, back.model, back.instructions, back.tools) == (
        spec.name, spec.model, spec.instructions, spec.tools)
    assert back.output_schema is not None and back.output_schema.schema == \
        spec.output_schema.schema


def _problems(text: str) -> list[Any]:
    with pytest.raises(WorkflowProblems) as info:
        load_workflow_text(text, filename="a.yaml")
    return list(info.value.errors)


AGENTS = """\
name: a
agents:
  reviewer:
    model: claude-haiku-4-5
    instructions: "Review."
EXTRA
steps:
  - id: r
    type: agent
    agent: AGENT
    prompt: p
"""


@pytest.mark.parametrize(("extra", "agent", "message", "line"), [
    ("    thinking: {enabled: true, budget_tokens: 2000}", "reviewer",
     "agents don't take a thinking block", 6),
    ("", "reviwer", "unknown agent 'reviwer'; did you mean 'reviewer'?", 9),
    ("    output_schema: {type: pydantic, model: no.such.Model}", "reviewer",
     "could not be imported", 6),
    ("    output_schema: {type: json_object, mode: tool}\n    tools: [x]", "reviewer",
     "mode tool", 3),
])
def test_agent_problems_are_load_errors_with_a_line(extra: str, agent: str, message: str,
                                                    line: int) -> None:
    errors = _problems(AGENTS.replace("EXTRA\n", extra + "\n" if extra else "")
                       .replace("AGENT", agent))
    assert any(message in e.message and e.line == line for e in errors), [
        (e.line, e.message) for e in errors]


def test_an_agent_step_takes_no_stream_and_an_agent_name_is_a_speaker_name() -> None:
    errors = _problems(AGENTS.replace("EXTRA\n", "").replace("AGENT", "reviewer")
                       + "    stream: true\n")
    assert any("stream" in e.message for e in errors)
    errors = _problems(AGENTS.replace("EXTRA\n", "").replace("AGENT", "reviewer")
                       .replace("  reviewer:", "  'the reviewer':"))
    assert any("speaker name" in e.message and e.line == 3 for e in errors), [
        (e.line, e.message) for e in errors]


async def test_agent_from_workflow_runs_the_yaml_agent_through_the_python_face() -> None:
    from agentloom.workflow import agent_from_workflow

    wf = load_workflow_text(_review_flow("anthropic"))
    async with served("anthropic") as (server, runtime):
        server.script(FakeReply(text="Friday it is."))
        writer = agent_from_workflow(wf, "writer", runtime.client(model="claude-haiku-4-5"),
                                     tools=[lookup_date])
        assert writer.temperature == 0.3 and writer.max_iterations == 4
        text = await writer.arun("Improve: ship Friday.")
        body = bodies(server)[0]
    assert text == "Friday it is."
    assert system_of("anthropic", body).startswith("You improve drafts.")
    with pytest.raises(Exception, match="no agent 'editor'"):
        agent_from_workflow(wf, "editor", runtime)


async def test_an_agent_out_of_tool_iterations_has_no_answer_to_validate() -> None:
    text = _review_flow("openai").replace("limits: { max_tool_iterations: 4 }", "")
    text = text.replace("    output_schema:", "    limits: {max_tool_iterations: 1}\n"
                        "    output_schema:")
    async with served("openai") as (server, runtime):
        server.script(FakeReply(text="Better draft."),
                      FakeReply(tool_calls=[("word_count", {"text": "x"})]))
        result = await run_example("openai", server, runtime, text,
                                   tools=ToolRegistry([lookup_date, word_count]))
    review = result.steps["review"]
    assert review.error_type == "StructuredOutputError" and review.attempts == 1
    assert "max_tool_iterations (1)" in (review.error or "")
    assert [m.get("name") for m in result.state["review"]["messages"]] == [None, "writer"]


async def test_agent_from_workflow_takes_settings_that_win_over_the_file() -> None:
    from agentloom.workflow import agent_from_workflow

    wf = load_workflow_text(_review_flow("openai"))
    async with served("openai") as (server, runtime):
        server.script(FakeReply(text='{"approved": true, "reason": "Fine."}'))
        agent = agent_from_workflow(wf, "reviewer", runtime.client(model="gpt-4o-mini"),
                                    tools=[word_count], model="gpt-4o-mini", temperature=0.5)
        assert agent.model == "gpt-4o-mini" and agent.temperature == 0.5
        result = await agent.arun_result("Review: ship Friday.")
    assert result.output == {"approved": True, "reason": "Fine."}
    assert bodies(server)[0]["model"] == "gpt-4o-mini"
    assert bodies(server)[0]["temperature"] == 0.5
