"""The state of one conversation of the agent loop (`_loop.run_loop`): its clock, budgets
and counters, and the one place its per-turn facts reach the summary collector and the
caller's observers (the collector directly when there are no observers of the caller's).
"""

from __future__ import annotations

from functools import partial
from time import monotonic as _monotonic
from time import time as _time
from typing import Any

from agentloom._clock import SYSTEM_CLOCK, SystemClock
from agentloom.errors import LoopBudgetExceeded, ProviderError, typed_provider_error
from agentloom.loop._budget import BudgetWarnings, Deadline, StallDetector, run_deadline
from agentloom.loop._options import LoopOptions
from agentloom.loop.collector import SummaryCollector, SummaryRecord
from agentloom.loop.observer import Dispatch, RunInfo
from agentloom.loop.status import ConversationStatus, SummaryOptions
from agentloom.messages import ModelRequest, StreamEvent, TextDelta, ToolCallPart, Usage
from agentloom.providers import AttemptRecord, ModelClient
from agentloom.tools.contracts import ToolBox


class _Run:
    """The mutable state of one conversation, and the loop's own facts for its summary."""

    __slots__ = ("_dispatch", "attempts", "client", "clock", "collector", "deadline", "info",
                 "iterations", "now", "on_event", "opts", "request", "solo", "stall",
                 "started", "tool_seconds", "tools", "warnings")

    def __init__(self, client: ModelClient, request: ModelRequest, tools: ToolBox | None,
                 opts: LoopOptions, on_event: Any) -> None:
        self.client = client
        self.tools = tools
        self.opts = opts
        self.on_event = on_event
        clock = self.clock = opts.clock or SYSTEM_CLOCK
        # On the system clock its C function itself: a read through the method costs
        # about ten times the read, and a run reads the clock several times.
        now = self.now = _monotonic if type(clock) is SystemClock else clock.now
        started = self.started = now()
        so = opts.summary_options or NO_EXTRAS
        # Its ConversationInfo is built only if something asks for it: the summary reads
        # the same fields off this. Both made without a class call (no keywords to pack).
        info = self.info = _new(RunInfo)
        _init_info(
            info, opts.conversation_id, opts.correlation_id, opts.parent_id, opts.agent_name,
            request.model, opts.max_iterations,
            (opts.deadline_seconds if opts.deadline is None
             else max(0.0, opts.deadline - started)),
            _time() if type(clock) is SystemClock else clock.wall(), opts.run_id,
            opts.step_id)
        collector = self.collector = _new(SummaryCollector)
        _init_collector(collector, timeline=so.timeline)
        # Without an observer of the caller's, the per-turn callbacks go straight to the
        # collector (ours, which doesn't raise), the start and end of the run, which the
        # collector ignores, are skipped, and the dispatcher is made only if a rarer
        # callback (a tool, a retry, a warning) needs it.
        self.solo = opts.observer is None
        self._dispatch: Dispatch | None = None
        # Their callbacks hold the dispatcher, not this object: a bound method of `self`
        # would make every run a reference cycle for the garbage collector to find.
        # Without warning fractions nothing is ever fired or remembered: one serves all.
        self.warnings = (BudgetWarnings(so.warn_at,
                                        partial(self.dispatch.emit, "on_budget_warning"))
                         if so.warn_at else NO_WARNINGS)
        self.stall: StallDetector | None = None  # made by the first tool call
        self.deadline: Deadline | None = None
        if opts.deadline is not None:
            self.deadline = run_deadline(clock, opts.deadline, started)
        elif opts.deadline_seconds is not None:
            self.deadline = run_deadline(clock, started + opts.deadline_seconds, started)
        self.iterations = 0
        self.tool_seconds = 0.0
        # The shared empty list until the router reports an attempt, at the end of the
        # first exchange: no list of the run's is alive while its first call is in flight.
        self.attempts: list[AttemptRecord] = NO_ATTEMPTS
        self.request = request

    @property
    def dispatch(self) -> Dispatch:
        dispatch = self._dispatch
        if dispatch is None:
            dispatch = self._dispatch = Dispatch((self.collector, self.opts.observer))
        return dispatch

    # --- budgets ---------------------------------------------------------------------
    def checkpoint(self) -> None:
        """A turn boundary: the deadline is checked and its warnings fired."""
        if self.deadline is not None:
            self.deadline.check()
            if self.warnings is not NO_WARNINGS:  # nothing to warn of: no clock read
                self.warnings.check("deadline", self.now() - self.started,
                                    self.deadline.total)

    def check_tokens(self, usage: Usage, turn: Usage) -> None:
        """The token budget after a call: `usage` is the run's so far, `turn` the call's.
        A call that reported no count at all fails it closed, as a first one does: summed
        as zero, a model (or proxy) that stops reporting would spend without limit."""
        limit = self.opts.max_total_tokens
        if limit is None:
            return
        total = usage.total_tokens
        if total is None or turn.total_tokens is None:
            raise LoopBudgetExceeded("tokens", limit, None)
        if total > limit:
            raise LoopBudgetExceeded("tokens", limit, total)

    # --- one model call ----------------------------------------------------------------
    def __call__(self, record: AttemptRecord) -> None:
        """The model call's attempt sink (`on_attempt`): the run itself, so that no bound
        method is made per call and held by the router while the call is in flight."""
        if self.attempts is NO_ATTEMPTS:
            self.attempts = [record]
        else:
            self.attempts.append(record)
        if self.solo:
            self.collector.on_attempt(record)
        else:
            self.dispatch.emit("on_attempt", record)

    def retrying(self, attempt: int, error: ProviderError) -> None:
        """The router is about to wait and try again after `error` (spec 002's on_retry:
        before the wait, with the failed attempt's error, named by its kind)."""
        self.dispatch.emit("on_retry", attempt, typed_provider_error(error))

    def sink(self, event: StreamEvent) -> None:
        if isinstance(event, TextDelta):
            self.dispatch.emit("on_text_delta", event.text)
        if self.on_event is not None:
            self.on_event(event)

    # `_drive` awaits the model itself, between these two: a coroutine of the run's own
    # around the call would be one more object alive per call in flight.
    def begin_call(self, request: ModelRequest) -> float:
        """A model call is about to start: budgets checked, observers told; returns its
        start time."""
        if self.iterations or self.warnings is not NO_WARNINGS:
            # Before a run's first call the deadline scope has just checked the clock.
            self.checkpoint()
        self.iterations += 1
        if self.warnings is not NO_WARNINGS:
            self.warnings.check("iterations", self.iterations, self.opts.max_iterations)
        if self.solo:
            self.collector.on_request(request, self.iterations)
        else:
            self.dispatch.emit("on_request", request, self.iterations)
        return self.now()

    def call_failed(self, exc: BaseException, t0: float) -> None:
        self.dispatch.emit("on_model_error", exc, self.iterations, self.now() - t0)

    # --- one tool batch (run by `_tool_turn.run_tools`) --------------------------------
    def record_calls(self, calls: tuple[ToolCallPart, ...]) -> None:
        stall = self.stall
        if stall is None:
            so = self.opts.summary_options or NO_EXTRAS
            stall = self.stall = StallDetector(so.stall_threshold,
                                               partial(self.dispatch.emit, "on_stall"))
            # The run's first tool call: the summary counts the names its tools declare
            # by name, however many others the model makes up.
            self.collector.toolbox = self.tools
        for c in calls:
            stall.record(c.name, c.arguments)

    # --- the summary ---------------------------------------------------------------------
    def summarize(self, status: ConversationStatus, *, finish_reason: str | None = None,
                  error: BaseException | None = None) -> SummaryRecord:
        stall = self.stall
        return self.collector.record(
            self.info, status=status, iterations=self.iterations,
            elapsed_seconds=self.now() - self.started, tool_seconds=self.tool_seconds,
            finish_reason=finish_reason,
            max_repeated_tool_calls=stall.max_repeated if stall is not None else 0,
            stalled=stall is not None and stall.stalled, error=error,
        )


class RetryListener:
    """The run's `retry_listener`, emptied when the run ends. Every timer armed during the
    run (the deadline's, the HTTP client's read and total timeouts) keeps a snapshot of
    the context until the event loop drops it, which for a cancelled 600 s timer can be
    minutes later; holding the run itself there kept each run's objects alive that long,
    so they piled up and drove the garbage collector into full collections."""

    __slots__ = ("run",)

    def __init__(self, run: _Run) -> None:
        self.run: _Run | None = run

    def __call__(self, attempt: int, error: ProviderError) -> None:
        if self.run is not None:
            self.run.retrying(attempt, error)


NO_EXTRAS = SummaryOptions()
NO_ATTEMPTS: list[AttemptRecord] = []
"""Shared by every run for its attempts until the first one: never appended to."""
NO_WARNINGS = BudgetWarnings((), lambda kind, used, limit: None)
_new = object.__new__
_init_info = RunInfo.__init__
_init_collector = SummaryCollector.__init__
