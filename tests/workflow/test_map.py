"""The `map` step: one run of a body per item, bounded concurrency, order, failures."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

import pytest
from wf_helpers import Factory, echo_model

from agentloom.messages import ModelResponse, Usage
from agentloom.testing.scripted import make_response
from agentloom.workflow import (
    RunStatus,
    StepStatus,
    WorkflowProblems,
    arun_workflow,
    load_workflow_text,
)

ONE_STEP = """\
name: m
state: {items: [a, b, c]}
steps:
  - id: each
    type: map
    over: state.items
    concurrency: 2
    step: {id: shout, type: llm_call, prompt: "{state.index}:{state.item}", output: loud}
    output: results
"""


async def test_results_in_list_order_with_status_output_error() -> None:
    wf = load_workflow_text(ONE_STEP)
    result = await arun_workflow(wf, clients=Factory(echo_model()))
    assert result.status is RunStatus.SUCCESS, result.error
    assert result.state["results"] == [
        {"status": "success", "output": f"echo: {i}:{x}", "error": None}
        for i, x in enumerate("abc")
    ]
    assert "loud" not in result.state  # items run on copies


class _Gauge:
    """A model that records how many calls overlap; later items answer first."""

    provider = "gauge"

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0

    async def complete(self, request: Any, *, on_event: Any = None,
                       on_attempt: Any = None) -> ModelResponse:
        self.now += 1
        self.peak = max(self.peak, self.now)
        text = request.messages[-1].text
        # items with a higher index finish first, so completion order != list order
        for _ in range(10 - int(text.split(":")[0])):
            await asyncio.sleep(0)
        self.now -= 1
        return make_response(text.upper(), usage=Usage(
            input_tokens=1, output_tokens=1, cost_usd=Decimal("0.01")))


async def test_concurrency_is_bounded_and_order_kept() -> None:
    wf = load_workflow_text(ONE_STEP.replace("[a, b, c]", "[a, b, c, d, e, f, g]"))
    gauge = _Gauge()
    result = await arun_workflow(wf, clients=Factory(gauge))
    assert result.status is RunStatus.SUCCESS, result.error
    assert gauge.peak == 2
    assert [e["output"] for e in result.state["results"]] == [
        f"{i}:{x}".upper() for i, x in enumerate("abcdefg")]
    usage = result.steps["each"].usage
    assert usage is not None and usage.input_tokens == 7
    assert usage.cost_usd == Decimal("0.07")


BLOCK = """\
name: m
state: {orders: [{id: 1, total: 5}, {id: 2, total: 50}, {id: 3, total: 7}]}
steps:
  - id: each
    type: map
    over: orders
    as: order
    on_item_error: %s
    steps:
      - {id: check, type: llm_call, prompt: "order {state.order.id}", output: check}
      - {id: verdict, type: llm_call, prompt: "verdict on {state.check}",
         depends_on: [check], retry: {max_retries: 0}}
    output: verdicts
  - {id: after, type: llm_call, prompt: "after", depends_on: [each]}
"""


def _fail_on_order_2(request: Any) -> str:
    text = request.messages[-1].text
    if "order 2" in text:
        raise ValueError("order 2 is cursed")
    return "ok " + text


async def test_one_item_failing_keeps_the_others_with_continue() -> None:
    wf = load_workflow_text(BLOCK % "continue")
    result = await arun_workflow(wf, clients=Factory(echo_model(_fail_on_order_2)))
    assert result.status is RunStatus.SUCCESS, result.error
    entries = result.state["verdicts"]
    assert [e["status"] for e in entries] == ["success", "failed", "success"]
    assert entries[0]["output"] == "ok verdict on ok order 1"
    assert "check" in entries[1]["error"] and "order 2 is cursed" in entries[1]["error"]
    assert entries[1]["output"] is None
    assert result.steps["after"].status is StepStatus.SUCCESS


async def test_item_failure_fails_the_step_by_default_after_every_item_ran() -> None:
    wf = load_workflow_text(BLOCK % "fail")
    calls: list[str] = []

    def answer(request: Any) -> str:
        calls.append(request.messages[-1].text)
        return _fail_on_order_2(request)

    result = await arun_workflow(wf, clients=Factory(echo_model(answer)))
    assert result.status is RunStatus.FAILED
    err = result.steps["each"].error or ""
    assert "1 of 3 items failed" in err and "item 1" in err and "cursed" in err
    assert "verdict on ok order 3" in calls  # the third item still ran
    assert result.steps["after"].status is StepStatus.SKIPPED


@pytest.mark.parametrize(("value", "kind"), [("'abc'", "text"), ("{a: 1}", "a mapping"),
                                             ("3", "a number"), ("null", "null")])
async def test_over_a_non_list_is_a_clear_error(value: str, kind: str) -> None:
    wf = load_workflow_text(ONE_STEP.replace("[a, b, c]", value))
    result = await arun_workflow(wf, clients=Factory(echo_model()))
    assert result.status is RunStatus.FAILED
    assert result.steps["each"].error == (
        f"map step 'each': state.items is {kind}, not a list")


async def test_over_a_missing_key_is_a_clear_error() -> None:
    wf = load_workflow_text(ONE_STEP.replace("over: state.items", "over: state.nothing"))
    result = await arun_workflow(wf, clients=Factory(echo_model()))
    assert "state.nothing is not set" in (result.steps["each"].error or "")


async def test_empty_list_gives_empty_results() -> None:
    wf = load_workflow_text(ONE_STEP.replace("[a, b, c]", "[]"))
    result = await arun_workflow(wf, clients=Factory(echo_model()))
    assert result.status is RunStatus.SUCCESS
    assert result.state["results"] == []


def test_body_problems_are_load_errors() -> None:
    with pytest.raises(WorkflowProblems) as info:
        load_workflow_text(ONE_STEP.replace("type: llm_call", "type: llm_cal"))
    assert "map body has problems" in str(info.value)


def test_needs_exactly_one_body() -> None:
    with pytest.raises(WorkflowProblems) as info:
        load_workflow_text("name: m\nsteps:\n  - {id: e, type: map, over: state.x}\n")
    assert "exactly one of step, steps" in str(info.value)


async def test_map_inside_a_subworkflow_and_router_in_the_body() -> None:
    wf = load_workflow_text("""\
