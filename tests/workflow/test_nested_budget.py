"""A run's caps (`budget_usd`, `max_tokens_per_run`) cover the runs nested in it: a
`map`'s items and a subworkflow's steps reserve from the top-level run's budget before
each call, so a fan-out can't spend past the cap the file sets. A subworkflow file's own
cap holds as well, within its parent's, which counts what the child spent.

Real HTTP to a loopback OpenAI-compatible server; every reply reports 12 input and 7
output tokens (19 in all), and each prompt is long enough that its estimate covers its
12 input tokens, so a call's worst case (estimate + max_tokens 10) is never short."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from decimal import Decimal

import pytest

from agentloom.routing.runtime import Runtime
from agentloom.testing.fake_openai import FakeOpenAIServer
from agentloom.workflow import RunResult, StepStatus, arun_workflow, load_workflow

PROMPT = "Tell me one short fact about item number {state.item}, in a few words only."


@dataclass
class Served:
    server: FakeOpenAIServer
    runtime: Runtime

    async def run(self, text: str) -> RunResult:
        return await arun_workflow(load_workflow(text), clients=self.runtime)


@pytest.fixture
async def served() -> AsyncIterator[Served]:
    async with FakeOpenAIServer() as server, Runtime() as runtime:
        runtime.add_provider("primary", {"type": "openai", "api_key": "k",
                                         "base_url": server.openai_base_url})
        yield Served(server, runtime)


def _map(cap: str, items: int = 20) -> str:
    return f"""\
name: fan
config:
  provider: primary
  model: gpt-4o-mini
{cap}
state: {{items: {list(range(items))}}}
steps:
  - id: each
    type: map
    over: state.items
    concurrency: 1
    step: {{id: one, type: llm_call, max_tokens: 10, prompt: "{PROMPT}"}}
"""


async def test_a_maps_items_stop_at_the_runs_token_cap(served: Served) -> None:
    result = await served.run(_map("  max_tokens_per_run: 100"))
    assert result.status.value == "budget_exceeded"
    # Each call reserves ~29 tokens and spends 19: four fit under 100, the fifth doesn't.
    assert len(served.server.requests) == 4
    assert result.budget is not None and result.budget["spent_tokens"] == 76
    assert "token budget 100 would be crossed" in (result.error or "")
    each = result.steps["each"]
    assert each.status is StepStatus.FAILED and "16 of 20 items failed" in (each.error or "")


async def test_a_maps_items_stop_at_the_runs_cost_cap(served: Served) -> None:
    # $1,000 per 1M tokens: a token is a tenth of a cent, so the cap is 100 tokens' worth.
    cap = ("  budget_usd: 0.1\n"
           "  prices: {primary: {gpt-4o-mini: {input: 1000, output: 1000}}}")
    result = await served.run(_map(cap))
    assert result.status.value == "budget_exceeded"
    assert len(served.server.requests) == 4
    assert result.cost_usd is not None and result.cost_usd <= Decimal("0.1")
    assert "cost budget $0.1 would be crossed" in (result.error or "")


async def test_a_maps_items_that_fit_all_run(served: Served) -> None:
    result = await served.run(_map("  max_tokens_per_run: 1000", items=5))
    assert result.ok, result.error
    assert len(served.server.requests) == 5
    assert result.budget is not None and result.budget["spent_tokens"] == 95


def _chain(n: int, prefix: str) -> str:
    return "\n".join(
        f"        - {{id: {prefix}{i}, type: llm_call, max_tokens: 10, prompt: \"{PROMPT}\""
        + (f", depends_on: [{prefix}{i - 1}]" if i else "") + "}"
        for i in range(n))


def _parent(parent_cap: int, child_cap: str, calls: int, after: str = "") -> str:
    return f"""\
name: parent
config: {{provider: primary, model: gpt-4o-mini, max_tokens_per_run: {parent_cap}}}
state: {{item: 1}}
steps:
  - id: sub
    type: subworkflow
    workflow_inline:
      name: child
      config: {{provider: primary, model: gpt-4o-mini{child_cap}}}
      steps:
{_chain(calls, "c")}
{after}"""


async def test_a_subworkflows_steps_count_against_the_parents_cap(served: Served) -> None:
    result = await served.run(_parent(100, "", 8))
    assert result.status.value == "budget_exceeded"
    assert len(served.server.requests) == 4
    assert result.budget is not None and result.budget["spent_tokens"] == 76


async def test_a_subworkflows_own_cap_holds_inside_the_parents(served: Served) -> None:
    alone = f'  - {{id: alone, type: llm_call, max_tokens: 10, prompt: "{PROMPT}"}}\n'
    result = await served.run(_parent(1000, ", max_tokens_per_run: 40", 3, alone))
    # The child's cap let one call through; the parent's cap was never at risk, so the
    # parent's other step ran, and the parent's budget counts the child's call too.
    assert result.status.value == "failed"
    assert "ended budget_exceeded" in (result.steps["sub"].error or "")
    assert result.steps["alone"].status is StepStatus.SUCCESS
    assert len(served.server.requests) == 2
    assert result.budget is not None and result.budget["spent_tokens"] == 38


async def test_a_map_item_on_a_model_without_a_price_ends_the_run_budget_exceeded(
        served: Served) -> None:
    # As a top-level step would: the cap can't be checked, so nothing is sent.
    result = await served.run(_map("  budget_usd: 1", items=3).replace(
        "model: gpt-4o-mini", "model: my-finetune"))
    assert result.status.value == "budget_exceeded"
    assert "has no price" in (result.error or "")
    assert served.server.requests == []
