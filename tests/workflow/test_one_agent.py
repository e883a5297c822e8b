"""A YAML agent and a Python `Agent` are one object: an `agent` step runs an `Agent` built
from the definition, and its request is the one the Python face builds for the same
messages (`build_request`, the one request builder)."""

from __future__ import annotations

from typing import Any

from wf_helpers import Factory

from agentloom.loop.agent import Agent, build_request
from agentloom.messages import Message
from agentloom.testing.scripted import FunctionModel
from agentloom.workflow import agent_from_workflow, arun_workflow, load_workflow_text

FLOW = """
name: one-agent
agents:
  writer:
    model: writer-model
    instructions: "You write about {state.topic}."
    settings: {temperature: 0.2, max_tokens: 64}
steps:
  - {id: write, type: agent, agent: writer, prompt: "Write about {state.topic}."}
"""


async def test_the_agent_steps_request_is_the_python_agents() -> None:
    seen: list[Any] = []

    def answer(request: Any) -> str:
        seen.append(request)
        return "done"

    model = FunctionModel(answer)
    wf = load_workflow_text(FLOW)
    result = await arun_workflow(wf, clients=Factory(model), state={"topic": "owls"})
    assert result.ok and result.steps["write"].output == "done"
    python_agent = agent_from_workflow(wf, "writer", model)
    assert isinstance(python_agent, Agent)
    messages = (Message.system("You write about owls."), Message.user("Write about owls."))
    assert seen[0] == python_agent.request(messages)


def test_build_request_puts_the_schema_plan_on_last() -> None:
    agent = Agent(FunctionModel(lambda r: "{}"), model="m",
                  output_schema={"type": "object", "properties": {}})
    plan = agent.output_plan
    assert plan is not None
    messages = (Message.user("hi"),)
    assert agent.request(messages) == build_request(model="m", messages=messages,
                                                    output=plan)
    assert agent.request(messages).response_format is not None
