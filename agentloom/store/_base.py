"""What a checkpoint store is: its errors and the async protocol every backend meets (the
records it keeps are in `_records`).

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

from datetime import UTC, datetime, timedelta
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from agentloom.errors import AgentLoomError, ConfigError
from agentloom.store._records import (
    FINISHED_STATUSES,
    RUN_STATUSES,
    Checkpoint,
    CheckpointDelta,
    ModelExchangeRecord,
    RunRecord,
    RunStatus,
    ToolCallRecord,
    ToolCallStatus,
)


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


@runtime_checkable
class CheckpointStore(Protocol):
    """Durable runs. Every write is one transaction: it lands whole or not at all.

    Optional capabilities (`claim_run`, `find_runs`, `load_writes`, `load_step_facts`,
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


MAX_LEASE_SECONDS = 30 * 86400.0
"""The longest claim a store takes: a lease is renewed as the holder goes on, and a
dead holder's run waits out what is left of it."""


def check_lease(lease_seconds: float) -> None:
    """A claim's lease: more than 0 seconds, at most `MAX_LEASE_SECONDS` (NaN, infinity
    and 1e300 are refused here, not as an OverflowError from the date arithmetic)."""
    if not (isinstance(lease_seconds, (int, float)) and not isinstance(lease_seconds, bool)
            and 0 < lease_seconds <= MAX_LEASE_SECONDS):
        raise StoreError(f"a claim's lease must be more than 0 and at most "
                         f"{MAX_LEASE_SECONDS:.0f} seconds (30 days), got {lease_seconds!r}")


MAX_STORED_BYTES = 256 * 1024 * 1024
"""The most JSON text one stored value holds (a checkpoint's or delta's payload, a run's
meta, a tool call's result or arguments, a model reply): eight times a model reply
(32 MiB) or a rendered template (32 Mi characters), and about what PostgreSQL's JSONB
holds at all. A write past it is refused before anything is written; a stored value
past it (a damaged or hostile database) is a `StoreCorrupt`, found before it is read
or decoded. The default of each store's `max_stored_bytes`."""


def check_max_stored_bytes(value: Any) -> int:
    """A store's `max_stored_bytes`: a whole number of bytes, 1 or more."""
    if type(value) is not int or value < 1:
        raise StoreError(f"max_stored_bytes must be a whole number of bytes, 1 or more, "
                         f"got {value!r}")
    return value


def shown_bytes(size: int) -> str:
    """`size` as a message writes it beside the exact count: 256 MiB, 64 KiB, 1000 bytes."""
    for unit, name in ((1024 ** 3, "GiB"), (1024 ** 2, "MiB"), (1024, "KiB")):
        if size % unit == 0:
            return f"{size // unit} {name}"
    return f"{size} bytes"


def check_stored_size(text: str, what: str, *names: Any,
                      limit: int = MAX_STORED_BYTES) -> str:
    """`text` (JSON a store is about to write) if it is at most `limit` (the store's
    `max_stored_bytes`) long in UTF-8, else a `StoreError` naming `what` (a `str.format`
    template, filled with the reprs of `names` only then); nothing has been written yet."""
    size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
    if size > limit:
        what = what.format(*(repr(n)[:80] for n in names))
        raise StoreError(f"{what} is {size} bytes of JSON, more than the "
                         f"{limit} ({shown_bytes(limit)}) a run store keeps in one value; "
                         "nothing was written")
    return text


LEASE_CLOCK_SLACK_SECONDS = 86400.0
"""How far ahead of ours another host's clock may run: a lease it wrote may end this
much past the longest one we take and still hold."""

_FARTHEST_LEASE = timedelta(seconds=MAX_LEASE_SECONDS + LEASE_CLOCK_SLACK_SECONDS)


def farthest_lease_end(now: datetime) -> datetime:
    """The latest end a lease taken by now can have: `MAX_LEASE_SECONDS` from now, plus
    `LEASE_CLOCK_SLACK_SECONDS` for a claimer whose clock runs ahead."""
    try:
        return now + _FARTHEST_LEASE
    except OverflowError:  # a clock at the end of time: no lease reads as too far
        return datetime.max.replace(tzinfo=now.tzinfo or UTC)


def lease_holds(lease_until: datetime | None, now: datetime) -> bool:
    """Whether a stored lease still keeps other claimers out at `now`: it ends after
    now, and no later than `farthest_lease_end(now)`. A lease further out (year 9999,
    from a damaged or hostile worker, or a clock years ahead) is one no claim could
    have taken; it counts as lapsed, so the run can be claimed again, not never."""
    return lease_until is not None and now <= lease_until <= farthest_lease_end(now)


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
