"""The loop's options and its result record (what `run_loop` takes and gives back)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from typing import TYPE_CHECKING, Any

from agentloom._clock import Clock
from agentloom._record import FACTORY, Record, record
from agentloom.loop._contracts import OutputValidator
from agentloom.loop._journal import LoopJournal
from agentloom.loop.collector import SummaryRecord
from agentloom.loop.status import ConversationStatus, SummaryOptions
from agentloom.messages import Message, ModelResponse, Usage
from agentloom.providers import AttemptRecord

if TYPE_CHECKING:
    from agentloom.loop.summary import ConversationSummary

FINISH_MAX_ITERATIONS = "max_tool_iterations"
FINISH_MAX_ITERATIONS_NO_ANSWER = "max_tool_iterations_no_answer"
DEFAULT_MAX_TOKENS = 16_000
"""What a truncated turn's max_tokens is doubled from when the request set none."""
MAX_TOKENS_CEILING = 64_000
"""A truncated turn is asked again with max_tokens doubled up to this, then the run ends
with LoopBudgetExceeded("max_tokens") (status token_limit)."""


@record
class LoopOptions(Record):
    """What one run of the tool loop may do: its limits, validator, ids and observers."""

    max_iterations: int = 5
    """Model calls at most, the answering one included (`max_tool_iterations`)."""
    tool_concurrency: int = 8
    validator: OutputValidator | None = None
    """Structured output: the final text is validated; an invalid one is re-asked."""
    max_reasks: int = 0
    run_id: str | None = None
    step_id: str | None = None
    speaker: str | None = None
    # --- budgets -------------------------------------------------------------------
    clock: Clock | None = None
    deadline: float | None = None
    """Absolute, on `clock.now()`; passing it cancels the call in flight."""
    deadline_seconds: float | None = None
    """Relative to the start of the run; used when `deadline` is None."""
    max_total_tokens: int | None = None
    """Input + output tokens over every call; unknown usage fails closed."""
    stream_with_tools: bool = False
    """Stream every call of a streaming request, tool turns included (`Agent.astream`);
    by default a step with tools doesn't stream (spec 000)."""
    # --- reporting -----------------------------------------------------------------
    observer: object | None = None
    on_summary: Callable[[SummaryRecord], None] | None = None
    """Gets the run's summary record at its end, on success and failure alike (it must
    not raise): what a workflow step keeps of a run nobody observes, which an observer
    would make the loop dispatch every callback for."""
    summary_options: SummaryOptions | None = None
    conversation_id: str | None = None
    correlation_id: str | None = None
    parent_id: str | None = None
    agent_name: str | None = None
    wrap_errors: bool = False
    """Agent mode: raise every failure as AgentLoopError (cause chained, `.summary` set)
    and raise LoopBudgetExceeded at the iteration limit instead of returning."""
    journal: LoopJournal | None = None
    """Durability: each tool turn is saved through it and a saved loop restored from it.
    None uses `current_journal` (set by a durable workflow run) when `step_id` is set."""

    def __init__(
        self, *, max_iterations: int = 5, tool_concurrency: int = 8,
        validator: OutputValidator | None = None, max_reasks: int = 0, run_id: str | None = None,
        step_id: str | None = None, speaker: str | None = None, clock: Clock | None = None,
        deadline: float | None = None, deadline_seconds: float | None = None,
        max_total_tokens: int | None = None, stream_with_tools: bool = False,
        observer: object | None = None,
        on_summary: Callable[[SummaryRecord], None] | None = None,
        summary_options: SummaryOptions | None = None, conversation_id: str | None = None,
        correlation_id: str | None = None,
        parent_id: str | None = None, agent_name: str | None = None, wrap_errors: bool = False,
        journal: LoopJournal | None = None,
    ) -> None:
        self.max_iterations = max_iterations
        self.tool_concurrency = tool_concurrency
        self.validator = validator
        self.max_reasks = max_reasks
        self.run_id = run_id
        self.step_id = step_id
        self.speaker = speaker
        self.clock = clock
        self.deadline = deadline
        self.deadline_seconds = deadline_seconds
        self.max_total_tokens = max_total_tokens
        self.stream_with_tools = stream_with_tools
        self.observer = observer
        self.on_summary = on_summary
        self.summary_options = summary_options
        self.conversation_id = conversation_id
        self.correlation_id = correlation_id
        self.parent_id = parent_id
        self.agent_name = agent_name
        self.wrap_errors = wrap_errors
        self.journal = journal


@record
class LoopResult(Record):
    """What the tool loop returns: the last reply, its text and usage, and the messages it added."""

    response: ModelResponse
    """The last reply."""
    text: str
    finish_reason: str | None
    usage: Usage
    iterations: int
    new_messages: tuple[Message, ...]
    """Every message the loop added after the request's own (assistant turns, tool results)."""
    output: Any = None
    """The validated value when a validator was given; else the text."""
    attempts: list[AttemptRecord] = field(default_factory=list)
    status: ConversationStatus = ConversationStatus.COMPLETED
    _summary: ConversationSummary | SummaryRecord | None = field(default=None, repr=False)

    def __init__(
        self, *, response: ModelResponse, text: str, finish_reason: str | None, usage: Usage,
        iterations: int, new_messages: tuple[Message, ...], output: Any = None,
        attempts: list[AttemptRecord] = FACTORY,
        status: ConversationStatus = ConversationStatus.COMPLETED,
        _summary: ConversationSummary | SummaryRecord | None = None,
    ) -> None:
        self.response = response
        self.text = text
        self.finish_reason = finish_reason
        self.usage = usage
        self.iterations = iterations
        self.new_messages = new_messages
        self.output = output
        self.attempts = [] if attempts is FACTORY else attempts
        self.status = status
        self._summary = _summary

    @property
    def summary(self) -> ConversationSummary | None:
        """The run's ConversationSummary, built when first read."""
        s = self._summary
        if isinstance(s, SummaryRecord):
            s = self._summary = s.summary
        return s

    @summary.setter
    def summary(self, value: ConversationSummary | SummaryRecord | None) -> None:
        self._summary = value

    def summary_source(self) -> ConversationSummary | SummaryRecord:
        """The summary, or the record that builds it when first read (for holders that
        keep it lazily, as `ConversationResult` does)."""
        assert self._summary is not None
        return self._summary


_new = object.__new__


def loop_result(response: ModelResponse, text: str, finish_reason: str | None, usage: Usage,
                iterations: int, new_messages: tuple[Message, ...], output: Any,
                attempts: list[AttemptRecord], status: ConversationStatus) -> LoopResult:
    """`LoopResult(...)` positionally, as its __init__ sets it, without the class call
    (a class called with keywords packs them into a dict first): one per run."""
    self: LoopResult = _new(LoopResult)
    self.response = response
    self.text = text
    self.finish_reason = finish_reason
    self.usage = usage
    self.iterations = iterations
    self.new_messages = new_messages
    self.output = output
    self.attempts = attempts
    self.status = status
    self._summary = None
    return self
