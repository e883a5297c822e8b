"""A block of a file's steps (a `map` body, an `on_error` block) is part of that file: its
steps ask for the file's `config.model` and `config.provider` unless they say otherwise,
and may name the file's agents and profiles. Overriding the model after load
(`Workflow.with_overrides`, as `batch --model` does) reaches the block too.

Before, a block was loaded as a file of its own: its steps asked for the default model,
and an agent or profile of the file was "unknown" in it. Real HTTP to a loopback
OpenAI-compatible server, which records the model each request names."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agentloom.errors import WorkflowError
from agentloom.routing.runtime import Runtime
from agentloom.testing._server import FakeError, FakeReply
from agentloom.testing.fake_openai import FakeOpenAIServer
from agentloom.workflow import RunResult, arun_workflow, load_workflow
from agentloom.workflow.load.workflow import Workflow

FILE = """\
name: blocks
providers:
  primary: {type: openai, api_key: k, base_url: BASE}
config: {provider: primary, model: gpt-4.1-nano, max_retries: 0}
agents:
  writer: {model: gpt-4.1-mini, instructions: "You write."}
profiles:
  careful: {model: gpt-4.1}
state: {items: [one]}
steps:
  - id: each
    type: map
    over: state.items
    steps:
      - {id: plain, type: llm_call, prompt: "plain {state.item}"}
      - {id: agented, type: agent, agent: writer, prompt: "agent {state.item}",
         depends_on: [plain]}
      - {id: profiled, type: llm_call, profile: careful, prompt: "profile {state.item}",
         depends_on: [agented]}
  - id: flaky
    type: llm_call
    prompt: "BROKEN"
    on_error:
      - {id: rescue, type: llm_call, prompt: "rescue {state.error.step}", output: saved}
"""


def _answer(body: dict[str, object]) -> FakeReply | FakeError:
    messages = body["messages"]
    assert isinstance(messages, list)
    if messages[-1]["content"] == "BROKEN":
        return FakeError(status=400, body="no")
    return FakeReply(text="ok")


@pytest.fixture
async def server() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer(responder=_answer) as fake:
        yield fake


async def _run(wf: Workflow) -> RunResult:
    async with Runtime() as runtime:
        return await arun_workflow(wf, clients=runtime)


def _models(server: FakeOpenAIServer) -> dict[str, str]:
    return {r.json["messages"][-1]["content"]: r.json["model"] for r in server.requests}


def _load(server: FakeOpenAIServer) -> Workflow:
    return load_workflow(FILE.replace("BASE", server.openai_base_url))


async def test_a_blocks_steps_ask_for_the_files_model_agents_and_profiles(
        server: FakeOpenAIServer) -> None:
    result = await _run(_load(server))
    assert result.ok, result.error
    assert _models(server) == {
        "plain one": "gpt-4.1-nano",      # config.model, not the default model
        "agent one": "gpt-4.1-mini",      # the file's agent
        "profile one": "gpt-4.1",         # the file's profile
        "BROKEN": "gpt-4.1-nano",
        "rescue flaky": "gpt-4.1-nano",   # the on_error block
    }
    assert result.state["saved"] == "ok"


async def test_a_model_set_after_load_reaches_the_blocks(server: FakeOpenAIServer) -> None:
    result = await _run(_load(server).with_overrides(model="gpt-4o"))
    assert result.ok, result.error
    models = _models(server)
    assert models["plain one"] == models["rescue flaky"] == models["BROKEN"] == "gpt-4o"
    # A step's own choice still wins over the override, in a block as at the top.
    assert models["agent one"] == "gpt-4.1-mini" and models["profile one"] == "gpt-4.1"


def test_a_block_naming_an_agent_the_file_lacks_is_still_a_load_error() -> None:
    text = FILE.replace("agent: writer", "agent: ghost")
    with pytest.raises(WorkflowError) as caught:
        load_workflow(text)
    assert "unknown agent 'ghost'" in str(caught.value)


async def test_streaming_set_after_load_reaches_the_blocks(server: FakeOpenAIServer) -> None:
    # `agentloom run --stream` sets config.stream this way: a map's items stream too.
    result = await _run(_load(server).with_overrides(stream=True))
    assert result.ok, result.error
    streamed = {r.json["messages"][-1]["content"]: bool(r.json.get("stream"))
                for r in server.requests}
    assert streamed["plain one"] and streamed["profile one"] and streamed["rescue flaky"]
