"""The `approval_gate` step: the run pauses until a person approves or rejects.

The first time the step runs it raises `PauseRun`; the run is saved `paused` and
`agentloom resume RUN_ID --approve|--reject` brings the decision back. The decision
(`approved` or `rejected`) goes to `output`; both let the run go on, so later steps can
branch on it. `timeout_seconds` counts from the moment the run paused (the store's
timestamp): a resume after it applies `on_timeout`, or fails the step when there is none.

`notify` POSTs a JSON event when the gate first pauses (`steps.notify`); whether it got
through is noted in the pause, and it never costs the pause itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentloom.errors import DeadlineExceeded
from agentloom.workflow.engine.pause import PauseRun, waited_too_long
from agentloom.workflow.engine.result import StepOutcome
from agentloom.workflow.load.secret_checks import WRITTEN_KEY, credential_headers
from agentloom.workflow.steps.notify import send_notification

if TYPE_CHECKING:
    from agentloom.workflow.engine.context import RunContext
    from agentloom.workflow.lang.templates import Template
    from agentloom.workflow.load.loader import PrepareContext
    from agentloom.workflow.load.workflow import StepNode
    from agentloom.workflow.schema.other_steps import ApprovalGateStep


@dataclass(slots=True, frozen=True)
class Prepared:
    message: Template | None
    notify_body: Template | None = None


def prepare(step: ApprovalGateStep, pc: PrepareContext) -> Prepared:
    body = step.notify.body_template if step.notify is not None else None
    for header in credential_headers(step.notify.headers if step.notify else {}):
        pc.warn(WRITTEN_KEY.format(instead=f"notify.headers_env: {{{header}: VARIABLE}}"),
                "notify", "headers", header)
    return Prepared(
        message=None if step.message is None else pc.template(step.message, "message"),
        notify_body=None if body is None else pc.template(body, "notify.body_template"),
    )


async def execute(node: StepNode, ctx: RunContext) -> StepOutcome:
    step: ApprovalGateStep = node.step  # type: ignore[assignment]
    prep: Prepared = node.prepared
    message = (prep.message.render(ctx.scope) if prep.message is not None
               else f"approve step {node.id!r} of workflow {ctx.workflow.name!r}?")
    durable = ctx.durable
    got = durable.take_decision(node.id) if durable is not None else None
    if got is None or durable is None:
        data: dict[str, Any] = {"timeout_seconds": step.timeout_seconds,
                                "on_timeout": step.on_timeout}
        if step.notify is not None:
            body = None if prep.notify_body is None else prep.notify_body.render(ctx.scope)
            data["notified"] = await send_notification(step.notify, node.id, message, body,
                                                       ctx)
        raise PauseRun("approval", message, data=data)
    decision, paused_at = got
    approve = decision.approve
    waited = waited_too_long(paused_at, durable.clock_now(), step.timeout_seconds)
    if waited is not None:
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
