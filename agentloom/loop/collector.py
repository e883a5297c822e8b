"""SummaryCollector: builds a ConversationSummary from the same callbacks any observer gets.

The loop owns what only it knows (ids, iterations, limits, elapsed time, status, the
error); everything countable from events (tokens, retries, attempts, tool counts and
durations, the timeline) is gathered here, through the public observer interface. One
collector serves one conversation, so concurrent runs never share counters.
"""

from __future__ import annotations

import functools
from dataclasses import field
from datetime import datetime
from decimal import Decimal
from types import ModuleType
from typing import TYPE_CHECKING, Any

from agentloom._record import FACTORY, Record, record
from agentloom.loop.error_facts import attr, error_fields, error_type_name, kind_name
from agentloom.loop.observer import ConversationInfo, NullObserver, RunInfo
from agentloom.loop.status import (
    ConversationStatus,
    cache_hit_rate,
    normalized_stop_reason,
    usage_fields,
)
from agentloom.loop.tool_names import (
    MAX_NAME,
    MAX_NAMES,
    OTHER,
    bounded_name,
    declared_names,
    redacted_counts,
    redacted_names,
    redacted_summary,
)
from agentloom.messages import ModelRequest, ModelResponse, ToolCallPart, ToolResultPart, Usage
from agentloom.providers import AttemptRecord
from agentloom.redact import Redactor

if TYPE_CHECKING:
    from agentloom.loop.summary import ConversationSummary, FailedAttempt, TurnRecord


@functools.cache
def summary_models() -> ModuleType:
    """`agentloom.loop.summary`, imported when a summary (or a failed attempt's record)
    is first built: its pydantic models cost more to define than a one-step run of the
    command line spends on its own code, and most workflow runs never read a summary."""
    from agentloom.loop import summary

    return summary

_NO_USAGE = Usage()
_NONE_YET: list[Any] = []
"""Shared by every collector for a list it has not needed yet: never appended to."""


@record(kw_only=False)
class _Turn(Record):
    """One model call of a conversation, as its summary counts it."""

    index: int
    duration: float = 0.0
    stop_reason: str | None = None
    usage: Usage | None = None
    attempts: int = 0
    tools: list[str] = field(default_factory=list)
    tool_errors: list[str] = field(default_factory=list)
    discarded: bool = False
    error_type: str | None = None

    def __init__(
        self, index: int, duration: float = 0.0, stop_reason: str | None = None,
        usage: Usage | None = None, attempts: int = 0, tools: list[str] = FACTORY,
        tool_errors: list[str] = FACTORY, discarded: bool = False, error_type: str | None = None,
    ) -> None:
        self.index = index
        self.duration = duration
        self.stop_reason = stop_reason
        self.usage = usage
        self.attempts = attempts
        self.tools = [] if tools is FACTORY else tools
        self.tool_errors = [] if tool_errors is FACTORY else tool_errors
        self.discarded = discarded
        self.error_type = error_type


