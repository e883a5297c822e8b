"""An `agent` step's tools (declared once under `agents:`) are checked like an llm_call's:
an unknown name fails the run before any model call, with the agent's file:line; a
near miss of a known tool is a warning at load."""

from __future__ import annotations

from typing import Any

import pytest

from agentloom.workflow import WorkflowProblems, arun_workflow, load_workflow_text

FLOW = """\
name: a
agents:
  writer:
    model: m
    tools:
      - file_read
      - {name: nope_tool, description: Not registered anywhere.}
steps:
  - {id: w1, type: agent, agent: writer, prompt: hi}
  - {id: w2, type: agent, agent: writer, prompt: again, depends_on: [w1]}
"""


class NoModel:
    default_model = "m"

    def client(self, **_: Any) -> Any:
        raise AssertionError("no model may be asked: the tools are checked first")


def test_agent_tools_are_recorded_once_per_agent_with_their_lines() -> None:
    wf = load_workflow_text(FLOW)
    refs = [(r.step_id, r.name, r.line, r.field) for r in wf.tool_refs]
    assert refs == [("w1", "file_read", 6, "agents.writer.tools[0]"),
                    ("w1", "nope_tool", 7, "agents.writer.tools[1]")]


async def test_an_unknown_agent_tool_fails_before_any_model_call() -> None:
    wf = load_workflow_text(FLOW)
    with pytest.raises(WorkflowProblems) as info:
        await arun_workflow(wf, clients=NoModel())
    assert [str(e) for e in info.value.errors] == [
        "<string>:7: step 'w1', agents.writer.tools[1]: unknown tool 'nope_tool' "
        "(registered tools: file_read, file_write, http_request, shell_command)"]


def test_a_near_miss_is_a_warning_at_load() -> None:
    wf = load_workflow_text(FLOW.replace("- file_read", "- file_raed"))
    assert any("file_raed" in w and "did you mean 'file_read'" in w for w in wf.warnings)
