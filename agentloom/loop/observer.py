"""Observers: how applications, traces, metrics and the summary collector watch a run.

`Observer` is the typed protocol; `NullObserver` gives every callback a no-op body, so a
subclass writes only what it needs. The loop calls observers in one place, `Dispatch`,
which logs a callback that raises and carries on: reporting never changes what a run
does or hides its result or error.

One observer may watch many conversations at once (one Agent, many concurrent runs).
Each conversation runs in its own task with its `ConversationInfo` in a context variable,
so a callback asks `current_conversation()` which run it belongs to; callbacks from tool
tasks see the same value. `on_conversation_end(summary)` carries the id in the summary.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterable
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol, TextIO, runtime_checkable

from agentloom._printable import printable
from agentloom._record import FrozenRecord, frozen_record, set_field
from agentloom.messages import ModelRequest, ModelResponse, ToolCallPart, ToolResultPart
from agentloom.providers import AttemptRecord

if TYPE_CHECKING:
    from agentloom.loop.summary import ConversationSummary

log = logging.getLogger("agentloom.observer")


class SummarySource(Protocol):
    """What `Dispatch.end` takes: a record whose summary is built when first read
    (`loop.collector.SummaryRecord`)."""

    @property
    def summary(self) -> ConversationSummary: ...


@frozen_record
class ConversationInfo(FrozenRecord):
    """Who a callback is about: the ids and limits of one conversation."""

    conversation_id: str
    correlation_id: str | None = None
    parent_id: str | None = None
    agent_name: str | None = None
    model: str | None = None
    """The model asked for; the summary has the one that answered."""
    iteration_limit: int | None = None
    deadline_seconds: float | None = None
    started_at: datetime | None = None
    run_id: str | None = None
    """The workflow run this conversation belongs to (None for an Agent run)."""
    step_id: str | None = None
    """The workflow step that runs this conversation (None for an Agent run)."""

    def __init__(
        self, *, conversation_id: str, correlation_id: str | None = None,
        parent_id: str | None = None, agent_name: str | None = None, model: str | None = None,
        iteration_limit: int | None = None, deadline_seconds: float | None = None,
        started_at: datetime | None = None, run_id: str | None = None, step_id: str | None = None,
    ) -> None:
        set_field(self, "conversation_id", conversation_id)
        set_field(self, "correlation_id", correlation_id)
        set_field(self, "parent_id", parent_id)
        set_field(self, "agent_name", agent_name)
        set_field(self, "model", model)
        set_field(self, "iteration_limit", iteration_limit)
        set_field(self, "deadline_seconds", deadline_seconds)
        set_field(self, "started_at", started_at)
        set_field(self, "run_id", run_id)
        set_field(self, "step_id", step_id)


class RunInfo:
    """A run's `ConversationInfo` before it is built, with the same fields to read
    (`conversation_id` is drawn and `started_at` made on first read): most runs are
    never asked who they are but by their summary, which reads them here, and a frozen
    record of ten fields cost as much as the rest of a run's bookkeeping."""

    __slots__ = ("_built", "_conversation_id", "_wall", "agent_name", "correlation_id",
                 "deadline_seconds", "iteration_limit", "model", "parent_id", "run_id",
                 "step_id")

    def __init__(self, conversation_id: str | None, correlation_id: str | None,
                 parent_id: str | None, agent_name: str | None, model: str | None,
                 iteration_limit: int | None, deadline_seconds: float | None, wall: float,
                 run_id: str | None, step_id: str | None) -> None:
        self._built: ConversationInfo | None = None
        self._conversation_id = conversation_id or None
        self.correlation_id = correlation_id
        self.parent_id = parent_id
        self.agent_name = agent_name
        self.model = model
        self.iteration_limit = iteration_limit
        self.deadline_seconds = deadline_seconds
        self._wall = wall
        """The run's start on the wall clock."""
        self.run_id = run_id
        self.step_id = step_id

    @property
    def conversation_id(self) -> str:
        cid = self._conversation_id
        if cid is None:
            cid = self._conversation_id = new_id()
        return cid

    @property
    def started_at(self) -> datetime:
        return datetime.fromtimestamp(self._wall, UTC)

    @property
    def info(self) -> ConversationInfo:
        built = self._built
        if built is None:
            built = self._built = ConversationInfo(
                conversation_id=self.conversation_id, correlation_id=self.correlation_id,
                parent_id=self.parent_id, agent_name=self.agent_name, model=self.model,
                iteration_limit=self.iteration_limit, deadline_seconds=self.deadline_seconds,
                started_at=self.started_at, run_id=self.run_id, step_id=self.step_id)
        return built


