"""What the public AgentLoom's `WorkflowEngine.run()` returns, built from our `RunResult`.

Their result types in their field names (`step_results`, `final_state`,
`total_duration_ms`, `total_cost_usd`, `token_usage`, ...). One difference is kept on
purpose and documented in docs/compat-examples.md: where our engine does not know a cost
(a model with no price), theirs says 0.0; we say 0.0 too for their float fields, and
`cost_known` tells the two apart.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class StepStatus(enum.StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    SUCCESS = "success"
    FAILED = "failed"
    SKIPPED = "skipped"
    TIMEOUT = "timeout"
    PAUSED = "paused"


class WorkflowStatus(enum.StrEnum):
    SUCCESS = "success"
    FAILED = "failed"
    TIMEOUT = "timeout"
    BUDGET_EXCEEDED = "budget_exceeded"
    PAUSED = "paused"


_RUN_STATUS = {
    "success": WorkflowStatus.SUCCESS,
    "failed": WorkflowStatus.FAILED,
    "deadline_exceeded": WorkflowStatus.TIMEOUT,
    "budget_exceeded": WorkflowStatus.BUDGET_EXCEEDED,
    "cancelled": WorkflowStatus.FAILED,
    "paused": WorkflowStatus.PAUSED,
    "needs_decision": WorkflowStatus.PAUSED,
}
_STEP_STATUS = {
    "pending": StepStatus.PENDING,
    "running": StepStatus.RUNNING,
    "success": StepStatus.SUCCESS,
    "failed": StepStatus.FAILED,
    "skipped": StepStatus.SKIPPED,
    "cancelled": StepStatus.FAILED,
    "paused": StepStatus.PAUSED,
}


@dataclass(slots=True)
class TokenUsage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    reasoning_tokens: int = 0


@dataclass(slots=True)
class StepResult:
    step_id: str
    status: StepStatus
    output: Any = None
    error: str | None = None
    duration_ms: float = 0.0
    token_usage: TokenUsage = field(default_factory=TokenUsage)
    cost_usd: float = 0.0
    model: str | None = None
    provider: str | None = None
    time_to_first_token_ms: float | None = None


@dataclass(slots=True)
class WorkflowResult:
    workflow_name: str
    status: WorkflowStatus
    step_results: dict[str, StepResult] = field(default_factory=dict)
    final_state: dict[str, Any] = field(default_factory=dict)
    total_duration_ms: float = 0.0
    total_tokens: int = 0
    total_cost_usd: float = 0.0
    error: str | None = None
    run_id: str = ""
    cost_known: bool = True
    """False when some model call's price is unknown (their engine would say $0)."""
    result: Any = None
    """Our own `RunResult`, with everything the adapters leave out."""


def _usage(u: Any) -> TokenUsage:
    if u is None:
        return TokenUsage()
    return TokenUsage(prompt_tokens=u.input_tokens or 0, completion_tokens=u.output_tokens or 0,
                      total_tokens=u.total_tokens or 0, reasoning_tokens=u.reasoning_tokens or 0)


def step_status(ours: str, *, paused: bool) -> StepStatus:
    if paused:
        return StepStatus.PAUSED
    return _STEP_STATUS.get(ours, StepStatus.FAILED)


def paused_step_ids(result: Any) -> set[str]:
    """The step a paused run waits on (a nested one's id is `parent.child`)."""
    step_id = getattr(getattr(result, "pause", None), "step_id", None)
    return {step_id.split(".", 1)[0]} if isinstance(step_id, str) and step_id else set()


def from_run(result: Any) -> WorkflowResult:
    """Their WorkflowResult from our RunResult."""
    paused = paused_step_ids(result)
    steps: dict[str, StepResult] = {}
    for sid, r in result.steps.items():
        cost = r.cost_usd
        ttft = r.time_to_first_token
        steps[sid] = StepResult(
            step_id=sid,
            status=step_status(r.status.value, paused=sid in paused),
            output=r.output,
            error=r.error,
            duration_ms=(r.duration_seconds or 0.0) * 1000.0,
            token_usage=_usage(r.usage),
            cost_usd=float(cost) if cost is not None else 0.0,
            model=r.model,
            provider=r.provider,
            time_to_first_token_ms=None if ttft is None else ttft * 1000.0,
        )
    cost = result.cost_usd
    known = cost is not None or all(
        r.usage is None or r.usage.cost_usd is not None for r in result.steps.values())
    return WorkflowResult(
        workflow_name=result.workflow,
        status=_RUN_STATUS.get(result.status.value, WorkflowStatus.FAILED),
        step_results=steps,
        final_state=dict(result.state),
        total_duration_ms=result.duration_seconds * 1000.0,
        total_tokens=result.tokens or 0,
        total_cost_usd=float(cost) if cost is not None else 0.0,
        error=result.error,
        run_id=result.run_id,
        cost_known=known,
        result=result,
    )
