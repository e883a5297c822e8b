"""An in-process store: for tests, for the conformance suite's self-test, and for runs
that need no durability.

It keeps what a database would keep, serialised (every payload goes through the same
serializer as the SQL stores), so a caller that mutates its state after a save cannot
change what was saved, and a value that a real store would refuse is refused here too.
Several `MemoryStore`s may share one `MemoryBackend`, which is how the conformance suite
"reopens" a store after a simulated crash.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from agentloom.store._base import (
    MAX_STORED_BYTES,
    RunExists,
    RunNotFound,
    StoreError,
    check_lease,
    check_max_stored_bytes,
    check_status,
    check_stored_size,
    check_tool_status,
    lease_holds,
)
from agentloom.store._facts import facts_of
from agentloom.store._payload import (
    checkpoint_from_payload,
    checkpoint_to_payload,
    delta_from_payload,
    delta_to_payload,
)
from agentloom.store._records import (
    FINISHED_STATUSES,
    Checkpoint,
    CheckpointDelta,
    ModelExchangeRecord,
    RunPage,
    RunQuery,
    RunRecord,
    RunStatus,
    StepFacts,
    StoredWrite,
    ToolCallRecord,
    ToolCallStatus,
    apply_delta,
    query_matches,
)
from agentloom.store._serde import JsonSerializer, Serializer
from agentloom.store._sql import utcnow


@dataclass(slots=True)
class MemoryBackend:
    runs: dict[str, RunRecord] = field(default_factory=dict)
    checkpoints: dict[str, list[tuple[int, datetime, str]]] = field(default_factory=dict)
    deltas: dict[str, list[tuple[int, datetime, str]]] = field(default_factory=dict)
    tool_calls: dict[tuple[str, str, str], tuple[ToolCallRecord, str, str | None]] = field(
        default_factory=dict
    )
    exchanges: dict[tuple[str, str, int, str], tuple[ModelExchangeRecord, str]] = field(
        default_factory=dict
    )


class MemoryStore:
    def __init__(self, backend: MemoryBackend | None = None, *, serde: Serializer | None = None,
                 now: Callable[[], datetime] | None = None,
                 keep_checkpoints: int | None = None,
                 max_stored_bytes: int = MAX_STORED_BYTES) -> None:
        """`max_stored_bytes`: the most JSON text one stored value holds, as a SQL store's
        (`MAX_STORED_BYTES`); a write past it is refused."""
        if keep_checkpoints is not None and keep_checkpoints < 1:
            raise StoreError(f"keep_checkpoints must be at least 1, got {keep_checkpoints}")
        self._keep = keep_checkpoints
        self.max_stored_bytes = check_max_stored_bytes(max_stored_bytes)
        self._b = backend if backend is not None else MemoryBackend()
        self._serde: Serializer = serde or JsonSerializer()
        self._now = now or utcnow
        self._closed = False

    async def __aenter__(self) -> MemoryStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _dumps(self, value: Any, what: str, *names: Any) -> str:
        """As a SQL store writes it: refused past `max_stored_bytes`, naming `what`."""
        return check_stored_size(self._serde.dumps(value), what, *names,
                                 limit=self.max_stored_bytes)

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError("the store is closed")

    def _require(self, run_id: str) -> RunRecord:
        run = self._b.runs.get(run_id)
        if run is None:
            raise RunNotFound(run_id)
        return run

    async def create_run(self, run_id: str, workflow_name: str, workflow_hash: str,
                         state: dict[str, Any], meta: dict[str, Any] | None = None) -> RunRecord:
        self._check_open()
        payload = self._dumps(checkpoint_to_payload(Checkpoint(state=state)),
                              "the first checkpoint of run {}", run_id)
        meta_copy = self._serde.loads(self._dumps(meta or {}, "the meta of run {}", run_id))
        if run_id in self._b.runs:
            raise RunExists(run_id)
        now = self._now()
        run = RunRecord(run_id=run_id, workflow_name=workflow_name, workflow_hash=workflow_hash,
                        status="running", started_at=now, updated_at=now, cost_usd=None,
                        latest_seq=0, meta=meta_copy)
        self._b.runs[run_id] = run
        self._b.checkpoints[run_id] = [(0, now, payload)]
        return run

    async def save_checkpoint(self, run_id: str, checkpoint: Checkpoint) -> int:
        self._check_open()
        check_status(checkpoint.status)
        payload = self._dumps(checkpoint_to_payload(checkpoint), "the checkpoint of run {}",
                              run_id)
        seq, now = self._advance(run_id, checkpoint.status, checkpoint.cost_usd)
        history = self._b.checkpoints[run_id]
        history.append((seq, now, payload))
        if self._keep is not None:
            if len(history) > self._keep:
                del history[: len(history) - self._keep]
            self._b.deltas[run_id] = []  # before the newest whole checkpoint: dead
        return seq

    async def save_delta(self, run_id: str, delta: CheckpointDelta) -> int:
        self._check_open()
        check_status(delta.status)
        payload = self._dumps(delta_to_payload(delta), "the write of run {}", run_id)
        seq, now = self._advance(run_id, delta.status, delta.cost_usd)
        self._b.deltas.setdefault(run_id, []).append((seq, now, payload))
        return seq

    def _advance(self, run_id: str, status: RunStatus, cost_usd: Decimal | None
                 ) -> tuple[int, datetime]:
        run = self._require(run_id)
        now = self._now()
        seq = run.latest_seq + 1
        cost = cost_usd if cost_usd is not None else run.cost_usd
        self._b.runs[run_id] = replace(run, latest_seq=seq, status=status, updated_at=now,
                                       cost_usd=cost)
        return seq, now

    async def load_latest(self, run_id: str) -> Checkpoint | None:
        self._check_open()
        cps = self._b.checkpoints.get(run_id)
        if not cps:
            return None
        seq, created, payload = cps[-1]
        cp = checkpoint_from_payload(self._serde.loads(payload), seq=seq, created_at=created)
        for dseq, dcreated, dpayload in self._b.deltas.get(run_id, ()):
            if dseq > seq:
                apply_delta(cp, delta_from_payload(self._serde.loads(dpayload)), seq=dseq,
                            created_at=dcreated)
        return cp

    async def load_writes(self, run_id: str, *, after_seq: int = -1) -> list[StoredWrite]:
        self._check_open()
        loads = self._serde.loads
        out = [StoredWrite(seq=seq, created_at=at, checkpoint=checkpoint_from_payload(
                   loads(payload), seq=seq, created_at=at))
               for seq, at, payload in self._b.checkpoints.get(run_id, ()) if seq > after_seq]
        out += [StoredWrite(seq=seq, created_at=at, delta=delta_from_payload(loads(payload)))
                for seq, at, payload in self._b.deltas.get(run_id, ()) if seq > after_seq]
        return sorted(out, key=lambda w: w.seq)

    async def load_latest_many(self, run_ids: Sequence[str]) -> dict[str, Checkpoint]:
        out = {}
        for run_id in run_ids:
            cp = await self.load_latest(run_id)
            if cp is not None:
                out[run_id] = cp
        return out

    async def get_run(self, run_id: str) -> RunRecord | None:
        self._check_open()
        return self._b.runs.get(run_id)

    async def load_step_facts(self, run_ids: Sequence[str]
                              ) -> dict[str, dict[str, StepFacts]]:
        """`SqlStore.load_step_facts`: here, of the decoded step results."""
        out: dict[str, dict[str, StepFacts]] = {}
        for run_id in dict.fromkeys(run_ids):
            cp = await self.load_latest(run_id)
            if cp is not None:
                out[run_id] = facts_of(cp.step_results)
        return out

    async def list_runs(self, *, status: str | None = None, limit: int | None = 100
                        ) -> list[RunRecord]:
        self._check_open()
        runs = [r for r in self._b.runs.values() if status is None or r.status == status]
        runs.sort(key=lambda r: r.run_id)
        runs.sort(key=lambda r: r.updated_at, reverse=True)
        return runs if limit is None else runs[:limit]

    async def find_runs(self, query: RunQuery | None = None, *, limit: int = 50,
                        offset: int = 0) -> RunPage:
        q = query or RunQuery()
        runs = [r for r in await self.list_runs(limit=None) if query_matches(q, r)]
        start = max(0, offset)
        return RunPage(runs=runs[start:start + max(0, limit)], total=len(runs))

    async def set_status(self, run_id: str, status: RunStatus) -> None:
        self._check_open()
        check_status(status)
        run = self._require(run_id)
        self._b.runs[run_id] = replace(run, status=status, updated_at=self._now())

    async def record_tool_call(self, run_id: str, step_id: str, turn: int, call_id: str, *,
                               status: ToolCallStatus, result: Any = None,
                               idempotent: bool = False, name: str | None = None,
                               arguments: Any = None) -> None:
        self._check_open()
        check_tool_status(status)
        result_json = self._dumps(result, "the result of tool call {} (run {})", call_id,
                                  run_id)
        args_json = (self._dumps(arguments, "the arguments of tool call {} (run {})",
                                 call_id, run_id) if arguments is not None else None)
        self._require(run_id)
        key = (run_id, step_id, call_id)
        old = self._b.tool_calls.get(key)
        if old is not None and old[0].status == "done" and status == "in_flight":
            raise StoreError(
                f"tool call {call_id!r} of step {step_id!r} (run {run_id!r}) is already done; "
                "it cannot go back to in_flight"
            )
        if old is not None:
            name = name if name is not None else old[0].name
            args_json = args_json if args_json is not None else old[2]
        record = ToolCallRecord(run_id=run_id, step_id=step_id, turn=turn, call_id=call_id,
                                status=status, idempotent=idempotent, name=name,
                                updated_at=self._now())
        self._b.tool_calls[key] = (record, result_json, args_json)

    async def get_tool_calls(self, run_id: str, step_id: str | None = None
                             ) -> list[ToolCallRecord]:
        self._check_open()
        out = [
            replace(rec, result=self._serde.loads(res),
                    arguments=self._serde.loads(args) if args is not None else None)
            for (rid, sid, _), (rec, res, args) in self._b.tool_calls.items()
            if rid == run_id and (step_id is None or sid == step_id)
        ]
        out.sort(key=lambda r: (r.step_id, r.turn, r.call_id))
        return out

    async def record_model_exchange(self, run_id: str, step_id: str, turn: int,
                                    request_hash: str, response: Any) -> None:
        self.queue_model_exchange(run_id, step_id, turn, request_hash, response)

    def queue_model_exchange(self, run_id: str, step_id: str, turn: int, request_hash: str,
                             response: Any) -> None:
        """Written at once: nothing here is worth deferring."""
        self._check_open()
        response_json = self._dumps(response, "the model reply of step {} (run {})",
                                    step_id, run_id)
        self._require(run_id)
        record = ModelExchangeRecord(run_id=run_id, step_id=step_id, turn=turn,
                                     request_hash=request_hash, response=None,
                                     created_at=self._now())
        self._b.exchanges[(run_id, step_id, turn, request_hash)] = (record, response_json)

    async def flush_model_exchanges(self, run_id: str) -> None:
        """Nothing is queued here."""
        self._check_open()

    async def get_model_exchanges(self, run_id: str, step_id: str | None = None
                                  ) -> list[ModelExchangeRecord]:
        self._check_open()
        out = [
            replace(rec, response=self._serde.loads(resp))
            for (rid, sid, _, _), (rec, resp) in self._b.exchanges.items()
            if rid == run_id and (step_id is None or sid == step_id)
        ]
        out.sort(key=lambda r: (r.step_id, r.turn))
        return out

    async def prune(self, older_than: timedelta, *,
                    statuses: frozenset[str] = FINISHED_STATUSES) -> int:
        self._check_open()
        cutoff = self._now() - older_than
        doomed = {rid for rid, r in self._b.runs.items()
                  if r.status in statuses and r.updated_at < cutoff}
        for rid in doomed:
            del self._b.runs[rid]
            self._b.checkpoints.pop(rid, None)
            self._b.deltas.pop(rid, None)
        for key in [k for k in self._b.tool_calls if k[0] in doomed]:
            del self._b.tool_calls[key]
        for xkey in [k for k in self._b.exchanges if k[0] in doomed]:
            del self._b.exchanges[xkey]
        return len(doomed)

    async def claim_run(self, run_id: str, worker_id: str, lease_seconds: float) -> bool:
        check_lease(lease_seconds)
        self._check_open()
        run = self._require(run_id)
        now = self._now()
        free = run.claimed_by in (None, worker_id) or not lease_holds(run.lease_until, now)
        if not free:
            return False
        self._b.runs[run_id] = replace(run, claimed_by=worker_id,
                                       lease_until=now + timedelta(seconds=lease_seconds))
        return True

    async def release_claim(self, run_id: str, worker_id: str) -> None:
        self._check_open()
        run = self._b.runs.get(run_id)
        if run is not None and run.claimed_by == worker_id:
            self._b.runs[run_id] = replace(run, claimed_by=None, lease_until=None)

    async def close(self) -> None:
        self._closed = True