_IDS: list[str] = []
os.register_at_fork(after_in_child=_IDS.clear)
_ID_BATCH = 64
_ID_CLEAR = int.from_bytes(bytes.fromhex("ffffffffffff0fff3fffffffffffffff") * _ID_BATCH)
_ID_SET = int.from_bytes(bytes.fromhex("00000000000040008000000000000000") * _ID_BATCH)


def new_id() -> str:
    """A random (version 4) UUID as 32 hex digits, like `uuid4().hex` at a tenth of its
    cost (it runs once per conversation). Ids are made 64 at a time: the random bytes
    from one `os.urandom` (a system call per conversation was most of the cost), the
    version and variant bits of all 64 set with one mask; a forked child drops the
    parent's unused ids, so the two never share one."""
    if not _IDS:
        n = 16 * _ID_BATCH
        raw = (int.from_bytes(os.urandom(n)) & _ID_CLEAR) | _ID_SET
        digits = raw.to_bytes(n).hex()
        _IDS.extend([digits[i:i + 32] for i in range(0, 2 * n, 32)])
    return _IDS.pop()


_CURRENT: ContextVar[ConversationInfo | RunInfo | None] = ContextVar(
    "agentloom_conversation", default=None)


def current_conversation() -> ConversationInfo | None:
    """The conversation the calling callback belongs to (None outside a run)."""
    info = _CURRENT.get()
    if isinstance(info, RunInfo):
        return info.info
    return info


@runtime_checkable
class Observer(Protocol):
    """Callbacks of one conversation, in the order they happen. All return None."""

    def on_conversation_start(self, info: ConversationInfo) -> None: ...

    def on_request(self, request: ModelRequest, iteration: int) -> None:
        """A model call is about to start (iteration 1 is the first)."""
        ...

    def on_attempt(self, record: AttemptRecord) -> None:
        """One attempt of the current call ended (content-free)."""
        ...

    def on_retry(self, attempt: int, error: BaseException) -> None:
        """Attempt number `attempt` failed with `error` (a ProviderError named by its
        kind) and the call is about to wait and try again."""
        ...

    def on_text_delta(self, text: str) -> None: ...

    def on_response(
        self, response: ModelResponse, iteration: int, duration_seconds: float
    ) -> None: ...

    def on_model_error(
        self, error: BaseException, iteration: int, duration_seconds: float
    ) -> None: ...

    def on_tool_start(self, call: ToolCallPart) -> None: ...

    def on_tool_end(
        self, call: ToolCallPart, result: ToolResultPart, duration_seconds: float
    ) -> None: ...

    def on_stall(self, tool_name: str, repeats: int) -> None:
        """The same tool was called with identical arguments `repeats` times (once)."""
        ...

    def on_budget_warning(self, kind: str, used: float, limit: float) -> None:
        """`kind` is iterations or deadline; fires once per fraction of SummaryOptions."""
        ...

    def on_conversation_end(self, summary: ConversationSummary) -> None:
        """Exactly once per conversation, on success and failure, before the run returns."""
        ...


class NullObserver:
    """Every callback, doing nothing: subclass it and override what you need."""

    def on_conversation_start(self, info: ConversationInfo) -> None:
        pass

    def on_request(self, request: ModelRequest, iteration: int) -> None:
        pass

    def on_attempt(self, record: AttemptRecord) -> None:
        pass

    def on_retry(self, attempt: int, error: BaseException) -> None:
        pass

    def on_text_delta(self, text: str) -> None:
        pass

    def on_response(
        self, response: ModelResponse, iteration: int, duration_seconds: float
    ) -> None:
        pass

    def on_model_error(
        self, error: BaseException, iteration: int, duration_seconds: float
    ) -> None:
        pass

    def on_tool_start(self, call: ToolCallPart) -> None:
        pass

    def on_tool_end(
        self, call: ToolCallPart, result: ToolResultPart, duration_seconds: float
    ) -> None:
        pass

    def on_stall(self, tool_name: str, repeats: int) -> None:
        pass

    def on_budget_warning(self, kind: str, used: float, limit: float) -> None:
        pass

    def on_conversation_end(self, summary: ConversationSummary) -> None:
        pass


