"""`config.max_steps` bounds the steps one run starts, its nested runs' included: nested
maps multiply (ten rows of ten columns are 111 steps), and the list a map runs over may
be a model's answer. Past the bound no step starts and the run ends budget_exceeded,
naming the setting. Real HTTP to a loopback OpenAI-compatible server."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agentloom.errors import WorkflowError
from agentloom.routing.runtime import Runtime
from agentloom.testing.fake_openai import FakeOpenAIServer
from agentloom.workflow import RunResult, arun_workflow, load_workflow

GRID = """\
name: grid
config: {{provider: primary, model: gpt-4o-mini{limit}}}
state: {{rows: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], cols: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]}}
steps:
  - id: outer
    type: map
    over: state.rows
    as: row
    concurrency: 1
    step:
      id: inner
      type: map
      over: state.cols
      as: col
      concurrency: 1
      step: {{id: cell, type: llm_call, prompt: "cell {{state.row}} {{state.col}}"}}
"""


@pytest.fixture
async def server() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as fake:
        yield fake


async def _run(server: FakeOpenAIServer, limit: str) -> RunResult:
    async with Runtime() as runtime:
        runtime.add_provider("primary", {"type": "openai", "api_key": "k",
                                         "base_url": server.openai_base_url})
        return await arun_workflow(load_workflow(GRID.format(limit=limit)), clients=runtime)


async def test_nested_maps_stop_at_the_runs_step_bound(server: FakeOpenAIServer) -> None:
    result = await _run(server, ", max_steps: 50")
    assert result.status.value == "budget_exceeded"
    assert "config.max_steps" in (result.error or "")
    # `outer`, then each row's `inner` and its ten cells, one at a time: 50 steps started,
    # 44 of them cells (rows 0 to 3 whole, 45 steps; row 4's `inner` and four cells).
    assert len(server.requests) == 44


async def test_the_default_bound_lets_the_grid_run(server: FakeOpenAIServer) -> None:
    result = await _run(server, "")
    assert result.ok, result.error
    assert len(server.requests) == 100


def test_a_bound_below_one_is_a_load_error_at_its_line() -> None:
    with pytest.raises(WorkflowError) as caught:
        load_workflow(GRID.format(limit=", max_steps: 0"))
    assert "max_steps" in str(caught.value) and ":2" in str(caught.value)
