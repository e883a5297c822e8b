"""A step type's model by its name, creating only the models a file uses: `llm_call`'s is
in `steps.py`, every other type's in `other_steps.py`, imported when first asked for."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentloom.workflow.schema.steps import LLMCallStep, StepBase

if TYPE_CHECKING:  # importing it at run time loads pydantic's type_adapter module
    from pydantic import TypeAdapter

STEP_TYPE_NAMES = ("llm_call", "tool", "router", "subworkflow", "approval_gate", "agent",
                   "map", "ask")
"""Every step type, in the order error messages list them (`other_steps.STEP_TYPES`')."""


def step_model(name: str) -> type[StepBase] | None:
    """The model of step type `name`; None for a name that is no step type."""
    if name == "llm_call":
        return LLMCallStep
    if name not in STEP_TYPE_NAMES:
        return None
    from agentloom.workflow.schema.other_steps import STEP_TYPES

    return STEP_TYPES[name]


def step_union() -> TypeAdapter[Any]:
    """The union of every step type, discriminated on `type`: for a step whose `type` is
    missing or unknown (its errors list the types), and for the JSON Schema."""
    from agentloom.workflow.schema.other_steps import step_adapter

    return step_adapter()
