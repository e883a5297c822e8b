"""`on_error`: a block of steps that runs when a step fails for good (after its retries).

The block is loaded with the file, as a small workflow of its own, and runs as a child
run on a copy of the state with the failure at `{state.error}` (`step`, `message`,
`type`). If every step of the block succeeds, the failure is handled: each block step's
`output` is written into the run's state, the failed step keeps its error (so the
record is honest) but its dependents run and the run can still succeed. If the block
fails, the step stays failed and its error says what the handler did too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentloom.errors import WorkflowError
from agentloom.workflow.engine.nested import (
    NestingError,
    block_under,
    deep_copy,
    first_failure,
    load_block,
    problems_text,
    raise_if_paused,
)
from agentloom.workflow.engine.result import RunStatus, StepStatus
from agentloom.workflow.lang.paths import assign

if TYPE_CHECKING:
    from agentloom.workflow.engine.context import RunContext
    from agentloom.workflow.engine.result import StepResult
    from agentloom.workflow.load.loader import PrepareContext
    from agentloom.workflow.load.workflow import StepNode, Workflow
    from agentloom.workflow.schema.steps import StepBase


def prepare_handler(step: StepBase, pc: PrepareContext) -> Workflow | None:
    try:
        return load_block(pc.block(f"{step.id}-on_error", step.on_error),
                          filename=f"{pc.filename} (step {step.id!r} on_error)",
                          base_dir=pc.base_dir, library=pc.library)
    except NestingError as exc:
        pc.report(exc.message, "on_error")
    except WorkflowError as exc:
        pc.report(f"the on_error block has problems: {problems_text(exc)}", "on_error")
    return None


async def run_handler(node: StepNode, ctx: RunContext, result: StepResult) -> bool:
    """Run the step's `on_error` block after its failure; True if the failure is handled."""
    handler: Workflow | None = node.handler
    if handler is None:
        return False
    handler = block_under(node, "on_error", handler, ctx.workflow)
    state = deep_copy(ctx.state)
    state["error"] = {"step": node.id, "message": result.error, "type": result.error_type}
    try:
        run = await ctx.run_child(handler, state=state, run_id=f"{ctx.run_id}/{node.id}.on_error",
                              scope=f"{node.id}/on_error")
    except NestingError as exc:
        result.reason = f"on_error not run: {exc.message}"
        return False
    raise_if_paused(run)
    if run.status is not RunStatus.SUCCESS:
        result.error = f"{result.error}; its on_error block failed too: {first_failure(run)}"
        return False
    for child in handler.nodes.values():
        r = run.steps[child.id]
        if child.output_path is not None and r.status is StepStatus.SUCCESS:
            assign(ctx.state, child.output_path, _value(r.output))
    result.reason = "failure handled by on_error"
    return True


def _value(value: Any) -> Any:
    return deep_copy(value)
