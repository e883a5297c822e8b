"""Workflows: YAML files of steps that form a graph, read and write a shared state, and run
on the engine.

    wf = load_workflow("flow.yaml")            # every problem at once, as file:line
    result = await arun_workflow(wf, clients=runtime, state={"topic": "x"})
    result.status, result.steps["summarize"].output

Importing this package is cheap: pydantic and the engine load on first use. May import:
the layers up to `observe` (tests/test_layers.py holds the rule).

The layers inside, bottom up (each imports only those below it): `lang/` and `schema/`;
`load/`; `engine/`; `steps/` (reaching the engine through the run context) and `durable/`
(plugging into it through `engine.hooks`); `api.py`, which wires the step types into
loading and running, and this face.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentloom._lazy import lazy_getattr

if TYPE_CHECKING:
    from agentloom.workflow.api import arun_workflow as arun_workflow
    from agentloom.workflow.api import load_workflow as load_workflow
    from agentloom.workflow.api import load_workflow_text as load_workflow_text
    from agentloom.workflow.api import run_workflow as run_workflow
    from agentloom.workflow.durable.context import ask as ask
    from agentloom.workflow.durable.run import DurableRun as DurableRun
    from agentloom.workflow.engine.context import ClientFactory as ClientFactory
    from agentloom.workflow.engine.context import ToolSource as ToolSource
    from agentloom.workflow.engine.pause import PauseRun as PauseRun
    from agentloom.workflow.engine.result import RunResult as RunResult
    from agentloom.workflow.engine.result import RunStatus as RunStatus
    from agentloom.workflow.engine.result import StepResult as StepResult
    from agentloom.workflow.engine.result import StepStatus as StepStatus
    from agentloom.workflow.lang.expressions import ExpressionError as ExpressionError
    from agentloom.workflow.lang.expressions import compile_expression as compile_expression
    from agentloom.workflow.lang.templates import compile_template as compile_template
    from agentloom.workflow.load.problems import WorkflowProblems as WorkflowProblems
    from agentloom.workflow.load.workflow import Workflow as Workflow
    from agentloom.workflow.schema.workflow import WorkflowDefinition as WorkflowDefinition
    from agentloom.workflow.steps.agent import AgentSpec as AgentSpec
    from agentloom.workflow.steps.agent import agent_from_workflow as agent_from_workflow

_LAZY: dict[str, str] = {
    "ClientFactory": "agentloom.workflow.engine.context",
    "ToolSource": "agentloom.workflow.engine.context",
    "DurableRun": "agentloom.workflow.durable.run",
    "PauseRun": "agentloom.workflow.engine.pause",
    "ask": "agentloom.workflow.durable.context",
    "arun_workflow": "agentloom.workflow.api",
    "run_workflow": "agentloom.workflow.api",
    "ExpressionError": "agentloom.workflow.lang.expressions",
    "compile_expression": "agentloom.workflow.lang.expressions",
    "load_workflow": "agentloom.workflow.api",
    "load_workflow_text": "agentloom.workflow.api",
    "WorkflowProblems": "agentloom.workflow.load.problems",
    "RunResult": "agentloom.workflow.engine.result",
    "RunStatus": "agentloom.workflow.engine.result",
    "StepResult": "agentloom.workflow.engine.result",
    "StepStatus": "agentloom.workflow.engine.result",
    "WorkflowDefinition": "agentloom.workflow.schema.workflow",
    "compile_template": "agentloom.workflow.lang.templates",
    "Workflow": "agentloom.workflow.load.workflow",
    "AgentSpec": "agentloom.workflow.steps.agent",
    "agent_from_workflow": "agentloom.workflow.steps.agent",
}

__all__ = sorted(_LAZY)


__getattr__ = lazy_getattr(__name__, _LAZY, globals())
