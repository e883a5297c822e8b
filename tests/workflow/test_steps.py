"""Router and tool steps, and the tool loop of an llm_call, through the engine."""

from __future__ import annotations

from typing import Any

import pytest
from wf_helpers import Factory, echo_model

from agentloom.testing.scripted import ScriptedModel, tool_call
from agentloom.workflow import (
    RunStatus,
    StepStatus,
    WorkflowProblems,
    arun_workflow,
    load_workflow_text,
)

ROUTER = """\
name: router
state: {kind: "{kind}"}
steps:
  - {id: classify, type: llm_call, prompt: "{state.kind}", output: classification}
  - id: route
    type: router
    depends_on: [classify]
    conditions:
      - {expression: "'billing' in state.classification.lower()", target: billing}
      - {expression: "state.classification.strip().lower() == 'echo: tech'", target: tech}
    default: general
  - {id: billing, type: llm_call, depends_on: [route], prompt: b, output: response}
  - {id: tech, type: llm_call, depends_on: [route], prompt: t, output: response}
  - {id: general, type: llm_call, depends_on: [route], prompt: g, output: response}
  - {id: after_tech, type: llm_call, depends_on: [tech], prompt: x}
  - {id: join, type: llm_call, depends_on: [billing, tech, general], prompt: j}
"""


@pytest.mark.parametrize(("kind", "taken"), [("BILLING", "billing"), ("tech", "tech"),
                                              ("other", "general")])
async def test_router_takes_one_branch_and_skips_the_rest(kind: str, taken: str) -> None:
    wf = load_workflow_text(ROUTER.replace("{kind}", kind))
    result = await arun_workflow(wf, clients=Factory(echo_model()))
    assert result.status is RunStatus.SUCCESS, result.error
    assert result.steps["route"].output == taken
    for branch in ("billing", "tech", "general"):
        expected = StepStatus.SUCCESS if branch == taken else StepStatus.SKIPPED
        assert result.steps[branch].status is expected
        if branch != taken:
            assert result.steps[branch].reason == "skipped: branch not taken by router 'route'"
    # What depends only on skipped branches is skipped; a join of branches still runs.
    after = result.steps["after_tech"].status
    assert after is (StepStatus.SUCCESS if taken == "tech" else StepStatus.SKIPPED)
    assert result.steps["join"].status is StepStatus.SUCCESS


def test_router_target_must_exist_and_depend_on_the_router() -> None:
    text = """\
name: r
steps:
  - id: route
    type: router
    conditions:
      - {expression: "True", target: elsewhere}
    default: free
  - {id: free, type: llm_call, prompt: p}
"""
    with pytest.raises(WorkflowProblems) as info:
        load_workflow_text(text)
    msgs = [e.message for e in info.value.errors]
    assert any("router target 'elsewhere' is not a step" in m for m in msgs)
    assert any("must depend on the router" in m for m in msgs)
    assert {e.line for e in info.value.errors} == {6, 7}


def test_hostile_router_expression_fails_at_load() -> None:
    text = """\
name: r
steps:
  - id: route
    type: router
    conditions:
      - {expression: "().__class__.__bases__", target: t}
  - {id: t, type: llm_call, prompt: p, depends_on: [route]}
"""
    with pytest.raises(WorkflowProblems, match=r"route.*conditions\[0\]\.expression.*"
                                               r"'__bases__' is not allowed"):
        load_workflow_text(text)


class _Registry:
    """A ToolSource over the real ToolRegistry with one test tool."""

    def __init__(self) -> None:
        from agentloom.tools import ToolRegistry, tool

        @tool
        def add(a: int, b: int) -> dict[str, Any]:
            """Add two numbers."""
            return {"sum": a + b}

        @tool
        def fail() -> str:
            """Always fails."""
            raise RuntimeError("nope")

        self.registry = ToolRegistry([add, fail])
        self.policies: list[Any] = []

    def toolbox(self, declared: Any, *, policy: Any = None) -> Any:
        self.policies.append(policy)
        return self.registry.toolbox(declared, policy=policy)


