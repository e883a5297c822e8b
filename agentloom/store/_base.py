"""What a checkpoint store is: the records it keeps and the async protocol every backend meets.

A run is one row (`RunRecord`) plus a numbered series of writes: whole `Checkpoint`s and,
between them, `CheckpointDelta`s (what one step or tool-loop turn changed). What a resume
starts from is the newest whole checkpoint with every later delta applied in order
(`apply_delta`), so a step costs one small row however long the run is. Tool calls and
model exchanges are written apart from checkpoints, because they must land *before* a
side effect happens (a tool call) or before anything follows from a paid reply (a model
exchange: a store may queue it for the run's next write, `queue_model_exchange`), not
only at the end of a turn. Every backend passes
`agentloom.testing.store_conformance`; the protocol is async-only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from agentloom.errors import AgentLoomError, ConfigError

RunStatus: TypeAlias = Literal[
    "running", "paused", "needs_decision", "succeeded", "failed", "cancelled", "timeout",
    "budget_exceeded", "interrupted",
]
RUN_STATUSES: frozenset[str] = frozenset(RunStatus.__args__)  # type: ignore[attr-defined]
FINISHED_STATUSES: frozenset[str] = frozenset(
    {"succeeded", "failed", "cancelled", "timeout", "budget_exceeded"}
)
"""Statuses a run never leaves; `prune` removes only these by default."""

ToolCallStatus: TypeAlias = Literal["in_flight", "done"]


class StoreError(AgentLoomError):
    """A store operation that cannot be done as asked (the data is left unchanged)."""


class RunNotFound(StoreError, LookupError):
    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        super().__init__(f"no run with id {run_id!r} in the store")


class RunExists(StoreError):
    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        super().__init__(f"a run with id {run_id!r} already exists; nothing was overwritten")


class StoreConfigError(ConfigError):
    """The store cannot be opened where it was asked to be (path, URL, permissions)."""


class StoreCorrupt(StoreConfigError):
    """The store's file is damaged or is not a run store. Nothing in it was changed."""


@dataclass(slots=True, kw_only=True)
class PauseInfo:
    """Which step waits, and for what (an approval, an answer to `ask`)."""

    step_id: str
    waiting_for: str
    """`approval` or `answer` (or another word the engine uses)."""
    prompt: str | None = None
    call_id: str | None = None
    """Set when the pause came from inside a tool call of a tool loop."""
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True, kw_only=True)
class ToolLoopProgress:
    """An in-progress tool loop of one step: enough to continue mid-loop on resume."""

    step_id: str
    turn: int
    messages: list[Any] = field(default_factory=list)
    """The loop's conversation so far (`Message`s, serialised by the store's serde)."""
    pending_calls: list[dict[str, Any]] = field(default_factory=list)
    """Calls the model asked for in this turn: id, name, arguments."""
    results: dict[str, Any] = field(default_factory=dict)
    """call_id -> stored result of the calls already finished in this turn."""


@dataclass(slots=True, kw_only=True)
class Checkpoint:
    """Everything a resume needs, written in one transaction. `seq` and `created_at` are
    set by the store on save; what you pass in them is ignored."""

    state: dict[str, Any]
    status: RunStatus = "running"
    step_results: dict[str, Any] = field(default_factory=dict)
    conversations: dict[str, Any] = field(default_factory=dict)
    """State key -> conversation value, for conversations changed since the last write."""
    tool_loops: list[ToolLoopProgress] = field(default_factory=list)
    paused: PauseInfo | None = None
    cost_usd: Decimal | None = None
    """The run's cost so far; None when unknown (never zero for unknown)."""
    extra: dict[str, Any] = field(default_factory=dict)
    seq: int = 0
    created_at: datetime | None = None