class SummaryCollector(NullObserver):
    """Gathers one conversation's counters; `build()` turns them into the summary.

    Tool names are counted as the loop reports them, bounded: a name `toolbox` declares
    by its own name; any other (the model's invention) cut at `MAX_NAME` characters, and
    past `MAX_NAMES` distinct names summed under `OTHER`."""

    toolbox: object | None = None
    """The run's tools (the loop sets it at the run's first tool call)."""
    name_redactor: Redactor | None = None
    """Redacts the tool names of the summary when it is built (`SummaryRecord.redact_names`)."""
    _named: set[str] | None = None
    """The names counted by name so far (or about to be: a timeline's started call)."""
    _declared: frozenset[str] | None = None
    """`declared_names(toolbox)`, found when first needed."""

    def __init__(self, *, timeline: bool = False) -> None:
        self._timeline = timeline
        self.usage = _NO_USAGE
        self.provider_cost: Decimal | None = None
        """Cost the providers reported, summed (price-table figures apart)."""
        self.estimated_cost: Decimal | None = None
        self.provider: str | None = None
        self.model: str | None = None
        self.provider_retries = 0
        self.retry_wait_seconds = 0.0
        self.model_seconds = 0.0
        self.tool_duration_seconds = 0.0
        self.tool_calls: dict[str, int] = {}
        self.tool_errors: dict[str, int] = {}
        self.failed_attempts: list[FailedAttempt] = _NONE_YET
        """The shared empty list until an attempt fails (most runs have none)."""
        self._call_attempts: list[AttemptRecord] = _NONE_YET
        """Attempts of the model call in flight (or the last one); the shared empty
        list until the first attempt (a list per run less for the collector to walk)."""
        self.finish_reason: str | None = None
        self._turns: list[_Turn] = [] if timeline else _NONE_YET
        """One per model call, kept only for a timeline (never appended to without)."""
        self._call_failed = False
        """The model call in flight (or the last one) raised."""

    # --- model calls ---------------------------------------------------------------
    def on_request(self, request: ModelRequest, iteration: int) -> None:
        self._call_attempts = _NONE_YET
        self._call_failed = False
        if self._timeline:
            self._turns.append(_Turn(index=iteration))

    def on_attempt(self, record: AttemptRecord) -> None:
        if self._call_attempts is _NONE_YET:
            self._call_attempts = [record]
        else:
            self._call_attempts.append(record)
        self.retry_wait_seconds += record.wait_before_seconds
        if len(self._call_attempts) > 1:
            self.provider_retries += 1
        if not record.ok:
            if self.failed_attempts is _NONE_YET:
                self.failed_attempts = []
            self.failed_attempts.append(summary_models().FailedAttempt(
                provider=record.provider, model=record.model, attempt=record.attempt,
                error_type=kind_name(record.error_type, record.status, record.phase),
                status_code=record.status,
                phase=record.phase, request_sent=record.request_sent,
                duration_seconds=record.duration_seconds,
            ))
        if self._turns:
            self._turns[-1].attempts += 1

    def on_response(
        self, response: ModelResponse, iteration: int, duration_seconds: float
    ) -> None:
        # Usage() + u == u field for field, and Usage is frozen: skip the sum on turn one.
        usage = response.usage
        self.usage = usage if self.usage is _NO_USAGE else self.usage + usage
        cost = usage.cost_usd
        if cost is not None:
            self.estimated_cost = cost if self.estimated_cost is None else (
                self.estimated_cost + cost)
            if not usage.cost_estimated:
                self.provider_cost = cost if self.provider_cost is None else (
                    self.provider_cost + cost)
        self.provider = response.provider or self.provider
        self.model = response.model or self.model
        self.model_seconds += duration_seconds
        self.finish_reason = response.finish_reason
        if self._turns:
            turn = self._turns[-1]
            turn.duration = duration_seconds
            turn.stop_reason = normalized_stop_reason(response.finish_reason,
                                                      bool(response.tool_calls))
            turn.usage = usage
            turn.attempts = max(turn.attempts, 1)

    def on_model_error(
        self, error: BaseException, iteration: int, duration_seconds: float
    ) -> None:
        self.model_seconds += duration_seconds
        self._call_failed = True
        if self._turns:
            turn = self._turns[-1]
            turn.duration = duration_seconds
            turn.error_type = error_type_name(error)
            turn.attempts = max(turn.attempts, 1)

    def discard_turn(self) -> None:
        """The last reply was cut off unusably and is asked again (`TurnRecord.discarded`)."""
        if self._turns:
            self._turns[-1].discarded = True

    # --- tools -----------------------------------------------------------------------
    def on_tool_start(self, call: ToolCallPart) -> None:
        # Tools start in call order (they finish in any order).
        if self._turns:
            name = call.name
            self._turns[-1].tools.append(name if name in self.tool_calls else self._key(name))

    def on_tool_end(
        self, call: ToolCallPart, result: ToolResultPart, duration_seconds: float
    ) -> None:
        name = call.name
        calls = self.tool_calls
        count = calls.get(name)
        if count is None:  # a name not counted yet: the one lookup more is here
            name = self._key(name)
            count = calls.get(name, 0)
        calls[name] = count + 1
        self.tool_duration_seconds += duration_seconds
        if result.is_error:
            self.tool_errors[name] = self.tool_errors.get(name, 0) + 1
            if self._turns:
                self._turns[-1].tool_errors.append(name)

    def _key(self, name: str) -> str:
        """The name `name` is counted under, the first time it is seen (and each time for
        a name cut or summed): itself while fewer than `MAX_NAMES` names are counted, or
        when the run's tools declare it; else cut, or `OTHER` past `MAX_NAMES`."""
        if type(name) is not str:  # not from a provider's reply: counted as it is
            return name
        named = self._named
        if named is None:
            named = self._named = set()
        if len(name) <= MAX_NAME and (len(named) < MAX_NAMES or name in named):
            named.add(name)
            return name
        declared = self._declared
        if declared is None:
            declared = self._declared = declared_names(self.toolbox)
        if name in declared:
            return name
        key = bounded_name(name)
        if key in named:
            return key
        if len(named) < MAX_NAMES:
            named.add(key)
            return key
        return OTHER

    # --- the summary -----------------------------------------------------------------
    def timeline(self) -> tuple[TurnRecord, ...]:
        """The `TurnRecord`s, one per model call."""
        turn_record = summary_models().TurnRecord
        redactor = self.name_redactor
        out = []
        for t in self._turns:
            u = t.usage
            tools, errors = tuple(t.tools), tuple(t.tool_errors)
            if redactor is not None:
                tools = redacted_names(tools, redactor)
                errors = redacted_names(errors, redactor)
            out.append(turn_record(
                index=t.index, duration_seconds=t.duration, stop_reason=t.stop_reason,
                input_tokens=u.input_tokens if u else None,
                output_tokens=u.output_tokens if u else None,
                cache_read_tokens=u.cache_read_tokens if u else None,
                reasoning_tokens=u.reasoning_tokens if u else None,
                cost_usd=(float(u.cost_usd) if u and u.cost_usd is not None
                          and not u.cost_estimated else None),
                attempts=t.attempts, tools=tools, tool_errors=errors,
                discarded=t.discarded, error_type=t.error_type,
            ))
        return tuple(out)

    def build(
        self,
        info: ConversationInfo | RunInfo,
        *,
        status: ConversationStatus,
        iterations: int,
        elapsed_seconds: float,
        tool_seconds: float,
        finish_reason: str | None = None,
        max_repeated_tool_calls: int = 0,
        stalled: bool = False,
        error: BaseException | None = None,
    ) -> ConversationSummary:
        return self.record(
            info, status=status, iterations=iterations, elapsed_seconds=elapsed_seconds,
            tool_seconds=tool_seconds, finish_reason=finish_reason,
            max_repeated_tool_calls=max_repeated_tool_calls, stalled=stalled, error=error,
        ).summary

    def record(
        self,
        info: ConversationInfo | RunInfo,
        *,
        status: ConversationStatus,
        iterations: int,
        elapsed_seconds: float,
        tool_seconds: float,
        finish_reason: str | None = None,
        max_repeated_tool_calls: int = 0,
        stalled: bool = False,
        error: BaseException | None = None,
    ) -> SummaryRecord:
        """The summary's facts, with the pydantic model built when first read: a
        workflow step keeps one per conversation, and most are never looked at. The
        collector must get no more events afterwards (the loop calls it at the end)."""
        facts = None
        if error is not None:
            # Facts about the error now, so the record keeps no exception (nor frames).
            facts = error_fields(error, self._call_attempts if self._call_failed else [])
        return SummaryRecord(self, info, status, iterations, elapsed_seconds, tool_seconds,
                             finish_reason, max_repeated_tool_calls, stalled, facts,
                             attr(error, "provider"))

    def build_summary(self, r: SummaryRecord) -> ConversationSummary:
        models = summary_models()
        info = r.info
        usage = self.usage
        finish_reason = r.finish_reason
        if finish_reason is None:
            finish_reason = self.finish_reason
        provider = self.provider or r.error_provider
        model = self.model or info.model
        conversation_id, started_at = info.conversation_id, info.started_at
        correlation_id, parent_id, agent_name = info.correlation_id, info.parent_id, info.agent_name
        iteration_limit, deadline_seconds = info.iteration_limit, info.deadline_seconds
        elapsed = r.elapsed_seconds
        usage_values = usage_fields(usage, self.provider_cost)
        tool_calls, tool_errors = self.tool_calls, self.tool_errors
        if self.name_redactor is not None and tool_calls:
            tool_calls = redacted_counts(tool_calls, self.name_redactor)
            tool_errors = redacted_counts(tool_errors, self.name_redactor)
        # Every field in field order (the copy), those without an error filled in; the
        # six error fields stay None, as their defaults.
        values = models.NO_VALUES.copy()
        values["conversation_id"] = conversation_id
        values["correlation_id"] = correlation_id
        values["parent_id"] = parent_id
        values["agent_name"] = agent_name
        values["provider"] = provider
        values["model"] = model
        values["status"] = r.status
        values["iterations"] = r.iterations
        values["iteration_limit"] = iteration_limit
        values["deadline_seconds"] = deadline_seconds
        values["elapsed_seconds"] = elapsed
        values["started_at"] = started_at
        values["tool_calls"] = tool_calls
        values["tool_errors"] = tool_errors
        values["provider_retries"] = self.provider_retries
        values["usage"] = usage_values
        values["estimated_cost_usd"] = (float(self.estimated_cost)
                                        if self.estimated_cost is not None else None)
        values["finish_reason"] = finish_reason
        values["model_seconds"] = self.model_seconds
        values["retry_wait_seconds"] = self.retry_wait_seconds
        values["tool_seconds"] = r.tool_seconds
        values["tool_duration_seconds"] = self.tool_duration_seconds
        values["cache_hit_rate"] = cache_hit_rate(usage)  # the same token fields as above
        values["failed_attempts"] = tuple(self.failed_attempts)
        values["max_repeated_tool_calls"] = r.max_repeated_tool_calls
        values["stalled"] = r.stalled
        if self._timeline:
            values["timeline"] = self.timeline()
        errors = r.error_fields
        # Values the loop made itself are of their field's type; these came from the
        # caller (ids, limits, a clock, a client's reply). Of their exact types, as they
        # are in any run but an odd one, validation would hand every value back as it is.
        if (errors is None and type(conversation_id) is str
                and type(correlation_id) in _TEXT and type(parent_id) in _TEXT
                and type(agent_name) in _TEXT and type(provider) in _TEXT
                and type(model) in _TEXT and type(finish_reason) in _TEXT
                and type(iteration_limit) in _COUNT and type(deadline_seconds) in _SECONDS
                and type(elapsed) is float and type(started_at) in _TIME
                and type(usage.input_tokens) in _COUNT and type(usage.output_tokens) in _COUNT
                and type(usage.cache_read_tokens) in _COUNT
                and type(usage.cache_write_tokens) in _COUNT
                and type(usage.reasoning_tokens) in _COUNT
                and type(usage.input_includes_cached) in _FLAG
                and (not tool_calls or _names(tool_calls))):
            values["tool_calls"] = dict(tool_calls)  # copied, as validation does
            values["tool_errors"] = dict(tool_errors)
            values["usage"] = models.as_validated(models.UsageSummary, usage_values,
                                                  set(usage_values))
            built: ConversationSummary = models.as_validated(
                models.ConversationSummary, values, set(models.FIELDS_WITHOUT_ERROR))
            return built
        # Anything else is validated, as `ConversationSummary(**given)` would be (the
        # validator on a dict, without `BaseModel.__init__`'s keyword repacking).
        if errors is None:
            given = {k: v for k, v in values.items() if k in models.FIELDS_WITHOUT_ERROR}
        else:
            given = {**values, **errors}
        summary: ConversationSummary = (
            models.ConversationSummary.__pydantic_validator__.validate_python(given))
        return summary