name: m
state: {nums: [1, 20, 3]}
steps:
  - id: sub
    type: subworkflow
    return_keys: [labels]
    workflow_inline:
      name: inner
      steps:
        - id: each
          type: map
          over: nums
          as: n
          steps:
            - id: pick
              type: router
              conditions: [{expression: "state.n > 10", target: big}]
              default: small
            - {id: big, type: llm_call, prompt: "big {state.n}", depends_on: [pick]}
            - {id: small, type: llm_call, prompt: "small {state.n}", depends_on: [pick]}
            - {id: label, type: llm_call, prompt: "label {state.n}", depends_on: [big, small]}
          output: labels
    output: out
""")
    result = await arun_workflow(wf, clients=Factory(echo_model()))
    assert result.status is RunStatus.SUCCESS, result.error
    labels = result.state["out"]["labels"]
    assert [e["output"] for e in labels] == ["echo: label 1", "echo: label 20", "echo: label 3"]


def test_json_schema_knows_map_subworkflow_and_on_error() -> None:
    import jsonschema
    import yaml

    from agentloom.cli.schema import workflow_json_schema

    validator = jsonschema.Draft202012Validator(workflow_json_schema())
    data = yaml.safe_load(BLOCK % "continue")
    data["steps"].append({"id": "sub", "type": "subworkflow", "workflow_path": "x.yaml",
                          "on_error": [{"id": "h", "type": "llm_call", "prompt": "p"}]})
    assert list(validator.iter_errors(data)) == []
    data["steps"][0]["concurency"] = 2
    assert list(validator.iter_errors(data))


async def test_over_accepts_a_template_reference_too() -> None:
    wf = load_workflow_text(ONE_STEP.replace("over: state.items", 'over: "{state.items}"'))
    result = await arun_workflow(wf, clients=Factory(echo_model()))
    assert [e["output"] for e in result.state["results"]] == ["echo: 0:a", "echo: 1:b",
                                                              "echo: 2:c"]


async def test_a_list_over_max_items_fails_the_step_before_any_item_runs() -> None:
    text = ONE_STEP.replace("state: {items: [a, b, c]}", "state: {items: [a, b, c, d]}"
                            ).replace("concurrency: 2", "concurrency: 2\n    max_items: 3")
    model = echo_model()
    result = await arun_workflow(load_workflow_text(text), clients=Factory(model))
    assert result.steps["each"].status is StepStatus.FAILED
    assert result.steps["each"].error == (
        "map step 'each': state.items has 4 items, more than max_items (3); raise "
        "max_items or split the list")
    assert result.steps["each"].usage is None  # no item ran, nothing was spent


async def test_a_long_list_runs_on_as_many_tasks_as_its_concurrency() -> None:
    from agentloom.tools import ToolRegistry, tool

    alive: list[int] = []

    @tool
    async def probe(n: int) -> int:
        """Count the tasks alive."""
        alive.append(len(asyncio.all_tasks()))
        return n

    text = """\
name: m
state: {items: [ITEMS]}
steps:
  - id: each
    type: map
    over: state.items
    concurrency: 3
    step: {id: p, type: tool, tool_name: probe, tool_args: {n: state.item}, output: n}
    output: results
""".replace("ITEMS", ", ".join(map(str, range(500))))
    result = await arun_workflow(load_workflow_text(text), clients=Factory(echo_model()),
                                 tools=ToolRegistry([probe]))
    assert result.status is RunStatus.SUCCESS, result.error
    assert [e["output"] for e in result.state["results"]] == [str(i) for i in range(500)]
    # The run's own tasks and three workers, never a task per item (500 before).
    assert len(alive) == 500 and max(alive) - min(alive) <= 3 and max(alive) < 20
