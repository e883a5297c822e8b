"""`plain_step` and `plain_definition` build what the models' validation builds, for the
values they take as they are, and hand everything else back to the models."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from agentloom.workflow.schema.other_steps import STEP_TYPES
from agentloom.workflow.schema.steps import LLMCallStep, plain_step
from agentloom.workflow.schema.workflow import WorkflowDefinition, plain_definition

TAKEN = [
    {"id": "a", "type": "llm_call", "prompt": "hi"},
    {"id": "a_1-b", "type": "llm_call", "prompt": "hi", "model": "m", "provider": "openai",
     "output": "x.y", "system_prompt": None, "stream": True, "temperature": 0.5,
     "max_tokens": 10, "cache": "auto", "max_tool_iterations": 3, "description": "d"},
    {"id": "a", "type": "llm_call", "prompt": "hi", "depends_on": "b"},
    {"id": "a", "type": "llm_call", "prompt": "hi", "depends_on": ["b", "c"]},
    {"id": "a", "type": "llm_call", "conversation": "c", "timeout": 2.5},
    {"id": "a", "type": "agent", "prompt": "hi", "agent": "helper"},
]
HANDED_BACK = [
    {"id": "a", "type": "llm_call", "prompt": "hi", "timeout": 30},  # becomes 30.0
    {"id": "a", "type": "llm_call", "prompt": "hi", "temperature": 1},  # becomes 1.0
    {"id": "a", "type": "llm_call", "prompt": "hi", "max_tokens": 0},  # below ge=1
    {"id": "a", "type": "llm_call", "prompt": "hi", "max_tool_iterations": 1001},
    {"id": "a", "type": "llm_call", "prompt": "hi", "stream": "yes"},
    {"id": "a", "type": "llm_call", "prompt": "hi", "cache": "always"},
    {"id": "1a", "type": "llm_call", "prompt": "hi"},  # not a step id
    {"id": "a\n", "type": "llm_call", "prompt": "hi"},
    {"id": "a", "type": "llm_call"},  # neither prompt nor conversation: _coherent refuses
    {"id": "a", "type": "llm_call", "prompt": "hi", "temprature": 0.5},  # unknown field
    {"id": "a", "type": "llm_call", "prompt": "hi", "tools": ["t"]},  # a field validator
    {"id": "a", "type": "llm_call", "prompt": "hi", "retry": {"max_retries": 1}},
    {"id": "a", "type": "llm_call", "prompt": "hi", "depends_on": [1]},
    {"id": "a", "type": "llm_call", "prompt": "hi", "speaker": "bob"},
]


def _same(a: Any, b: Any) -> None:
    assert type(a) is type(b)
    assert a == b
    assert a.model_fields_set == b.model_fields_set
    assert a.__dict__ == b.__dict__


@pytest.mark.parametrize("raw", TAKEN)
def test_a_plain_step_is_what_its_model_builds(raw: dict[str, Any]) -> None:
    model = STEP_TYPES[raw["type"]]
    quick = plain_step(model, raw)
    assert quick is not None
    _same(quick, model.model_validate(raw))


@pytest.mark.parametrize("raw", HANDED_BACK)
def test_other_steps_go_through_the_model(raw: dict[str, Any]) -> None:
    assert plain_step(LLMCallStep, raw) is None


def test_a_plain_definition_is_what_the_model_builds() -> None:
    steps = [LLMCallStep.model_validate({"id": "a", "type": "llm_call", "prompt": "hi"})]
    for top in [{"name": "x", "steps": steps},
                {"name": "x", "version": 1.0, "description": None, "state": {"k": [1]},
                 "config": {"model": "m", "max_concurrent_steps": 2}, "steps": steps},
                {"name": "x", "version": "2", "description": "d", "steps": steps}]:
        quick = plain_definition(top)
        assert quick is not None
        _same(quick, WorkflowDefinition.model_validate(top))
        assert quick.config.model_fields_set == WorkflowDefinition.model_validate(
            top).config.model_fields_set


@pytest.mark.parametrize("top", [
    {"name": "x", "steps": []},
    {"name": 1, "steps": "s"},
    {"name": "x", "version": True, "steps": "s"},
    {"name": "x", "state": {1: "a"}, "steps": "s"},
    {"name": "x", "config": {"max_concurrent_steps": 0}, "steps": "s"},
    {"name": "x", "providers": {}, "steps": "s"},
    {"name": "x", "steps": [{"id": "a", "type": "llm_call", "prompt": "hi"}]},
])
def test_other_definitions_go_through_the_model(top: dict[str, Any]) -> None:
    if top["steps"] == "s":
        top = {**top, "steps": [LLMCallStep.model_validate(
            {"id": "a", "type": "llm_call", "prompt": "hi"})]}
    assert plain_definition(top) is None


def test_a_refused_plain_config_still_reports_through_the_model() -> None:
    step = LLMCallStep.model_validate({"id": "a", "type": "llm_call", "prompt": "hi"})
    top = {"name": "x", "config": {"max_concurrent_steps": 0}, "steps": [step]}
    assert plain_definition(top) is None
    with pytest.raises(ValidationError):
        WorkflowDefinition.model_validate(top)
