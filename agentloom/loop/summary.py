"""The metadata-only record of one conversation: how it ended, what it cost, where the
time went, without a word of its content (spec 002).

A `ConversationSummary` holds counts, names, status values, timing and usage, never
messages, tool arguments, tool results or exception text, so it can go to logs, metrics
and checkpoints as it is. It is a pydantic model so `model_dump_json(include=...)` picks
fields for display; field order is the order the spec prints them in. `None` means
unknown, never zero: a usage field no turn reported stays None.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from agentloom.loop.status import REFUSED_REASONS as REFUSED_REASONS
from agentloom.loop.status import TRUNCATED_REASONS as TRUNCATED_REASONS
from agentloom.loop.status import ConversationStatus as ConversationStatus
from agentloom.loop.status import SummaryOptions as SummaryOptions
from agentloom.loop.status import cache_hit_rate as cache_hit_rate
from agentloom.loop.status import normalized_stop_reason as normalized_stop_reason
from agentloom.loop.status import status_for_finish as status_for_finish
from agentloom.loop.status import usage_fields as usage_fields
from agentloom.messages import Usage


class UsageSummary(BaseModel):
    """Tokens and cost summed over every model call. None: no call reported it."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None
    cost_usd: float | None = None
    input_includes_cached: bool | None = None

    @classmethod
    def from_usage(cls, usage: Usage, provider_cost: Decimal | None = None) -> UsageSummary:
        """`provider_cost` is the reported part of `usage.cost_usd` (spec 002: cost_usd
        is None unless a provider reported one)."""
        # The validator on a dict: as `cls(...)`, without the keyword repacking.
        built: UsageSummary = cls.__pydantic_validator__.validate_python(
            usage_fields(usage, provider_cost))
        return built


def as_validated(cls: type[_M], values: dict[str, Any], fields_set: set[str]) -> _M:
    """The instance of `cls` that validating `values` (every field, in field order, each
    value already of its field's exact type) would give, built without validating them:
    validation hands such values back as they are, so it would only cost time. What
    `model_construct` does, without its walk over the fields with their defaults.
    `fields_set` is the fields the caller gave (`model_fields_set`)."""
    model = _new(cls)
    _set(model, "__dict__", values)
    _set(model, "__pydantic_fields_set__", fields_set)
    _set(model, "__pydantic_extra__", None)
    _set(model, "__pydantic_private__", None)
    return model


_M = TypeVar("_M", bound=BaseModel)
_new = object.__new__
_set = object.__setattr__


class FailedAttempt(BaseModel):
    """One attempt that failed, content-free. `request_sent` keeps three states."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    provider: str
    model: str
    attempt: int
    error_type: str | None = None
    status_code: int | None = None
    phase: str | None = None
    request_sent: bool | None = None
    duration_seconds: float = 0.0


class TurnRecord(BaseModel):
    """One model call. A call that raised has its error_type and None tokens."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    index: int
    """1 for the first model call of the conversation."""
    duration_seconds: float
    stop_reason: str | None = None
    """Normalized: end_turn, tool_use, max_tokens, stop_sequence, refusal, paused, error,
    unknown (the provider's own word is the summary's `finish_reason`)."""
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    reasoning_tokens: int | None = None
    cost_usd: float | None = None
    """The provider-reported cost of this call (None: not reported)."""
    attempts: int = 1
    tools: tuple[str, ...] = ()
    """Names of the tools this reply asked for, in call order (those that ran)."""
    tool_errors: tuple[str, ...] = ()
    """Names of those tools whose result was an error."""
    discarded: bool = False
    """A reply cut off at max_tokens mid tool call (or with nothing in it): dropped from
    the conversation and asked again with max_tokens doubled."""
    error_type: str | None = None


class ConversationSummary(BaseModel):
    """How one conversation ended, metadata only. See the module docstring."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    conversation_id: str
    correlation_id: str | None = None
    parent_id: str | None = None
    agent_name: str | None = None
    provider: str | None = None
    model: str | None = None
    status: ConversationStatus
    iterations: int = 0
    """Model calls attempted, a call that raised included."""
    iteration_limit: int | None = None
    deadline_seconds: float | None = None
    """The run's deadline (None: no deadline)."""
    elapsed_seconds: float = 0.0
    started_at: datetime | None = None
    tool_calls: dict[str, int] = Field(default_factory=dict)
    tool_errors: dict[str, int] = Field(default_factory=dict)
    provider_retries: int = 0
    """Attempts after the first, over every model call, failed requests included."""
    usage: UsageSummary = Field(default_factory=UsageSummary)
    """`usage.cost_usd` is what providers reported (None: no turn reported a cost)."""
    estimated_cost_usd: float | None = None
    """The cost with the price table filling in turns the provider didn't price (None:
    neither knew); what cost budgets count."""
    finish_reason: str | None = None
    """The last reply's finish reason (the provider's word, or the loop's limit word)."""
    model_seconds: float = 0.0
    retry_wait_seconds: float = 0.0
    tool_seconds: float = 0.0
    tool_duration_seconds: float = 0.0
    cache_hit_rate: float | None = None
    error_type: str | None = None
    provider_status_code: int | None = None
    error_phase: str | None = None
    error_request_sent: bool | None = None
    error_request_id: str | None = None
    error_attempts_sent: int | None = None
    failed_attempts: tuple[FailedAttempt, ...] = ()
    max_repeated_tool_calls: int = 0
    stalled: bool = False
    timeline: tuple[TurnRecord, ...] | None = None


FIELDS_WITHOUT_ERROR = frozenset(ConversationSummary.model_fields).difference({
    "error_type", "provider_status_code", "error_phase", "error_request_sent",
    "error_request_id", "error_attempts_sent"})
"""The fields a summary of a run without an error is given (its `model_fields_set`)."""

NO_VALUES: dict[str, Any] = dict.fromkeys(ConversationSummary.model_fields)
"""Every field of ConversationSummary, in field order, each None: copied and filled in
for each summary, which costs about half of a dict display of as many keys (a display
past 16 items is built one key at a time, the table growing as it goes). Never
changed itself."""
