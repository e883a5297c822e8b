"""The `subworkflow` step: files and inline children, state semantics, cycles, roll-up."""

from __future__ import annotations

import os
from decimal import Decimal
from pathlib import Path

import pytest
from wf_helpers import Factory, echo_model

from agentloom.messages import Usage
from agentloom.testing.scripted import make_response
from agentloom.workflow import (
    RunStatus,
    StepStatus,
    WorkflowProblems,
    arun_workflow,
    load_workflow,
    load_workflow_text,
)

CHILD = """\
name: child
state: {note: "from child defaults"}
steps:
  - id: write
    type: llm_call
    prompt: "child sees {state.topic} / {state.note}"
    output: written
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


def priced(text: str, cost: str | None = "0.001") -> object:
    return make_response(text, usage=Usage(input_tokens=3, output_tokens=2,
                                           cost_usd=None if cost is None else Decimal(cost)))


async def test_path_resolves_against_the_naming_file_not_the_cwd(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path, "flows/sub/child.yaml", CHILD)
    parent = _write(tmp_path, "flows/parent.yaml", """\
name: parent
state: {topic: "tides"}
steps:
  - id: sub
    type: subworkflow
    workflow_path: sub/child.yaml
    output: sub_result
  - id: after
    type: llm_call
    depends_on: [sub]
    prompt: "parent got {state.sub_result.written}"
""")
    monkeypatch.chdir(tmp_path)  # a cwd where sub/child.yaml does not exist
    wf = load_workflow(parent)
    model = echo_model()
    result = await arun_workflow(wf, clients=Factory(model))
    assert result.status is RunStatus.SUCCESS, result.error
    assert result.state["sub_result"] == {  # the child's final state
        "topic": "tides", "note": "from child defaults",
        "written": "echo: child sees tides / from child defaults"}
    assert result.steps["after"].text == (
        "echo: parent got echo: child sees tides / from child defaults")
    # nothing but the step's output comes back into the parent's state
    assert "written" not in result.state and "note" not in result.state


async def test_isolated_state_sees_only_input_and_its_defaults() -> None:
    wf = load_workflow_text("""\
name: parent
state: {topic: "tides", secret: "s3cr3t"}
steps:
  - id: sub
    type: subworkflow
    isolated_state: true
    input: {topic: "{state.topic}", n: 3}
    return_keys: [seen, n]
    workflow_inline:
      name: inner
      state: {seen: ""}
      steps:
        - id: look
          type: llm_call
          prompt: "topic={state.topic}"
          output: seen
    output: got
""")
    model = echo_model()
    result = await arun_workflow(wf, clients=Factory(model))
    assert result.status is RunStatus.SUCCESS, result.error
    assert result.state["got"] == {"seen": "echo: topic=tides", "n": 3}


async def test_a_childs_write_below_an_input_never_changes_the_parents_state() -> None:
    # `input: {cfg: "{state.config}"}` hands over the parent's own dict as a value; the
    # child writing below it (`output: cfg.mode`) wrote into the parent's state.
    wf = load_workflow_text("""\
name: parent
state: {config: {mode: "parent", deep: {n: 1}}}
steps:
  - id: sub
    type: subworkflow
    isolated_state: true
    input: {cfg: "{state.config}"}
    return_keys: [cfg]
    workflow_inline:
      name: inner
      steps:
        - {id: a, type: llm_call, prompt: "x", output: cfg.mode}
        - {id: b, type: llm_call, prompt: "y", output: cfg.deep.n, depends_on: [a]}
    output: got
""")
    result = await arun_workflow(wf, clients=Factory(echo_model()))
    assert result.status is RunStatus.SUCCESS, result.error
    assert result.state["config"] == {"mode": "parent", "deep": {"n": 1}}
    assert result.state["got"]["cfg"] == {"mode": "echo: x", "deep": {"n": "echo: y"}}


async def test_isolated_child_reading_parent_state_fails_naming_the_key() -> None:
    wf = load_workflow_text("""\
name: parent
state: {secret: "s3cr3t"}
steps:
  - id: sub
    type: subworkflow
    isolated_state: true
    workflow_inline:
      name: inner
      steps:
        - id: leak
          type: llm_call
          prompt: "{state.secret}"
