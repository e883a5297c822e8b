"""The `approval_gate` step: the run pauses until a person approves or rejects.

The first time the step runs it raises `PauseRun`; the run is saved `paused` and
`agentloom resume RUN_ID --approve|--reject` brings the decision back. The decision
(`approved` or `rejected`) goes to `output`; both let the run go on, so later steps can
branch on it. `timeout_seconds` counts from the moment the run paused (the store's
timestamp): a resume after it applies `on_timeout`, or fails the step when there is none.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC
from typing import TYPE_CHECKING

from agentloom.errors import DeadlineExceeded
from agentloom.workflow._durable import PauseRun, current_durable
from agentloom.workflow._result import StepOutcome

if TYPE_CHECKING:
    from agentloom.workflow._context import RunContext
    from agentloom.workflow._loader import PrepareContext
    from agentloom.workflow._schema_steps import ApprovalGateStep
    from agentloom.workflow._templates import Template
    from agentloom.workflow._workflow import StepNode


@dataclass(slots=True, frozen=True)
class Prepared:
    message: Template | None


def prepare(step: ApprovalGateStep, pc: PrepareContext) -> Prepared:
    return Prepared(message=None if step.message is None
                    else pc.template(step.message, "message"))


async def execute(node: StepNode, ctx: RunContext) -> StepOutcome:
    step: ApprovalGateStep = node.step  # type: ignore[assignment]
    prep: Prepared = node.prepared
    message = (prep.message.render(ctx.scope) if prep.message is not None
               else f"approve step {node.id!r} of workflow {ctx.workflow.name!r}?")
    durable = current_durable.get()
    got = durable.take_decision(node.id) if durable is not None else None
    if got is None or durable is None:
        raise PauseRun("approval", message, data={
            "timeout_seconds": step.timeout_seconds, "on_timeout": step.on_timeout})
    decision, paused_at = got
    approve = decision.approve
    if step.timeout_seconds is not None and paused_at is not None:
        at = paused_at if paused_at.tzinfo is not None else paused_at.replace(tzinfo=UTC)
        waited = (durable.clock_now() - at).total_seconds()
        if waited > step.timeout_seconds:
            if step.on_timeout is None:
                raise DeadlineExceeded(
                    f"approval of step {node.id!r} timed out: resumed {waited:.0f}s after "
                    f"the pause, over timeout_seconds={step.timeout_seconds:g}, and the "
                    "step sets no on_timeout", scope="step")
            approve = step.on_timeout == "approve"
    if approve is None:
        raise PauseRun("approval", message + " (resume with --approve or --reject)",
                       data={"timeout_seconds": step.timeout_seconds,
                             "on_timeout": step.on_timeout})
    value = "approved" if approve else "rejected"
    return StepOutcome(value=value, text=value)