class Dispatch:
    """The one place the loop calls observers. Never raises (except BaseException)."""

    __slots__ = ("_observers",)

    def __init__(self, observers: Iterable[object]) -> None:
        self._observers = tuple([o for o in observers if o is not None])

    def emit(self, name: str, *args: Any) -> None:
        for observer in self._observers:
            # A missing method is a callback the observer does not care about: the
            # protocol can grow without breaking observers written against an older one.
            method = getattr(observer, name, None)
            if method is None:
                continue
            try:
                method(*args)
            except Exception:
                log.exception("observer %s.%s raised; the run goes on",
                              type(observer).__name__, name)


    def end(self, record: SummarySource) -> None:
        """`on_conversation_end(record.summary)` for every observer, building the summary
        only if one of them takes it: an observer with `on_summary_record` (a workflow
        step's summary keeper) gets the record instead, to read the summary later if ever,
        and the inherited no-op of `NullObserver` takes nothing."""
        for observer in self._observers:
            try:
                keep = getattr(observer, "on_summary_record", None)
                if keep is not None:
                    keep(record)
                    continue
                method = getattr(observer, "on_conversation_end", None)
                if method is None or getattr(method, "__func__", None) is _NO_END:
                    continue
                method(record.summary)
            except Exception:
                log.exception("observer %s.on_conversation_end raised; the run goes on",
                              type(observer).__name__)


_NO_END = NullObserver.on_conversation_end


class MultiObserver(NullObserver):
    """Several observers as one, each called in order and isolated from the others."""

    def __init__(self, *observers: object) -> None:
        self._dispatch = Dispatch(observers)

    def __getattribute__(self, name: str) -> Any:
        if name == "on_summary_record":
            return object.__getattribute__(self, "_dispatch").end
        if name.startswith("on_"):
            dispatch: Dispatch = object.__getattribute__(self, "_dispatch")
            return lambda *args: dispatch.emit(name, *args)
        return object.__getattribute__(self, name)


class ListObserver(NullObserver):
    """Keeps every callback as `(name, args)` in `events`, in order: for tests and
    debugging. `kinds()` lists the names without the `on_` prefix."""

    def __init__(self) -> None:
        self.events: list[tuple[str, tuple[Any, ...]]] = []

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("on_") and name != "on_summary_record":
            events: list[tuple[str, tuple[Any, ...]]] = object.__getattribute__(
                self, "events")
            return lambda *args: events.append((name[3:], args))
        return object.__getattribute__(self, name)

    def kinds(self) -> list[str]:
        return [kind for kind, _ in self.events]


MAX_SHOWN = 100
"""Characters of a name `ConsoleObserver` shows; a provider's tool names hold at most 64."""


class ConsoleObserver(NullObserver):
    """One line per model call, tool call, retry and end of run on `stream` (stderr by
    default): names, counts and statuses only, never content. A name is printed with its
    control characters escaped and cut at `MAX_SHOWN` (`agentloom._printable`): the model
    chooses tool names."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream

    def _say(self, text: str) -> None:
        print(text, file=self._stream or sys.stderr)

    def on_request(self, request: ModelRequest, iteration: int) -> None:
        self._say(f"[agentloom] turn {iteration}: calling {printable(request.model, MAX_SHOWN)}")

    def on_retry(self, attempt: int, error: BaseException) -> None:
        self._say(f"[agentloom] attempt {attempt} failed ({type(error).__name__}); retrying")

    def on_tool_start(self, call: ToolCallPart) -> None:
        self._say(f"[agentloom] tool {printable(call.name, MAX_SHOWN)} started")

    def on_tool_end(self, call: ToolCallPart, result: ToolResultPart,
                    duration_seconds: float) -> None:
        outcome = "failed" if result.is_error else "done"
        self._say(f"[agentloom] tool {printable(call.name, MAX_SHOWN)} {outcome} in "
                  f"{duration_seconds:.3f}s")

    def on_conversation_end(self, summary: ConversationSummary) -> None:
        self._say(f"[agentloom] {summary.status.value} after {summary.iterations} "
                  f"iteration(s), {summary.elapsed_seconds:.3f}s")


def bind_conversation(info: ConversationInfo | RunInfo) -> Any:
    """Make `info` the current conversation of this task; returns what to hand
    `unbind_conversation` (the conversation it replaces, not a reset token: a token would
    be one more object alive per run)."""
    previous = _CURRENT.get()
    _CURRENT.set(info)
    return previous


def unbind_conversation(previous: Any) -> None:
    _CURRENT.set(previous)
