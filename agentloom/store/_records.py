"""The records a checkpoint store keeps and hands back: a run's row, its writes (whole
checkpoints and the deltas between them), its tool calls and model exchanges, and the
queries over runs. Plain values, no I/O; `_base` says what a store does with them."""

from __future__ import annotations

from dataclasses import field
from datetime import datetime
from decimal import Decimal
from typing import Any, Literal, TypeAlias

from agentloom._record import FACTORY, FrozenRecord, Record, freeze, frozen_record, record, thaw

RunStatus: TypeAlias = Literal[
    "running", "paused", "needs_decision", "succeeded", "failed", "cancelled", "timeout",
    "budget_exceeded", "interrupted",
]
RUN_STATUSES: frozenset[str] = frozenset(RunStatus.__args__)  # type: ignore[attr-defined]
FINISHED_STATUSES: frozenset[str] = frozenset(
    {"succeeded", "failed", "cancelled", "timeout", "budget_exceeded"}
)
"""Statuses a run ends in (only `resume --retry-failed` takes one up again, from
`RETRYABLE_STATUSES`); `prune` removes only these by default."""

RETRYABLE_STATUSES: frozenset[str] = frozenset({"failed", "budget_exceeded"})
"""The finished statuses `resume --retry-failed` goes on from: a budget_exceeded run's
refused call failed its step, which runs again under the cap the resume gives."""

ToolCallStatus: TypeAlias = Literal["in_flight", "done"]


@record
class PauseInfo(Record):
    """Which step waits, and for what (an approval, an answer to `ask`)."""

    step_id: str
    waiting_for: str
    """`approval` or `answer` (or another word the engine uses)."""
    prompt: str | None = None
    call_id: str | None = None
    """Set when the pause came from inside a tool call of a tool loop."""
    data: dict[str, Any] = field(default_factory=dict)

    def __init__(self, *, step_id: str, waiting_for: str, prompt: str | None = None,
                 call_id: str | None = None, data: dict[str, Any] = FACTORY) -> None:
        self.step_id = step_id
        self.waiting_for = waiting_for
        self.prompt = prompt
        self.call_id = call_id
        self.data = {} if data is FACTORY else data


@record
class ToolLoopProgress(Record):
    """An in-progress tool loop of one step: enough to continue mid-loop on resume."""

    step_id: str
    turn: int
    messages: list[Any] = field(default_factory=list)
    """The loop's conversation so far (`Message`s, serialised by the store's serde)."""
    pending_calls: list[dict[str, Any]] = field(default_factory=list)
    """Calls the model asked for in this turn: id, name, arguments."""
    results: dict[str, Any] = field(default_factory=dict)
    """call_id -> stored result of the calls already finished in this turn."""

    def __init__(self, *, step_id: str, turn: int, messages: list[Any] = FACTORY,
                 pending_calls: list[dict[str, Any]] = FACTORY,
                 results: dict[str, Any] = FACTORY) -> None:
        self.step_id = step_id
        self.turn = turn
        self.messages = [] if messages is FACTORY else messages
        self.pending_calls = [] if pending_calls is FACTORY else pending_calls
        self.results = {} if results is FACTORY else results


@record
class Checkpoint(Record):
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

    def __init__(
        self, *, state: dict[str, Any], status: RunStatus = "running",
        step_results: dict[str, Any] = FACTORY, conversations: dict[str, Any] = FACTORY,
        tool_loops: list[ToolLoopProgress] = FACTORY, paused: PauseInfo | None = None,
        cost_usd: Decimal | None = None, extra: dict[str, Any] = FACTORY, seq: int = 0,
        created_at: datetime | None = None,
    ) -> None:
        self.state = state
        self.status = status
        self.step_results = {} if step_results is FACTORY else step_results
        self.conversations = {} if conversations is FACTORY else conversations
        self.tool_loops = [] if tool_loops is FACTORY else tool_loops
        self.paused = paused
        self.cost_usd = cost_usd
        self.extra = {} if extra is FACTORY else extra
        self.seq = seq
        self.created_at = created_at


@record
class CheckpointDelta(Record):
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

    def __init__(
        self, *, status: RunStatus = "running", state: dict[str, Any] = FACTORY,
        state_removed: list[str] = FACTORY, step_results: dict[str, Any] = FACTORY,
        step_results_removed: list[str] = FACTORY, conversations: dict[str, Any] = FACTORY,
        tool_loops: list[ToolLoopProgress] = FACTORY,
        loop_messages_kept: dict[str, int] = FACTORY, tool_loops_removed: list[str] = FACTORY,
        paused: PauseInfo | None = None, cost_usd: Decimal | None = None,
        extra: dict[str, Any] = FACTORY, extra_removed: list[str] = FACTORY,
    ) -> None:
        self.status = status
        self.state = {} if state is FACTORY else state
        self.state_removed = [] if state_removed is FACTORY else state_removed
        self.step_results = {} if step_results is FACTORY else step_results
        self.step_results_removed = ([] if step_results_removed is FACTORY
                                     else step_results_removed)
        self.conversations = {} if conversations is FACTORY else conversations
        self.tool_loops = [] if tool_loops is FACTORY else tool_loops
        self.loop_messages_kept = {} if loop_messages_kept is FACTORY else loop_messages_kept
        self.tool_loops_removed = [] if tool_loops_removed is FACTORY else tool_loops_removed
        self.paused = paused
        self.cost_usd = cost_usd
        self.extra = {} if extra is FACTORY else extra
        self.extra_removed = [] if extra_removed is FACTORY else extra_removed


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


