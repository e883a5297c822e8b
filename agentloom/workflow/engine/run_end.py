"""A run's end: how its steps and its status stand once nothing runs, and the report.

The scheduler (`run.py`) calls these after its last step: steps cut off by the run's
deadline are marked cancelled, a step that failed unhandled fails the run, a cap that
refused a call or a step ends it `budget_exceeded`; the final outputs are the leaf
steps' (by their `output` name), and the report adds the breakers and the budget.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentloom.workflow.engine.result import RunResult, RunStatus, StepResult, StepStatus
from agentloom.workflow.engine.spending import refused

if TYPE_CHECKING:
    from agentloom.workflow.engine.context import RunContext
    from agentloom.workflow.load.workflow import Workflow


def cancel_running(results: dict[str, StepResult], error: str) -> None:
    """Mark the steps in flight when the run's deadline passed as cancelled by it."""
    for r in results.values():
        if r.status is StepStatus.RUNNING:
            r.status = StepStatus.CANCELLED
            r.reason = "cancelled: run deadline exceeded"
            r.error, r.error_type = error, "DeadlineExceeded"


def end_status(ctx: RunContext, results: dict[str, StepResult], handled: set[str],
               status: RunStatus, error: str | None) -> tuple[RunStatus, str | None]:
    """The run's final (status, error): a failure no on_error block handled fails a run
    that was succeeding; a refused cap makes a succeeding or failed run budget_exceeded."""
    failed = [r for r in results.values()
              if r.status is StepStatus.FAILED and r.id not in handled]
    if status is RunStatus.SUCCESS and failed:
        status = RunStatus.FAILED
        error = f"step {failed[0].id!r} failed: {failed[0].error}"
    refusal = refused(ctx)
    if refusal is not None and status in (RunStatus.SUCCESS, RunStatus.FAILED):
        status, error = RunStatus.BUDGET_EXCEEDED, str(refusal)
    return status, error


def final_outputs(workflow: Workflow, results: dict[str, StepResult]) -> dict[str, Any]:
    """What the run's leaf steps produced, by their `output` name (else their id)."""
    out: dict[str, Any] = {}
    for node in workflow.nodes.values():
        r = results[node.id]
        if node.dependents or r.status is not StepStatus.SUCCESS:
            continue
        out[node.step.output or node.id] = r.output if node.step.output else r.text
    return out


def summarize_run(ctx: RunContext, result: RunResult) -> None:
    """Add the run's circuit breakers and its budget, as they stand, to its report."""
    snapshot = getattr(ctx.clients, "breaker_snapshot", None)
    result.breakers = snapshot() if callable(snapshot) else None
    budget = ctx.budget
    result.budget = None if budget is None else budget.snapshot()