""")
    result = await arun_workflow(wf, clients=Factory(echo_model()))
    assert result.status is RunStatus.FAILED
    err = result.steps["sub"].error or ""
    assert "inner" in err and "leak" in err and "secret" in err


async def test_child_tokens_and_cost_roll_up() -> None:
    wf = load_workflow_text("""\
name: parent
steps:
  - id: sub
    type: subworkflow
    workflow_inline:
      name: inner
      steps:
        - {id: a, type: llm_call, prompt: "one"}
        - {id: b, type: llm_call, prompt: "two", depends_on: [a]}
""")
    result = await arun_workflow(wf, clients=Factory(echo_model(lambda r: priced("x"))))
    assert result.status is RunStatus.SUCCESS, result.error
    usage = result.steps["sub"].usage
    assert usage is not None and usage.input_tokens == 6 and usage.output_tokens == 4
    assert usage.cost_usd == Decimal("0.002")
    assert result.cost_usd == Decimal("0.002")


async def test_unknown_child_cost_stays_unknown() -> None:
    wf = load_workflow_text("""\
name: parent
steps:
  - id: sub
    type: subworkflow
    workflow_inline:
      name: inner
      steps:
        - {id: a, type: llm_call, prompt: "one"}
        - {id: b, type: llm_call, prompt: "two", depends_on: [a]}
""")
    replies = iter([priced("x"), priced("y", cost=None)])
    result = await arun_workflow(wf, clients=Factory(echo_model(lambda r: next(replies))))
    usage = result.steps["sub"].usage
    assert usage is not None and usage.input_tokens == 6 and usage.cost_usd is None


def test_missing_file_is_a_load_error_at_its_line(tmp_path: Path) -> None:
    parent = _write(tmp_path, "p.yaml", """\
name: parent
steps:
  - id: sub
    type: subworkflow
    workflow_path: nowhere/child.yaml
""")
    with pytest.raises(WorkflowProblems) as info:
        load_workflow(parent)
    text = str(info.value)
    assert "p.yaml:5" in text and "not found" in text
    assert str(tmp_path / "nowhere" / "child.yaml") in text


def test_a_child_path_that_is_a_fifo_is_refused_without_opening_it(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "child.yaml")  # no writer: opening it to read would block for ever
    parent = _write(tmp_path, "p.yaml", """\
name: parent
steps:
  - id: sub
    type: subworkflow
    workflow_path: child.yaml
""")
    with pytest.raises(WorkflowProblems) as info:
        load_workflow(parent)
    text = str(info.value)
    assert "p.yaml:5" in text
    assert f"subworkflow file is not a regular file: {tmp_path / 'child.yaml'}" in text


def test_a_cycle_of_files_is_refused_at_load(tmp_path: Path) -> None:
    _write(tmp_path, "a.yaml", """\
name: a
steps:
  - {id: to_b, type: subworkflow, workflow_path: b.yaml}
""")
    _write(tmp_path, "b.yaml", """\
name: b
steps:
  - {id: to_a, type: subworkflow, workflow_path: a.yaml}
""")
    with pytest.raises(WorkflowProblems) as info:
        load_workflow(tmp_path / "a.yaml")
    assert "subworkflow cycle: a.yaml -> b.yaml -> a.yaml" in str(info.value)


def test_a_file_naming_itself_is_refused(tmp_path: Path) -> None:
    _write(tmp_path, "self.yaml", """\
name: me
steps:
  - {id: again, type: subworkflow, workflow_path: ./self.yaml}
""")
    with pytest.raises(WorkflowProblems) as info:
        load_workflow(tmp_path / "self.yaml")
    assert "subworkflow cycle: self.yaml -> self.yaml" in str(info.value)


def test_deep_chain_of_files_is_refused(tmp_path: Path) -> None:
    for i in range(12):
        _write(tmp_path, f"f{i}.yaml",
               f"name: f{i}\nsteps:\n  - {{id: s, type: subworkflow, workflow_path: "
               f"f{i + 1}.yaml}}\n")
    _write(tmp_path, "f12.yaml", "name: leaf\nsteps:\n  - {id: x, type: llm_call, "
                                 "prompt: hi}\n")
    with pytest.raises(WorkflowProblems) as info:
        load_workflow(tmp_path / "f0.yaml")
    assert "nest deeper than 8" in str(info.value)


def test_child_problems_are_reported_by_the_parent(tmp_path: Path) -> None:
    _write(tmp_path, "child.yaml", "name: c\nsteps:\n  - {id: x, type: llm_call, "
                                   "prompt: hi, temprature: 2}\n")
    parent = _write(tmp_path, "p.yaml", "name: p\nsteps:\n  - {id: s, type: subworkflow, "
                                        "workflow_path: child.yaml}\n")
    with pytest.raises(WorkflowProblems) as info:
        load_workflow(parent)
    text = str(info.value)
    assert "child.yaml" in text and "temprature" in text and "temperature" in text


def test_unknown_return_key_is_a_load_error() -> None:
    with pytest.raises(WorkflowProblems) as info:
        load_workflow_text("""\