async def test_tool_step_passes_typed_state_and_writes_parsed_output() -> None:
    text = """\
name: t
state: {x: 2, nums: {y: 40}}
steps:
  - id: add
    type: tool
    tool_name: add
    tool_args: {a: state.x, b: "{state.nums.y}"}
    output: total
  - {id: say, type: llm_call, depends_on: [add], prompt: "sum={state.total.sum}"}
"""
    result = await arun_workflow(load_workflow_text(text), clients=Factory(echo_model()),
                                 tools=_Registry())
    assert result.status is RunStatus.SUCCESS, result.error
    assert result.state["total"] == {"sum": 42}
    assert result.steps["say"].output == "echo: sum=42"


async def test_tool_step_failure_fails_the_step_without_retry() -> None:
    text = "name: t\nsteps:\n  - {id: f, type: tool, tool_name: fail}\n"
    result = await arun_workflow(load_workflow_text(text), clients=Factory(echo_model()),
                                 tools=_Registry())
    assert result.steps["f"].status is StepStatus.FAILED
    assert result.steps["f"].attempts == 1
    assert "nope" in (result.steps["f"].error or "")


async def test_llm_call_runs_the_tool_loop() -> None:
    text = """\
name: t
steps:
  - id: ask
    type: llm_call
    prompt: "what is 2+3?"
    tools: [add]
    max_tool_iterations: 3
    output: answer
"""
    model = ScriptedModel([[tool_call("add", {"a": 2, "b": 3})], "It is 5."])
    result = await arun_workflow(load_workflow_text(text), clients=Factory(model),
                                 tools=_Registry())
    assert result.status is RunStatus.SUCCESS, result.error
    assert result.state["answer"] == "It is 5."
    assert result.steps["ask"].iterations == 2
    assert [t.name for t in model.requests[0].tools] == ["add"]
    tool_turn = model.requests[1].messages[-1]
    assert tool_turn.role == "tool" and '5' in tool_turn.parts[0].content  # type: ignore[union-attr]


async def test_response_schema_reaches_the_request() -> None:
    text = ("name: t\nsteps:\n  - id: a\n    type: llm_call\n    prompt: p\n"
            "    response_schema: {type: json_object}\n    output: o\n")
    model = ScriptedModel(['{"k": 1}'])
    result = await arun_workflow(load_workflow_text(text), clients=Factory(model))
    assert result.state["o"] == {"k": 1}
    assert model.requests[0].response_format.kind == "json_object"


PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAYAAABytg0kAAAAEklEQVR4nGP4z8DwHwyBNBgAAEnICff5q7YNAAAA"
       "AElFTkSuQmCC")


async def test_attachments_are_read_and_sent_with_the_prompt(tmp_path: Any,
                                                            monkeypatch: Any) -> None:
    import base64

    from agentloom.messages import DocumentPart, ImagePart

    monkeypatch.chdir(tmp_path)
    (tmp_path / "doc.pdf").write_bytes(b"%PDF-1.4 tiny")
    text = f"""\
name: media
state: {{img: "data:image/png;base64,{PNG}"}}
steps:
  - id: look
    type: llm_call
    prompt: describe
    attachments:
      - source: "{{state.img}}"
      - {{type: pdf, source: doc.pdf}}
"""
    model = ScriptedModel(["a tiny image"])
    result = await arun_workflow(load_workflow_text(text), clients=Factory(model))
    assert result.status is RunStatus.SUCCESS, result.error
    parts = model.requests[0].messages[-1].parts
    assert isinstance(parts[1], ImagePart) and parts[1].data == base64.b64decode(PNG)
    assert isinstance(parts[2], DocumentPart) and parts[2].data == b"%PDF-1.4 tiny"


async def test_attachment_outside_the_sandbox_fails_before_any_call(tmp_path: Any,
                                                                   monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "secret.png").write_bytes(b"x")
    text = """\
name: media
config:
  sandbox: {enabled: true, readable_paths: [/nonexistent]}
steps:
  - id: look
    type: llm_call
    prompt: describe
    attachments: [{source: secret.png}]
"""
    model = ScriptedModel([])
    result = await arun_workflow(load_workflow_text(text), clients=Factory(model))
    look = result.steps["look"]
    assert look.status is StepStatus.FAILED and look.attempts == 1
    assert model.requests == []