@frozen_record
class StoredWrite(FrozenRecord):
    """One of a run's stored writes, as `load_writes` returns them: a whole checkpoint or
    a delta (exactly one is set), under its seq."""

    seq: int
    created_at: datetime | None
    checkpoint: Checkpoint | None = None
    delta: CheckpointDelta | None = None

    def __init__(self, *, seq: int, created_at: datetime | None,
                 checkpoint: Checkpoint | None = None,
                 delta: CheckpointDelta | None = None) -> None:
        this = thaw(self)
        this.seq = seq
        this.created_at = created_at
        this.checkpoint = checkpoint
        this.delta = delta
        freeze(this)


@frozen_record
class RunRecord(FrozenRecord):
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

    def __init__(
        self, *, run_id: str, workflow_name: str, workflow_hash: str, status: str,
        started_at: datetime, updated_at: datetime, cost_usd: Decimal | None, latest_seq: int,
        meta: dict[str, Any] = FACTORY, claimed_by: str | None = None,
        lease_until: datetime | None = None,
    ) -> None:
        this = thaw(self)
        this.run_id = run_id
        this.workflow_name = workflow_name
        this.workflow_hash = workflow_hash
        this.status = status
        this.started_at = started_at
        this.updated_at = updated_at
        this.cost_usd = cost_usd
        this.latest_seq = latest_seq
        this.meta = {} if meta is FACTORY else meta
        this.claimed_by = claimed_by
        this.lease_until = lease_until
        freeze(this)


@frozen_record
class StepFacts(FrozenRecord):
    """What `load_step_facts` reads of one stored step result without decoding its run:
    who answered and the tokens it used. None is unknown: not stored, or not what the
    store writes (a name that is no text, a count that is no whole number)."""

    provider: str | None = None
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None

    def __init__(self, *, provider: str | None = None, model: str | None = None,
                 input_tokens: int | None = None, output_tokens: int | None = None) -> None:
        this = thaw(self)
        this.provider = provider
        this.model = model
        this.input_tokens = input_tokens
        this.output_tokens = output_tokens
        freeze(this)


@frozen_record
class ToolCallRecord(FrozenRecord):
    """One journalled tool call of a run: `in_flight` before it runs, `done` with its
    stored result after (what a resume reuses or re-runs)."""

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

    def __init__(
        self, *, run_id: str, step_id: str, turn: int, call_id: str, status: ToolCallStatus,
        idempotent: bool, result: Any = None, name: str | None = None, arguments: Any = None,
        updated_at: datetime | None = None,
    ) -> None:
        this = thaw(self)
        this.run_id = run_id
        this.step_id = step_id
        this.turn = turn
        this.call_id = call_id
        this.status = status
        this.idempotent = idempotent
        this.result = result
        this.name = name
        this.arguments = arguments
        this.updated_at = updated_at
        freeze(this)


@frozen_record
class ModelExchangeRecord(FrozenRecord):
    """One model reply a run paid for, under the hash of its request: a resume serves it
    instead of asking again."""

    run_id: str
    step_id: str
    turn: int
    request_hash: str
    response: Any
    created_at: datetime | None = None

    def __init__(self, *, run_id: str, step_id: str, turn: int, request_hash: str,
                 response: Any, created_at: datetime | None = None) -> None:
        this = thaw(self)
        this.run_id = run_id
        this.step_id = step_id
        this.turn = turn
        this.request_hash = request_hash
        this.response = response
        this.created_at = created_at
        freeze(this)


@frozen_record
class RunQuery(FrozenRecord):
    """A filter for `find_runs`: each field set narrows the runs (all must hold)."""

    status: str | None = None
    workflow: str | None = None
    """The exact workflow name."""
    run_id_contains: str | None = None
    """A piece of the run id (matched literally: `%` and `_` are not wildcards)."""
    batch_id: str | None = None
    """The batch the run belongs to (`meta.batch_id`, set by `agentloom batch`)."""

    def __init__(self, *, status: str | None = None, workflow: str | None = None,
                 run_id_contains: str | None = None, batch_id: str | None = None) -> None:
        this = thaw(self)
        this.status = status
        this.workflow = workflow
        this.run_id_contains = run_id_contains
        this.batch_id = batch_id
        freeze(this)


@frozen_record
class RunPage(FrozenRecord):
    """One page of `find_runs`: its runs, newest first, and how many match in all."""

    runs: list[RunRecord]
    total: int

    def __init__(self, *, runs: list[RunRecord], total: int) -> None:
        this = thaw(self)
        this.runs = runs
        this.total = total
        freeze(this)


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
