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
from enum import StrEnum
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from agentloom._record import FrozenRecord, frozen_record, set_field
from agentloom.messages import Usage


class ConversationStatus(StrEnum):
    """How a conversation ended. Branch on this, never on an exception's text."""

    COMPLETED = "completed"
    REFUSED = "refused"
    TRUNCATED = "truncated"
    ITERATION_LIMIT = "iteration_limit"
    DEADLINE_EXCEEDED = "deadline_exceeded"
    TOKEN_LIMIT = "token_limit"
    PROVIDER_ERROR = "provider_error"
    ERROR = "error"
    CANCELLED = "cancelled"
    PAUSED = "paused"

    @property
    def succeeded(self) -> bool:
        """The model answered: completed, refused or truncated."""
        return self in _SUCCEEDED

    @property
    def budget_exhausted(self) -> bool:
        """A budget ran out: iteration_limit, deadline_exceeded or token_limit."""
        return self in _BUDGET


_SUCCEEDED = frozenset(
    {ConversationStatus.COMPLETED, ConversationStatus.REFUSED, ConversationStatus.TRUNCATED}
)
_BUDGET = frozenset(
    {
        ConversationStatus.ITERATION_LIMIT,
        ConversationStatus.DEADLINE_EXCEEDED,
        ConversationStatus.TOKEN_LIMIT,
    }
)

# Providers' own words for a reply cut short or refused (OpenAI, Anthropic, Gemini, Ollama).
TRUNCATED_REASONS = frozenset({"length", "max_tokens", "MAX_TOKENS", "max_output_tokens"})
REFUSED_REASONS = frozenset(
    {"content_filter", "refusal", "SAFETY", "RECITATION", "PROHIBITED_CONTENT", "BLOCKLIST",
     "SPII", "IMAGE_SAFETY"}
)


_STOP_REASONS: dict[str, str] = {
    # OpenAI (chat completions and responses), Ollama, llama.cpp
    "stop": "end_turn", "tool_calls": "tool_use", "function_call": "tool_use",
    "length": "max_tokens", "max_output_tokens": "max_tokens", "content_filter": "refusal",
    "completed": "end_turn", "incomplete": "max_tokens", "error": "error",
    # Anthropic
    "end_turn": "end_turn", "tool_use": "tool_use", "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence", "refusal": "refusal", "pause_turn": "paused",
    # Gemini
    "STOP": "end_turn", "MAX_TOKENS": "max_tokens", "SAFETY": "refusal",
    "RECITATION": "refusal", "PROHIBITED_CONTENT": "refusal", "BLOCKLIST": "refusal",
    "SPII": "refusal", "IMAGE_SAFETY": "refusal",
}


def normalized_stop_reason(finish_reason: str | None, has_tool_calls: bool) -> str | None:
    """A provider's finish reason in the words spec 002's timeline uses: end_turn,
    tool_use, max_tokens, stop_sequence, refusal, paused, error, or unknown. A reply with
    tool calls is tool_use unless it was cut off (then it stays max_tokens)."""
    if finish_reason is None:
        return "tool_use" if has_tool_calls else None
    reason = _STOP_REASONS.get(finish_reason, "unknown")
    if has_tool_calls and reason != "max_tokens":
        return "tool_use"
    return reason


def status_for_finish(finish_reason: str | None) -> ConversationStatus:
    """The status of a conversation whose last reply ended with `finish_reason`.

    The loop's own limit words (`max_tool_iterations`, `..._no_answer`) are iteration_limit:
    a workflow step still succeeds with them (spec 000), but the run used its whole budget,
    which is what the summary reports (spec 002)."""
    if finish_reason is None:
        return ConversationStatus.COMPLETED
    if finish_reason.startswith("max_tool_iterations"):
        return ConversationStatus.ITERATION_LIMIT
    if finish_reason in TRUNCATED_REASONS:
        return ConversationStatus.TRUNCATED
    if finish_reason in REFUSED_REASONS:
        return ConversationStatus.REFUSED
    return ConversationStatus.COMPLETED


@frozen_record
class SummaryOptions(FrozenRecord):
    """Extra reporting, off by default. Invalid values raise ValueError at construction.

        SummaryOptions(timeline=True)           # one TurnRecord per model call
        SummaryOptions(stall_threshold=3)       # flag 3 identical tool calls
        SummaryOptions(warn_at=(0.5, 0.8))      # budget warnings at 50% and 80%
    """

    timeline: bool = False
    stall_threshold: int | None = None
    """Identical tool calls (same name, same arguments) that flag a run as stalled."""
    warn_at: tuple[float, ...] = ()
    """Fractions of the iteration limit and of the deadline that fire on_budget_warning."""

    def __init__(
        self, *, timeline: bool = False, stall_threshold: int | None = None,
        warn_at: tuple[float, ...] = (),
    ) -> None:
        set_field(self, "timeline", timeline)
        set_field(self, "stall_threshold", stall_threshold)
        set_field(self, "warn_at", warn_at)
        self.__post_init__()

    def __post_init__(self) -> None:
        st = self.stall_threshold
        if st is not None and (isinstance(st, bool) or not isinstance(st, int) or st < 2):
            raise ValueError(
                f"SummaryOptions.stall_threshold must be an integer >= 2 or None, got {st!r}"
            )
        fractions = tuple(self.warn_at)
        for f in fractions:
            if isinstance(f, bool) or not isinstance(f, int | float) or not 0 < f <= 1:
                raise ValueError(
                    f"SummaryOptions.warn_at takes fractions in (0, 1], got {f!r}"
                )
        object.__setattr__(self, "warn_at", tuple(sorted(set(fractions))))


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


def usage_fields(usage: Usage, provider_cost: Decimal | None = None) -> dict[str, Any]:
    """The fields of `UsageSummary.from_usage(usage, provider_cost)`, to validate (the
    summary validates them with its own fields, in one call)."""
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
        "cost_usd": float(provider_cost) if provider_cost is not None else None,
        "input_includes_cached": usage.input_includes_cached,
    }


def cache_hit_rate(usage: UsageSummary | Usage) -> float | None:
    """Share of prompt tokens served from cache; None when no cache tokens were reported.

    OpenAI-style providers count cached tokens inside input_tokens; Anthropic-style ones
    report them apart, so the prompt is input + cache reads + cache writes."""
    read = usage.cache_read_tokens
    if read is None or usage.input_tokens is None or usage.input_includes_cached is None:
        return None
    if usage.input_includes_cached:
        prompt = usage.input_tokens
    else:
        prompt = usage.input_tokens + read + (usage.cache_write_tokens or 0)
    if prompt <= 0:
        return None
    return min(1.0, read / prompt)


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
