"""What a run returns: the run's status and, per step, what happened and what it cost.

Statuses are closed enums so callers branch on them, never on error text. Cost and token
fields are None when unknown, never zero. `to_dict()` is what `agentloom run --json`
prints.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import field
from decimal import Decimal
from typing import Any

from agentloom._record import FACTORY, Record, record
from agentloom.messages import Usage


class RunStatus(enum.StrEnum):
    SUCCESS = "success"
    FAILED = "failed"
    DEADLINE_EXCEEDED = "deadline_exceeded"
    BUDGET_EXCEEDED = "budget_exceeded"
    CANCELLED = "cancelled"
    PAUSED = "paused"
    """Waiting for a person (approval_gate, ask); `agentloom resume` continues it."""
    NEEDS_DECISION = "needs_decision"
    """A non-idempotent tool call was in flight when the run died: a person decides."""


class StepStatus(enum.StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    SUCCESS = "success"
    FAILED = "failed"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"
    PAUSED = "paused"
    """The step the run is waiting on (an approval_gate or ask); the others stay pending."""


@record
class StepOutcome(Record):
    """What a step module returns; the engine turns it into a StepResult and state."""

    value: Any = None
    """Written to the step's `output` key."""
    text: str | None = None
    """The raw text, readable as `{steps.<id>.output}`."""
    usage: Usage | None = None
    model: str | None = None
    provider: str | None = None
    finish_reason: str | None = None
    time_to_first_token: float | None = None
    reasoning_content: str | None = None
    iterations: int | None = None
    structured_output: str | None = None
    """How a response schema was asked for: native, prompted or tool (None: no schema)."""
    chosen: str | None = None
    """A router's chosen target (None: no branch taken)."""
    not_taken: tuple[str, ...] = ()

    def __init__(
        self, *, value: Any = None, text: str | None = None, usage: Usage | None = None,
        model: str | None = None, provider: str | None = None, finish_reason: str | None = None,
        time_to_first_token: float | None = None, reasoning_content: str | None = None,
        iterations: int | None = None, structured_output: str | None = None,
        chosen: str | None = None, not_taken: tuple[str, ...] = (),
    ) -> None:
        self.value = value
        self.text = text
        self.usage = usage
        self.model = model
        self.provider = provider
        self.finish_reason = finish_reason
        self.time_to_first_token = time_to_first_token
        self.reasoning_content = reasoning_content
        self.iterations = iterations
        self.structured_output = structured_output
        self.chosen = chosen
        self.not_taken = not_taken


@record
class StepResult(Record):
    """How one step ended: its status, output, error and usage."""

    id: str
    type: str
    status: StepStatus = StepStatus.PENDING
    output: Any = None
    text: str | None = None
    error: str | None = None
    error_type: str | None = None
    reason: str | None = None
    """Why a step was skipped or cancelled."""
    attempts: int = 0
    usage: Usage | None = None
    model: str | None = None
    provider: str | None = None
    finish_reason: str | None = None
    time_to_first_token: float | None = None
    reasoning_content: str | None = None
    iterations: int | None = None
    started_at: float | None = None
    duration_seconds: float | None = None
    fallback_used: bool | None = None
    """Whether a fallback entry answered instead of the step's first provider and model
    (None: not a routed model call)."""
    structured_output: str | None = None
    """How the step's response schema reached the model: `native` (the provider's JSON
    schema mode), `prompted` (in the system prompt) or `tool` (a forced tool call)."""
    _summary: Any = field(default=None, repr=False)

    def __init__(
        self, *, id: str, type: str, status: StepStatus = StepStatus.PENDING, output: Any = None,
        text: str | None = None, error: str | None = None, error_type: str | None = None,
        reason: str | None = None, attempts: int = 0, usage: Usage | None = None,
        model: str | None = None, provider: str | None = None, finish_reason: str | None = None,
        time_to_first_token: float | None = None, reasoning_content: str | None = None,
        iterations: int | None = None, started_at: float | None = None,
        duration_seconds: float | None = None, fallback_used: bool | None = None,
        structured_output: str | None = None, _summary: Any = None,
    ) -> None:
        self.id = id
        self.type = type
        self.status = status
        self.output = output
        self.text = text
        self.error = error
        self.error_type = error_type
        self.reason = reason
        self.attempts = attempts
        self.usage = usage
        self.model = model
        self.provider = provider
        self.finish_reason = finish_reason
        self.time_to_first_token = time_to_first_token
        self.reasoning_content = reasoning_content
        self.iterations = iterations
        self.started_at = started_at
        self.duration_seconds = duration_seconds
        self.fallback_used = fallback_used
        self.structured_output = structured_output
        self._summary = _summary

    @property
    def summary(self) -> Any:
        """The metadata-only `ConversationSummary` of a model step (spec 002): statuses,
        attempts (failed ones with request_sent), retries, usage; never content. The loop
        hands over a record; the pydantic model is built on first read."""
        s = self._summary
        if getattr(type(s), "builds_summary", False):
            s = self._summary = s.summary  # a loop's SummaryRecord
        return s

    @summary.setter
    def summary(self, value: Any) -> None:
        self._summary = value

    @property
    def tokens(self) -> int | None:
        return None if self.usage is None else self.usage.total_tokens

    @property
    def cost_usd(self) -> Decimal | None:
        return None if self.usage is None else self.usage.cost_usd

    def to_dict(self) -> dict[str, Any]:
        u = self.usage
        return {
            "id": self.id, "type": self.type, "status": self.status.value,
            "output": _jsonable(self.output), "text": self.text,
            "error": self.error, "error_type": self.error_type, "reason": self.reason,
            "attempts": self.attempts,
            "tokens": None if u is None else {
                "input": u.input_tokens, "output": u.output_tokens,
                "reasoning": u.reasoning_tokens, "cache_read": u.cache_read_tokens,
                "cache_write": u.cache_write_tokens, "total": u.total_tokens,
            },
            "cost_usd": None if self.cost_usd is None else float(self.cost_usd),
            "model": self.model, "provider": self.provider,
            "finish_reason": self.finish_reason,
            "time_to_first_token": self.time_to_first_token,
            "reasoning_content": self.reasoning_content,
            "iterations": self.iterations,
            "duration_seconds": self.duration_seconds,
            "fallback_used": self.fallback_used,
            "structured_output": self.structured_output,
            "summary": None if self.summary is None
            else self.summary.model_dump(mode="json", exclude_none=False),
        }