name: p
steps:
  - id: s
    type: subworkflow
    isolated_state: true
    return_keys: [answr]
    workflow_inline:
      name: c
      steps:
        - {id: x, type: llm_call, prompt: hi, output: answer}
""")
    assert "return key 'answr'" in str(info.value)


async def test_failed_child_fails_the_step_and_skips_dependents() -> None:
    wf = load_workflow_text("""\
name: p
steps:
  - id: s
    type: subworkflow
    retry: {max_retries: 0}
    workflow_inline:
      name: c
      config: {max_retries: 0}
      steps:
        - {id: boom, type: llm_call, prompt: hi}
  - {id: after, type: llm_call, prompt: x, depends_on: [s]}
""")

    def fail(request: object) -> object:
        raise ValueError("model exploded")

    result = await arun_workflow(wf, clients=Factory(echo_model(fail)))
    assert result.status is RunStatus.FAILED
    assert "subworkflow 'c'" in (result.steps["s"].error or "")
    assert "boom" in (result.steps["s"].error or "")
    assert result.steps["after"].status is StepStatus.SKIPPED


async def test_pause_inside_the_child_surfaces_unchanged() -> None:
    from agentloom.workflow.durable.run import PauseRun
    from agentloom.workflow.engine.nested import raise_if_paused
    from agentloom.workflow.engine.result import RunResult

    signal = PauseRun("decision", "ship it?")
    child = RunResult(workflow="c", run_id="r/s", status=RunStatus.PAUSED, steps={},
                      state={}, duration_seconds=0.0, pause=signal)
    with pytest.raises(PauseRun) as info:
        raise_if_paused(child)
    assert info.value is signal


async def test_parallel_inline_children_do_not_mix_their_state() -> None:
    children = "".join(f"""
  - id: loc_{lang}
    type: subworkflow
    output: out_{lang}
    workflow_inline:
      name: localize-{lang}
      state: {{translation: ""}}
      steps:
        - {{id: translate, type: llm_call, prompt: "{lang}: {{state.text}}", output: translation}}
        - {{id: review, type: llm_call, prompt: "review {{state.translation}}",
            depends_on: [translate], output: final}}
""" for lang in ("es", "de", "ja"))
    wf = load_workflow_text("name: p\nstate: {text: hello}\nsteps:" + children)
    result = await arun_workflow(wf, clients=Factory(echo_model()))
    assert result.status is RunStatus.SUCCESS, result.error
    for lang in ("es", "de", "ja"):
        assert result.state[f"out_{lang}"] == {
            "text": "hello", "translation": f"echo: {lang}: hello",
            "final": f"echo: review echo: {lang}: hello"}


async def test_an_approval_gate_inside_pauses_the_parent_run() -> None:
    wf = load_workflow_text("""\
name: p
steps:
  - id: sub
    type: subworkflow
    workflow_inline:
      name: c
      steps:
        - {id: gate, type: approval_gate, message: "ship it?"}
        - {id: after, type: llm_call, prompt: x, depends_on: [gate]}
  - {id: later, type: llm_call, prompt: y, depends_on: [sub]}
""")
    model = echo_model()
    result = await arun_workflow(wf, clients=Factory(model))
    assert result.status is RunStatus.PAUSED
    assert result.pause is not None and result.pause.prompt == "ship it?"
    assert result.steps["sub"].status is StepStatus.PAUSED
    assert result.steps["later"].status is StepStatus.PENDING  # waits for the resume
    assert result.steps["later"].reason == "waiting: the run is paused"