@dataclass(slots=True, kw_only=True)
class CheckpointDelta:
    """What one write changes in a run's checkpoint; `save_delta` stores it as one row.

    Maps hold only the top-level keys this write sets (whole values) and `*_removed` the
    keys it deletes; `status`, `paused` and `cost_usd` replace the checkpoint's."""

    status: RunStatus = "running"
    state: dict[str, Any] = field(default_factory=dict)
    state_removed: list[str] = field(default_factory=list)
    step_results: dict[str, Any] = field(default_factory=dict)
    step_results_removed: list[str] = field(default_factory=list)
    conversations: dict[str, Any] = field(default_factory=dict)
    tool_loops: list[ToolLoopProgress] = field(default_factory=list)
    """Loops this write sets, by `step_id`. One named in `loop_messages_kept` continues
    the stored loop: its first `kept` messages stay and `messages` are appended."""
    loop_messages_kept: dict[str, int] = field(default_factory=dict)
    tool_loops_removed: list[str] = field(default_factory=list)
    paused: PauseInfo | None = None
    cost_usd: Decimal | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    extra_removed: list[str] = field(default_factory=list)


def apply_delta(cp: Checkpoint, delta: CheckpointDelta, *, seq: int,
                created_at: datetime | None) -> None:
    """Bring `cp` (in place) to what it is after `delta`, the write numbered `seq`."""
    for target, sets, removed in ((cp.state, delta.state, delta.state_removed),
                                  (cp.step_results, delta.step_results,
                                   delta.step_results_removed),
                                  (cp.extra, delta.extra, delta.extra_removed)):
        target.update(sets)
        for key in removed:
            target.pop(key, None)
    cp.conversations.update(delta.conversations)
    loops = {p.step_id: p for p in cp.tool_loops}
    for p in delta.tool_loops:
        kept = delta.loop_messages_kept.get(p.step_id)
        old = loops.get(p.step_id)
        if kept is not None and old is not None:
            p = ToolLoopProgress(step_id=p.step_id, turn=p.turn,
                                 messages=[*old.messages[:kept], *p.messages],
                                 pending_calls=p.pending_calls, results=p.results)
        loops[p.step_id] = p
    for step_id in delta.tool_loops_removed:
        loops.pop(step_id, None)
    cp.tool_loops = list(loops.values())
    cp.status, cp.paused, cp.cost_usd = delta.status, delta.paused, delta.cost_usd
    cp.seq, cp.created_at = seq, created_at


@dataclass(slots=True, frozen=True, kw_only=True)
class StoredWrite:
    """One of a run's stored writes, as `load_writes` returns them: a whole checkpoint or
    a delta (exactly one is set), under its seq."""

    seq: int
    created_at: datetime | None
    checkpoint: Checkpoint | None = None
    delta: CheckpointDelta | None = None


@dataclass(slots=True, frozen=True, kw_only=True)
class RunRecord:
    """A run's summary row: what `agentloom runs` lists."""

    run_id: str
    workflow_name: str
    workflow_hash: str
    status: str
    started_at: datetime
    updated_at: datetime
    cost_usd: Decimal | None
    latest_seq: int
    meta: dict[str, Any] = field(default_factory=dict)
    claimed_by: str | None = None
    lease_until: datetime | None = None


@dataclass(slots=True, frozen=True, kw_only=True)
class ToolCallRecord:
    run_id: str
    step_id: str
    turn: int
    call_id: str
    status: ToolCallStatus
    idempotent: bool
    result: Any = None
    name: str | None = None
    arguments: Any = None
    updated_at: datetime | None = None


@dataclass(slots=True, frozen=True, kw_only=True)
class ModelExchangeRecord:
    run_id: str
    step_id: str
    turn: int
    request_hash: str
    response: Any
    created_at: datetime | None = None


@dataclass(slots=True, frozen=True, kw_only=True)
class RunQuery:
    """A filter for `find_runs`: each field set narrows the runs (all must hold)."""

    status: str | None = None
    workflow: str | None = None
    """The exact workflow name."""
    run_id_contains: str | None = None
    """A piece of the run id (matched literally: `%` and `_` are not wildcards)."""
    batch_id: str | None = None
    """The batch the run belongs to (`meta.batch_id`, set by `agentloom batch`)."""


@dataclass(slots=True, frozen=True, kw_only=True)
class RunPage:
    """One page of `find_runs`: its runs, newest first, and how many match in all."""

    runs: list[RunRecord]
    total: int


