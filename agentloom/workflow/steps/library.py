"""The step types as one `StepLibrary`: what the loader prepares steps with and the
engine runs them with, so neither imports a step module.

`LIBRARY` dispatches on a step's `type` to its module (imported on first use, see
`STEP_KINDS`), adds the checks every step type shares (`{args.x}` only in a function's
steps, the `on_error` block), and opens a run's tools (built-ins, MCP servers, workflow
functions).
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentloom.errors import ConfigError
from agentloom.workflow.engine.on_error import prepare_handler
from agentloom.workflow.steps import STEP_KINDS
from agentloom.workflow.steps.functions import check_arg_refs, check_tooling
from agentloom.workflow.steps.tooling import extends_tools, open_run_tools, plain_run_tools

if TYPE_CHECKING:
    from collections.abc import Coroutine

    from agentloom.workflow.engine.context import RunContext
    from agentloom.workflow.load.loader import Checker, PrepareContext
    from agentloom.workflow.load.workflow import StepNode, Workflow
    from agentloom.workflow.schema.workflow import WorkflowDefinition


class Steps:
    """Every step type this package defines (see the module docstring)."""

    def prepare(self, node: StepNode, pc: PrepareContext,
                function_args: frozenset[str] | None) -> None:
        kind = STEP_KINDS.get(node.type)
        if kind is not None:
            node.prepared = kind.prepare(node.step, pc)
            check_arg_refs(pc, node.prepared, function_args)
        if node.step.on_error:
            node.handler = prepare_handler(node.step, pc)

    def prepare_agents(self, checker: Checker) -> dict[str, Any]:
        if not checker.agents:
            return {}  # and the agent step's module is not imported for nothing
        plans: dict[str, Any] = STEP_KINDS["agent"].prepare_agents(checker)
        return plans

    def check_tooling(self, checker: Checker, definition: WorkflowDefinition,
                      nodes: dict[str, StepNode], base_dir: Path) -> Any:
        return check_tooling(checker, definition, nodes, base_dir)

    def execute(self, node: StepNode, ctx: RunContext) -> Coroutine[Any, Any, Any]:
        kind = STEP_KINDS.get(node.type)
        if kind is None:
            raise ConfigError(f"step {node.id!r}: step type {node.type!r} can't run yet")
        coro: Coroutine[Any, Any, Any] = kind.execute(node, ctx)
        return coro

    def run_tools(self, workflow: Workflow, *, tools: Any, clients: Any, transport: Any,
                  clock: Any, runner: Any) -> AbstractAsyncContextManager[Any] | None:
        if not extends_tools(workflow):
            return None
        return open_run_tools(workflow, tools=tools, clients=clients, transport=transport,
                              clock=clock, runner=runner)

    def plain_tools(self, workflow: Workflow, tools: Any, transport: Any) -> Any:
        return plain_run_tools(workflow, tools, transport)


LIBRARY = Steps()
"""The step library `agentloom.workflow.load_workflow` loads workflows with."""
