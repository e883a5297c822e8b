"""Writing a state path the state can't hold is a `PathError` that says why, never
Python's `IndexError`: an `output:` past a list's end, or `--state 'items[9]=x'` over a
state file's two-item list (which the CLI printed as a traceback)."""

from __future__ import annotations

import pytest
from wf_helpers import Factory, echo_model

from agentloom.workflow import StepStatus, arun_workflow, load_workflow_text
from agentloom.workflow.lang.paths import PathError, assign, parse_path


@pytest.mark.parametrize(("path", "why"), [
    ("items[9]", "'items' is a list of 2, with no item [9]"),
    ("items[-3]", "'items' is a list of 2, with no item [-3]"),
    ("items[5].x", "'items' is a list of 2, with no item [5]"),
    ("items.x", "'items' holds a list, not a mapping"),
    ("items[0].x", "'items[0]' holds text, not a mapping"),
])
def test_an_unwritable_path_says_why(path: str, why: str) -> None:
    state = {"items": ["a", "b"]}
    with pytest.raises(PathError) as info:
        assign(state, parse_path(path), "x")
    assert str(info.value) == f"cannot write {path!r}: {why}"
    assert state == {"items": ["a", "b"]}


def test_writable_paths_still_write() -> None:
    state: dict[str, object] = {"items": ["a", "b"]}
    assign(state, parse_path("items[-1]"), "z")
    assign(state, parse_path("report.summary"), "s")
    assert state == {"items": ["a", "z"], "report": {"summary": "s"}}


async def test_an_output_past_the_end_of_a_list_fails_the_step_naming_it() -> None:
    text = ("name: x\nstate: {items: [a, b]}\nsteps:\n"
            "  - {id: s, type: llm_call, prompt: p, output: 'items[9]'}\n")
    result = await arun_workflow(load_workflow_text(text), clients=Factory(echo_model()))
    step = result.steps["s"]
    assert step.status is StepStatus.FAILED
    assert step.error == "cannot write 'items[9]': 'items' is a list of 2, with no item [9]"
    assert step.error_type == "PathError"
    assert result.state["items"] == ["a", "b"]
