"""Each step's run summary (spec 002): the loop reports every conversation's end to a
`SummaryCatcher`, and `step_summary` folds a step's attempts into one summary.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any

from agentloom.loop.collector import SummaryRecord
from agentloom.loop.tool_names import redacted_summary
from agentloom.messages import Usage

if TYPE_CHECKING:
    from agentloom.redact import Redactor
    from agentloom.workflow.engine.context import RunContext


class SummaryCatcher:
    """An observer keeping each loop's ConversationSummary for the step's result (on
    success and failure alike: the loop reports the end of every conversation). It takes
    the loop's `SummaryRecord` (`on_summary_record`), so the pydantic summary is built
    only when the step's result is read. Every other callback is None, which the loop's
    dispatcher skips without a call (`Dispatch.emit`); a callback not found at all would
    cost it an AttributeError at every event."""

    __slots__ = ("_ctx", "_step_id")

    on_conversation_start = on_request = on_attempt = on_retry = on_text_delta = None
    on_response = on_model_error = on_tool_start = on_tool_end = on_stall = None
    on_budget_warning = None

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
    redactor = ctx.redactor
    if redactor is not None:
        # The model names the tools it calls: a name made of a secret it was shown must
        # not reach `--json`, a results line or a report (the run's redactor walks
        # values, and tool names are the keys of the summary's counts).
        runs = [_redacted(s, redactor) for s in runs]
    if len(runs) == 1:
        return runs[0]
    runs = [s.summary if isinstance(s, SummaryRecord) else s for s in runs]
    last = runs[-1]
    retries = sum(s.provider_retries + 1 for s in runs[:-1])
    return last.model_copy(update={
        "failed_attempts": _numbered_across(runs),
        "provider_retries": last.provider_retries + retries,
    })


def _redacted(summary: Any, redactor: Redactor) -> Any:
    """A loop's summary (or its record) with its tool names redacted by `redactor`."""
    if isinstance(summary, SummaryRecord):
        summary.redact_names(redactor)  # applied when built, if it isn't yet
        return summary
    return redacted_summary(summary, redactor)


def _numbered_across(runs: list[Any]) -> tuple[Any, ...]:
    """Every run's failed attempts, numbered per candidate across the step's engine
    attempts: each engine attempt is a new call whose loop counts from 1 again, and a
    step retried three times must read attempts 1, 2, 3, 4 of its model, not 1 four
    times."""
    reached: dict[tuple[str, str], int] = {}
    out: list[Any] = []
    for run in runs:
        offsets = dict(reached)
        for fa in run.failed_attempts:
            key = (fa.provider, fa.model)
            number = fa.attempt + offsets.get(key, 0)
            if number != fa.attempt:
                fa = fa.model_copy(update={"attempt": number})
            reached[key] = max(reached.get(key, 0), number)
            out.append(fa)
    return tuple(out)


def loops_usage(ctx: RunContext, step_id: str, stop: int | None = None) -> Usage | None:
    """Tokens and cost of a step's loops (the first `stop` of them; all without): the
    answered calls of attempts that failed and were retried count in the step's total
    (spec 000: "every call the step made"). None when no loop reported usage."""
    total: Usage | None = None
    for s in (ctx.summaries.get(step_id) or [])[:stop]:
        summary = s.summary if isinstance(s, SummaryRecord) else s
        u = getattr(summary, "usage", None)
        if u is None or (u.input_tokens is None and u.output_tokens is None):
            continue
        # The provider's own figure when it reported one, else the price table's (the
        # summary keeps the two apart; a step's usage carries whichever it has).
        cost = u.cost_usd
        estimated = cost is None
        if estimated:
            cost = getattr(summary, "estimated_cost_usd", None)
        usage = Usage(input_tokens=u.input_tokens, output_tokens=u.output_tokens,
                      cache_read_tokens=u.cache_read_tokens,
                      cache_write_tokens=u.cache_write_tokens,
                      reasoning_tokens=u.reasoning_tokens,
                      cost_usd=None if cost is None else Decimal(str(cost)),
                      cost_estimated=estimated and cost is not None,
                      input_includes_cached=u.input_includes_cached)
        total = usage if total is None else total + usage
    return total


def with_earlier(usage: Usage | None, earlier: Usage | None) -> Usage | None:
    if earlier is None:
        return usage
    return earlier if usage is None else earlier + usage