def like_pattern(text: str) -> str:
    """`text` as a literal LIKE pattern that matches anywhere (escape character `\\`)."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def query_matches(query: RunQuery, run: RunRecord) -> bool:
    """Whether `run` passes `query` (what the SQL backends' WHERE says, in Python)."""
    return ((query.status is None or run.status == query.status)
            and (query.workflow is None or run.workflow_name == query.workflow)
            and (query.run_id_contains is None or query.run_id_contains in run.run_id)
            and (query.batch_id is None or run.meta.get("batch_id") == query.batch_id))


@runtime_checkable
class CheckpointStore(Protocol):
    """Durable runs. Every write is one transaction: it lands whole or not at all.

    Optional capabilities (`claim_run`, `find_runs`, `load_writes`,
    `queue_model_exchange`) are detected with `hasattr`.
    """

    async def create_run(
        self,
        run_id: str,
        workflow_name: str,
        workflow_hash: str,
        state: dict[str, Any],
        meta: dict[str, Any] | None = None,
    ) -> RunRecord:
        """Register a run with its first checkpoint (seq 0). Raises `RunExists`."""
        ...

    async def save_checkpoint(self, run_id: str, checkpoint: Checkpoint) -> int:
        """Write the checkpoint and the run's status/cost atomically; returns its seq."""
        ...

    async def save_delta(self, run_id: str, delta: CheckpointDelta) -> int:
        """Write one delta (a row of its own) and the run's status/cost atomically;
        returns its seq, from the same series as `save_checkpoint`'s."""
        ...

    async def load_latest(self, run_id: str) -> Checkpoint | None:
        """The newest whole checkpoint with every later delta applied; None if no run."""
        ...

    async def get_run(self, run_id: str) -> RunRecord | None: ...

    async def list_runs(
        self, *, status: str | None = None, limit: int | None = 100
    ) -> list[RunRecord]:
        """Newest first (by `updated_at`)."""
        ...

    async def set_status(self, run_id: str, status: RunStatus) -> None: ...

    async def record_tool_call(
        self,
        run_id: str,
        step_id: str,
        turn: int,
        call_id: str,
        *,
        status: ToolCallStatus,
        result: Any = None,
        idempotent: bool = False,
        name: str | None = None,
        arguments: Any = None,
    ) -> None:
        """Write-ahead: `in_flight` before the tool runs, `done` with its result after.
        A call already `done` is never set back to `in_flight` (raises `StoreError`)."""
        ...

    async def get_tool_calls(self, run_id: str, step_id: str | None = None
                             ) -> list[ToolCallRecord]: ...

    async def record_model_exchange(
        self, run_id: str, step_id: str, turn: int, request_hash: str, response: Any
    ) -> None: ...

    async def get_model_exchanges(self, run_id: str, step_id: str | None = None
                                  ) -> list[ModelExchangeRecord]: ...

    async def prune(
        self, older_than: timedelta, *, statuses: frozenset[str] = FINISHED_STATUSES
    ) -> int:
        """Delete runs in `statuses` last updated before now - older_than; returns count."""
        ...

    async def close(self) -> None: ...


def check_status(status: str) -> None:
    if status not in RUN_STATUSES:
        raise StoreError(f"unknown run status {status!r}; expected one of {sorted(RUN_STATUSES)}")


def check_tool_status(status: str) -> None:
    if status not in ("in_flight", "done"):
        raise StoreError(f"tool call status must be 'in_flight' or 'done', got {status!r}")


ResumeAction: TypeAlias = Literal["run", "reuse", "rerun", "needs_decision"]


def tool_call_resume_action(record: ToolCallRecord | None) -> ResumeAction:
    """What a resumed loop does with a call the model asked for, given its write-ahead
    record: `run` (never started), `reuse` (done: send the stored result, do not call),
    `rerun` (in flight when the run died, and the tool is idempotent) or `needs_decision`
    (in flight and not idempotent: it may or may not have happened; ask a person)."""
    if record is None:
        return "run"
    if record.status == "done":
        return "reuse"
    return "rerun" if record.idempotent else "needs_decision"