_NONE = type(None)
_TEXT = frozenset({str, _NONE})
_COUNT = frozenset({int, _NONE})
_SECONDS = frozenset({float, _NONE})
_TIME = frozenset({datetime, _NONE})
_FLAG = frozenset({bool, _NONE})


def _names(counts: dict[str, int]) -> bool:
    """Tool names are str (`tool_errors` counts a subset of the same names)."""
    return all(type(name) is str for name in counts)




class SummaryRecord:
    """One conversation's summary before it is built: `summary` builds the
    ConversationSummary on first read and keeps it. Observers never see a record; a
    reporter that keeps summaries to read later takes records through the loop's
    `on_summary_record` hook (see `Dispatch.end`)."""

    __slots__ = ("_built", "_collector", "elapsed_seconds", "error_fields", "error_provider",
                 "finish_reason", "info", "iterations", "max_repeated_tool_calls", "stalled",
                 "status", "tool_seconds")

    builds_summary = True
    """Marks a record for holders that don't import this module (`StepResult`)."""

    def __init__(self, collector: SummaryCollector, info: ConversationInfo | RunInfo,
                 status: ConversationStatus, iterations: int, elapsed_seconds: float,
                 tool_seconds: float, finish_reason: str | None,
                 max_repeated_tool_calls: int, stalled: bool,
                 error_fields: dict[str, Any] | None, error_provider: Any) -> None:
        self._built: ConversationSummary | None = None
        self._collector: SummaryCollector | None = collector
        self.info = info
        self.status = status
        self.iterations = iterations
        self.elapsed_seconds = elapsed_seconds
        self.tool_seconds = tool_seconds
        self.finish_reason = finish_reason
        self.max_repeated_tool_calls = max_repeated_tool_calls
        self.stalled = stalled
        self.error_fields = error_fields
        self.error_provider = error_provider

    @property
    def summary(self) -> ConversationSummary:
        built = self._built
        if built is None:
            assert self._collector is not None
            built = self._built = self._collector.build_summary(self)
            self._collector = None  # its counters are in the summary now
        return built

    def redact_names(self, redactor: Redactor) -> None:
        """The summary's tool names (counts and timeline) redacted by `redactor` (a
        workflow run's): the model names the tools it calls, and may name one after a
        secret it was shown. A summary not built yet is built so; one already built (an
        observer read it) is replaced by its redacted copy."""
        if self._collector is not None:
            self._collector.name_redactor = redactor
        elif self._built is not None:
            self._built = redacted_summary(self._built, redactor)

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled (a batch worker's result) or copied as the summary it stands for.
        return (_identity, (self.summary,))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SummaryRecord):
            other = other.summary
        return self.summary == other

    __hash__ = None  # type: ignore[assignment]


def _identity(value: Any) -> Any:
    return value
