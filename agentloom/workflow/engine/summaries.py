"""Each step's run summary (spec 002): the loop reports every conversation's end to a
`SummaryCatcher`, and `step_summary` folds a step's attempts into one summary.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentloom.loop.collector import SummaryRecord
from agentloom.loop.observer import NullObserver

if TYPE_CHECKING:
    from agentloom.workflow.engine.context import RunContext


class SummaryCatcher(NullObserver):
    """An observer keeping each loop's ConversationSummary for the step's result (on
    success and failure alike: the loop reports the end of every conversation). It takes
    the loop's `SummaryRecord` (`on_summary_record`), so the pydantic summary is built
    only when the step's result is read. The other callbacks are inherited no-ops: a
    callback looked up and not found costs the loop an AttributeError at every event."""

    __slots__ = ("_ctx", "_step_id")

    def __init__(self, ctx: RunContext, step_id: str) -> None:
        self._ctx, self._step_id = ctx, step_id

    def on_summary_record(self, record: Any) -> None:
        self._ctx.summaries.setdefault(self._step_id, []).append(record)

    def on_conversation_end(self, summary: Any) -> None:
        self._ctx.summaries.setdefault(self._step_id, []).append(summary)


def step_summary(ctx: RunContext, step_id: str) -> Any:
    """The step's summary: its last loop's, with the failed attempts of earlier engine
    attempts in front (so every failure of the step stays visible). A single loop's is
    returned as its record when it has one (`StepResult.summary` builds it when read)."""
    runs = ctx.summaries.get(step_id)
    if not runs:
        return None
    if len(runs) == 1:
        return runs[0]
    runs = [s.summary if isinstance(s, SummaryRecord) else s for s in runs]
    last = runs[-1]
    earlier = tuple(fa for s in runs[:-1] for fa in s.failed_attempts)
    retries = sum(s.provider_retries + 1 for s in runs[:-1])
    return last.model_copy(update={
        "failed_attempts": earlier + tuple(last.failed_attempts),
        "provider_retries": last.provider_retries + retries,
    })
