"""The loader validates each step with its own type's model, so a file builds only the
models it needs; `WorkflowDefinition` still takes raw steps and exports the full schema."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Literal

import pytest
from pydantic import ValidationError

from agentloom.workflow.schema.other_steps import STEP_TYPES
from agentloom.workflow.schema.step_types import STEP_TYPE_NAMES, step_model
from agentloom.workflow.schema.steps import LLMCallStep
from agentloom.workflow.schema.workflow import WorkflowDefinition


def test_loading_builds_only_the_step_types_used() -> None:
    # A fresh interpreter: other tests here may have built every model already. A step
    # whose values need no conversion builds no model at all (`plain_step`); one that
    # does (`timeout: 30` becomes 30.0) builds its own type's model, and only that one.
    # A file of model calls never even creates the other types' classes (`other_steps`).
    script = textwrap.dedent("""
        import sys
        from agentloom.workflow import load_workflow
        from agentloom.workflow.schema.step_types import STEP_TYPE_NAMES, step_model
        from agentloom.workflow.schema.workflow import WorkflowDefinition
        OTHERS = "agentloom.workflow.schema.other_steps"
        def built():
            models = {t: step_model(t) for t in STEP_TYPE_NAMES}
            return sorted(t for t, m in models.items() if m.__pydantic_complete__)
        load_workflow("name: x\\nsteps:\\n  - {id: a, type: llm_call, prompt: hi}\\n")
        print(OTHERS in sys.modules, step_model("llm_call").__pydantic_complete__,
              WorkflowDefinition.__pydantic_complete__)
        load_workflow("name: x\\nsteps:\\n  - {id: a, type: llm_call, prompt: hi, timeout: 30}\\n")
        print(OTHERS in sys.modules, step_model("llm_call").__pydantic_complete__)
        load_workflow("name: x\\nsteps:\\n  - {id: a, type: router, default: b}\\n"
                      "  - {id: b, type: llm_call, prompt: hi, depends_on: a}\\n")
        print(OTHERS in sys.modules, built())
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True)
    assert done.stdout.split("\n")[:3] == [
        "False False False", "False True", "True ['llm_call']"]


def test_every_step_type_has_its_model_under_its_name() -> None:
    assert tuple(STEP_TYPES) == STEP_TYPE_NAMES
    for name in STEP_TYPE_NAMES:
        model = step_model(name)
        assert model is STEP_TYPES[name]
        assert model.model_fields["type"].annotation == Literal[name]  # type: ignore[valid-type]
    assert step_model("llm") is None and step_model("StepBase") is None


def test_definition_accepts_models_and_raw_steps() -> None:
    step = LLMCallStep.model_validate({"id": "a", "type": "llm_call", "prompt": "hi"})
    d = WorkflowDefinition.model_validate({"name": "x", "steps": [step]})
    assert d.steps == [step] and d.steps[0] is step
    raw = WorkflowDefinition.model_validate(
        {"name": "x", "steps": [{"id": "a", "type": "llm_call", "prompt": "hi"}]})
    assert raw.steps == [step]


@pytest.mark.parametrize(("steps", "loc", "kind"), [
    ([], ("steps",), "too_short"),
    ("x", ("steps",), "list_type"),
    ([{"id": "a", "type": "llm_call"}], ("steps", 0, "llm_call"), "value_error"),
    ([{"id": "a"}], ("steps", 0), "union_tag_not_found"),
])
def test_definition_errors_are_the_unions(steps: object, loc: tuple[object, ...],
                                          kind: str) -> None:
    with pytest.raises(ValidationError) as info:
        WorkflowDefinition.model_validate({"name": "x", "steps": steps})
    errors = info.value.errors()
    assert [(e["loc"], e["type"]) for e in errors] == [(loc, kind)]


def test_json_schema_lists_every_step_type() -> None:
    schema = WorkflowDefinition.model_json_schema()
    steps = schema["properties"]["steps"]
    assert steps["type"] == "array" and steps["minItems"] == 1
    refs = {c["$ref"].rsplit("/", 1)[-1] for c in steps["items"]["oneOf"]}
    assert refs == {"LLMCallStep", "ToolStep", "RouterStep", "SubworkflowStep",
                    "ApprovalGateStep", "AgentStep", "MapStep", "AskStep"}
    assert steps["items"]["discriminator"]["propertyName"] == "type"