@record
class RunResult(Record):
    """How a workflow run ended: its status, each step's result, the state and the outputs."""

    workflow: str
    run_id: str
    status: RunStatus
    steps: dict[str, StepResult]
    state: dict[str, Any]
    duration_seconds: float
    error: str | None = None
    final_outputs: dict[str, Any] = field(default_factory=dict)
    """Outputs of the steps nothing depends on that succeeded: what a run "answers"."""
    pause: Any = None
    """The pause signal (a `PauseRun`) of a paused run, so a parent run re-raises it."""
    breakers: dict[str, Any] | None = None
    """Each endpoint's circuit breaker state at the end of the run (None: no runtime)."""
    budget: dict[str, Any] | None = None
    """The run budget's caps and what was spent (None: no budget set)."""

    def __init__(
        self, *, workflow: str, run_id: str, status: RunStatus, steps: dict[str, StepResult],
        state: dict[str, Any], duration_seconds: float, error: str | None = None,
        final_outputs: dict[str, Any] = FACTORY, pause: Any = None,
        breakers: dict[str, Any] | None = None, budget: dict[str, Any] | None = None,
    ) -> None:
        self.workflow = workflow
        self.run_id = run_id
        self.status = status
        self.steps = steps
        self.state = state
        self.duration_seconds = duration_seconds
        self.error = error
        self.final_outputs = {} if final_outputs is FACTORY else final_outputs
        self.pause = pause
        self.breakers = breakers
        self.budget = budget

    @property
    def summary(self) -> dict[str, Any]:
        """The run's own summary, metadata only: status, steps by status, tokens, cost
        (None if any call's cost is unknown), elapsed, provider retries, fallbacks used,
        breaker states and the budget."""
        by_status: dict[str, int] = {}
        retries = 0
        fallbacks = 0
        for r in self.steps.values():
            by_status[r.status.value] = by_status.get(r.status.value, 0) + 1
            # A model step's summary already counts its earlier engine attempts.
            if r.summary is not None:
                retries += r.summary.provider_retries
            else:
                retries += max(0, r.attempts - 1)
            fallbacks += bool(r.fallback_used)
        cost = self.cost_usd
        return {
            "status": self.status.value,
            "steps": by_status,
            "tokens": self.tokens,
            "cost_usd": None if cost is None else float(cost),
            "elapsed_seconds": self.duration_seconds,
            "retries": retries,
            "fallbacks_used": fallbacks,
            "breakers": _jsonable(self.breakers),
            "budget": _jsonable(self.budget),
            "models": self.models,
        }

    @property
    def models(self) -> list[dict[str, str | None]]:
        """Who answered: each (model, provider) of a step's model calls, once, in step
        order (what the CLI's summary line names)."""
        seen = {(r.model, r.provider): None for r in self.steps.values() if r.model}
        return [{"model": m, "provider": p} for m, p in seen]

    @property
    def ok(self) -> bool:
        return self.status is RunStatus.SUCCESS

    @property
    def usage(self) -> Usage | None:
        total: Usage | None = None
        for r in self.steps.values():
            if r.usage is not None:
                total = r.usage if total is None else total + r.usage
        return total

    @property
    def tokens(self) -> int | None:
        u = self.usage
        return None if u is None else u.total_tokens

    @property
    def cost_usd(self) -> Decimal | None:
        """None when any model call's cost is unknown: a partial sum would lie."""
        return total_cost(self.steps.values())

    def to_dict(self) -> dict[str, Any]:
        cost = self.cost_usd
        return {
            "workflow": self.workflow, "run_id": self.run_id, "status": self.status.value,
            "error": self.error, "duration_seconds": self.duration_seconds,
            "tokens": self.tokens, "cost_usd": None if cost is None else float(cost),
            "outputs": _jsonable(self.final_outputs),
            "summary": self.summary,
            "steps": {k: v.to_dict() for k, v in self.steps.items()},
            "state": _jsonable(self.state),
        }


def _jsonable(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    return value


def total_cost(results: Iterable[StepResult]) -> Decimal | None:
    """The steps' cost together; None when any model call's cost is unknown (a partial
    sum would lie) or no step reported usage."""
    total, seen = Decimal(0), False
    for r in results:
        if r.usage is None:
            continue
        if r.usage.cost_usd is None:
            return None
        total += r.usage.cost_usd
        seen = True
    return total if seen else None
