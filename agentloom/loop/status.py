"""How a conversation ended, in words that need no pydantic: its status, the providers'
stop reasons in the timeline's words, what a summary reports beyond its defaults
(`SummaryOptions`), and the usage figures a summary is built from. The loop runs on
these alone; the summary's pydantic models (`summary`) load when a summary is read.
"""

from __future__ import annotations

from decimal import Decimal
from enum import StrEnum
from typing import Any, Protocol

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


class TokenCounts(Protocol):
    """The token fields `Usage` and the summary's `UsageSummary` share."""

    @property
    def input_tokens(self) -> int | None: ...
    @property
    def cache_read_tokens(self) -> int | None: ...
    @property
    def cache_write_tokens(self) -> int | None: ...
    @property
    def input_includes_cached(self) -> bool | None: ...


def cache_hit_rate(usage: TokenCounts) -> float | None:
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
