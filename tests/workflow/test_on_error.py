"""Error handlers (`on_error`), `config.on_step_failure` and `strict_outputs`."""

from __future__ import annotations

from typing import Any

import pytest
from wf_helpers import Factory, FakeClock, echo_model

from agentloom.errors import ProviderError
from agentloom.workflow import (
    RunStatus,
    StepStatus,
    WorkflowProblems,
    arun_workflow,
    load_workflow_text,
)

HANDLED = """\
name: h
config: {on_step_failure: %s}
steps:
  - id: fetch
    type: llm_call
    prompt: "fetch"
    output: data
    retry: {max_retries: 2, jitter: false}
    on_error:
      - id: fallback
        type: llm_call
        prompt: "fallback after {state.error.step}: {state.error.message}"
        output: data
  - id: use
    type: llm_call
    depends_on: [fetch]
    prompt: "use {state.data}"
"""


def _fetch_fails(request: Any) -> str:
    text = request.messages[-1].text
    if text == "fetch":
        raise ProviderError("upstream 503", status=503, provider="p", retryable=True)
    return "got " + text


async def test_handler_runs_after_retries_sets_state_and_marks_handled(
        fake_clock: FakeClock) -> None:
    wf = load_workflow_text(HANDLED % "skip_downstream")
    calls: list[str] = []

    def answer(request: Any) -> str:
        calls.append(request.messages[-1].text)
        return _fetch_fails(request)

    result = await arun_workflow(wf, clients=Factory(echo_model(answer)), clock=fake_clock)
    assert result.status is RunStatus.SUCCESS, result.error
    fetch = result.steps["fetch"]
    assert fetch.status is StepStatus.FAILED and fetch.attempts == 3
    assert fetch.reason == "failure handled by on_error"
    assert calls.count("fetch") == 3  # the handler ran once, after the last retry
    assert result.state["data"].startswith("got fallback after fetch: ")
    assert "upstream 503" in result.state["data"]
    assert result.steps["use"].status is StepStatus.SUCCESS
    assert result.steps["use"].text == "got use " + result.state["data"]


async def test_failing_handler_leaves_the_step_failed_and_says_so(
        fake_clock: FakeClock) -> None:
    wf = load_workflow_text(HANDLED % "skip_downstream")

    def answer(request: Any) -> str:
        raise ProviderError("everything is down", status=500, provider="p", retryable=False)

    result = await arun_workflow(wf, clients=Factory(echo_model(answer)), clock=fake_clock)
    assert result.status is RunStatus.FAILED
    err = result.steps["fetch"].error or ""
    assert "on_error block failed too" in err and "fallback" in err
    assert result.steps["use"].status is StepStatus.SKIPPED


async def test_no_handler_and_continue_lets_dependents_run(fake_clock: FakeClock) -> None:
    wf = load_workflow_text("""\
name: c
config: {on_step_failure: continue, max_retries: 0}
state: {data: "default"}
steps:
  - {id: fetch, type: llm_call, prompt: fetch, output: data}
  - {id: use, type: llm_call, depends_on: [fetch], prompt: "use {state.data}"}
""")
    result = await arun_workflow(wf, clients=Factory(echo_model(_fetch_fails)),
                                 clock=fake_clock)
    assert result.steps["fetch"].status is StepStatus.FAILED
    assert result.steps["use"].status is StepStatus.SUCCESS
    assert result.steps["use"].text == "got use default"
    assert result.status is RunStatus.FAILED  # a failure nobody handled still counts


async def test_skip_downstream_is_the_default(fake_clock: FakeClock) -> None:
    wf = load_workflow_text("""\
name: c
config: {max_retries: 0}
steps:
  - {id: fetch, type: llm_call, prompt: fetch}
  - {id: use, type: llm_call, depends_on: [fetch], prompt: "use"}
""")
    result = await arun_workflow(wf, clients=Factory(echo_model(_fetch_fails)),
                                 clock=fake_clock)
    assert result.steps["use"].status is StepStatus.SKIPPED
    assert result.steps["use"].reason == "skipped: dependency 'fetch' failed"


def test_bad_handler_block_is_a_load_error() -> None:
    with pytest.raises(WorkflowProblems) as info:
        load_workflow_text("""\
name: c
steps:
  - id: fetch
    type: llm_call
    prompt: fetch
    on_error:
      - {id: x, type: llm_call, promt: oops}
""")
    text = str(info.value)
    assert "<string>:6" in text and "on_error block has problems" in text and "promt" in text


def test_strict_outputs_refuses_parallel_writers() -> None:
    text = """\
name: s
config: {strict_outputs: %s}
steps:
  - {id: a, type: llm_call, prompt: a, output: same}
  - {id: b, type: llm_call, prompt: b, output: same}
"""
    load_workflow_text(text % "false")
    with pytest.raises(WorkflowProblems) as info:
        load_workflow_text(text % "true")
    assert "'a' and 'b' may run at the same time and both write 'same'" in str(info.value)
