"""The public AgentLoom's Python API called with odd-but-plausible input: each answer is
one error saying what was expected, never Python's words from inside the adapters."""

from __future__ import annotations

import pytest

from agentloom.core.dsl import workflow
from agentloom.core.engine import WorkflowEngine
from agentloom.core.parser import WorkflowParser
from agentloom.errors import ConfigError


def _built() -> object:
    return workflow("w").add_llm_step("a", "hi", output="o").build()


@pytest.mark.parametrize("field, value, fragment", [
    ("timeout", -1, "timeout"),
    ("max_concurrent_steps", -1, "max_concurrent_steps"),
    ("budget_usd", -5, "budget_usd"),
])
def test_a_config_assignment_is_checked_as_the_file_is(field: str, value: object,
                                                       fragment: str) -> None:
    wf = _built()
    with pytest.raises(ConfigError, match=rf"workflow config {fragment}: .*\(got -\d\)"):
        setattr(wf.config, field, value)  # type: ignore[attr-defined]
    assert wf.resolved().config == wf.loaded.config  # type: ignore[attr-defined]
    wf.config.timeout = 30  # type: ignore[attr-defined]
    assert wf.resolved().config.timeout == 30  # type: ignore[attr-defined]


@pytest.mark.parametrize("value", [None, 5])
def test_a_workflow_that_is_none_or_a_number(value: object) -> None:
    with pytest.raises(TypeError, match="a path or YAML text"):
        WorkflowParser.from_yaml(value)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"workflow: expected a loaded workflow .* got"):
        WorkflowEngine(workflow=value)


@pytest.mark.parametrize("kwargs, fragment", [
    ({"state_manager": {"topic": "x"}}, "state_manager: expected a StateManager"),
    ({"provider_gateway": "openai"}, "provider_gateway: expected a ProviderGateway"),
    ({"tool_registry": {}}, "tool_registry: expected a ToolRegistry"),
])
def test_engine_arguments_of_the_wrong_kind(kwargs: dict[str, object], fragment: str) -> None:
    with pytest.raises(TypeError, match=fragment):
        WorkflowEngine(workflow=_built(), **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("conditions", [None, {"state.x": "a"}, [("state.x",)]])
def test_router_conditions_that_are_no_list_of_pairs(conditions: object) -> None:
    with pytest.raises(TypeError, match=r"step 'r': conditions must be a list of "
                                        r"\(expression, target\) pairs"):
        workflow("w").add_router_step("r", conditions)  # type: ignore[arg-type]
