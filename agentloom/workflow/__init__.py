"""Workflows: YAML files of steps that form a graph, read and write a shared state, and run
on the engine.

    wf = load_workflow("flow.yaml")            # every problem at once, as file:line
    result = await arun_workflow(wf, clients=runtime, state={"topic": "x"})
    result.status, result.steps["summarize"].output

Importing this package is cheap: pydantic and the engine load on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentloom.workflow._context import ClientFactory as ClientFactory
    from agentloom.workflow._context import ToolSource as ToolSource
    from agentloom.workflow._durable import DurableRun as DurableRun
    from agentloom.workflow._durable import PauseRun as PauseRun
    from agentloom.workflow._durable import ask as ask
    from agentloom.workflow._engine import arun_workflow as arun_workflow
    from agentloom.workflow._engine import run_workflow as run_workflow
    from agentloom.workflow._expressions import ExpressionError as ExpressionError
    from agentloom.workflow._expressions import compile_expression as compile_expression
    from agentloom.workflow._loader import load_workflow as load_workflow
    from agentloom.workflow._loader import load_workflow_text as load_workflow_text
    from agentloom.workflow._problems import WorkflowProblems as WorkflowProblems
    from agentloom.workflow._result import RunResult as RunResult
    from agentloom.workflow._result import RunStatus as RunStatus
    from agentloom.workflow._result import StepResult as StepResult
    from agentloom.workflow._result import StepStatus as StepStatus
    from agentloom.workflow._schema import WorkflowDefinition as WorkflowDefinition
    from agentloom.workflow._templates import compile_template as compile_template
    from agentloom.workflow._workflow import Workflow as Workflow
    from agentloom.workflow.steps.agent import AgentSpec as AgentSpec
    from agentloom.workflow.steps.agent import agent_from_workflow as agent_from_workflow

_LAZY: dict[str, str] = {
    "ClientFactory": "agentloom.workflow._context",
    "ToolSource": "agentloom.workflow._context",
    "DurableRun": "agentloom.workflow._durable",
    "PauseRun": "agentloom.workflow._durable",
    "ask": "agentloom.workflow._durable",
    "arun_workflow": "agentloom.workflow._engine",
    "run_workflow": "agentloom.workflow._engine",
    "ExpressionError": "agentloom.workflow._expressions",
    "compile_expression": "agentloom.workflow._expressions",
    "load_workflow": "agentloom.workflow._loader",
    "load_workflow_text": "agentloom.workflow._loader",
    "WorkflowProblems": "agentloom.workflow._problems",
    "RunResult": "agentloom.workflow._result",
    "RunStatus": "agentloom.workflow._result",
    "StepResult": "agentloom.workflow._result",
    "StepStatus": "agentloom.workflow._result",
    "WorkflowDefinition": "agentloom.workflow._schema",
    "compile_template": "agentloom.workflow._templates",
    "Workflow": "agentloom.workflow._workflow",
    "AgentSpec": "agentloom.workflow.steps.agent",
    "agent_from_workflow": "agentloom.workflow.steps.agent",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agentloom.workflow' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
