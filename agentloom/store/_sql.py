"""The store logic both SQL backends share, written once against a tiny database seam.

SQLite (a worker thread) and PostgreSQL (psycopg async) differ in how a statement runs,
not in what the store does. `SqlDb` hides that: `transaction()` yields something with one
method, `execute(sql, params) -> rows`. Statements use `?` placeholders and `?j` for a JSON
parameter; the PostgreSQL adapter rewrites them (`%s`, `%s::jsonb`). The writes a run
makes at every step (a delta, a model exchange, a tool call) are single statements whose
SQL checks the run itself, sent with `batch()`: one round trip each, and a queued model
exchange rides in the same trip as the run's next write (`_pending.py`). Every public method
is one transaction, so a write lands whole or not at all; the seq of a checkpoint or delta
comes from `UPDATE runs ... RETURNING latest_seq` inside it, so it is monotonic per run even
with several writers (the row lock serialises them).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any, Protocol

from agentloom.store._base import (
    FINISHED_STATUSES,
    Checkpoint,
    CheckpointDelta,
    ModelExchangeRecord,
    RunExists,
    RunNotFound,
    RunPage,
    RunQuery,
    RunRecord,
    RunStatus,
    StoredWrite,
    StoreError,
    ToolCallRecord,
    ToolCallStatus,
    apply_delta,
    check_status,
    check_tool_status,
    like_pattern,
)
from agentloom.store._migrations import MIGRATIONS, MIGRATIONS_TABLE_SQL, migration_name
from agentloom.store._pending import PendingWrites, Statement
from agentloom.store._serde import (
    JsonSerializer,
    Serializer,
    checkpoint_from_payload,
    checkpoint_to_payload,
    delta_from_payload,
    delta_to_payload,
)

Rows = list[tuple[Any, ...]]


class SqlTx(Protocol):
    async def execute(self, sql: str, params: Sequence[Any] = ()) -> Rows: ...


class SqlDb(Protocol):
    dialect: str

    async def open(self) -> None: ...

    def transaction(self) -> AbstractAsyncContextManager[SqlTx]: ...

    async def batch(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> list[Rows]:
        """Run `statements` as one transaction, in one trip where the driver allows
        (SQLite: one hop to its thread for BEGIN, all of them and COMMIT)."""
        ...

    async def migration_lock(self, tx: SqlTx) -> None:
        """Serialise migrations between processes (PostgreSQL: an advisory lock)."""
        ...

    async def close(self) -> None: ...


def utcnow() -> datetime:
    return datetime.now(UTC)


_RUN_COLS = ("run_id, workflow_name, workflow_hash, status, meta, started_at, updated_at, "
             "cost_usd, latest_seq, claimed_by, lease_until")


class SqlStore:
    """A `CheckpointStore` over any `SqlDb`. Opens and migrates on first use."""

    def __init__(self, db: SqlDb, *, serde: Serializer | None = None,
                 now: Callable[[], datetime] | None = None,
                 keep_checkpoints: int | None = None) -> None:
        if keep_checkpoints is not None and keep_checkpoints < 1:
            raise StoreError(f"keep_checkpoints must be at least 1, got {keep_checkpoints}")
        self._keep = keep_checkpoints
        self._db = db
        self._serde: Serializer = serde or JsonSerializer()
        self._now = now or utcnow
        self._ready = False
        self._ready_lock = asyncio.Lock()
        self._closed = False
        self._queued = PendingWrites(self._send)

    async def _send(self, statements: list[Statement]) -> list[Rows]:
        await self._ensure()
        return await self._db.batch(statements)

    def _carried(self, queued: list[Statement], statement: Statement) -> list[Statement]:
        """`statement` with the run's queued statements before it, for one `batch` whose
        last result is the statement's: on PostgreSQL folded into it as data-modifying
        CTEs (one statement, one round trip), elsewhere run before it in its transaction."""
        if not queued:
            return [statement]
        if self._db.dialect != "postgres":
            return [*queued, statement]
        sql, params = statement
        ctes = ", ".join(f"q{i} AS ({q})" for i, (q, _) in enumerate(queued))
        merged = f"WITH {ctes}, {sql[5:]}" if sql.startswith("WITH ") else f"WITH {ctes} {sql}"
        return [(merged, [p for _, ps in queued for p in ps] + list(params))]

    async def __aenter__(self) -> SqlStore:
        await self._ensure()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _ensure(self) -> None:
        if self._ready:
            return
        if self._closed:
            raise StoreError("the store is closed")
        async with self._ready_lock:
            if self._ready:
                return
            await self._db.open()
            async with self._db.transaction() as tx:
                await self._db.migration_lock(tx)
                await tx.execute(MIGRATIONS_TABLE_SQL)
                applied = {r[0] for r in await tx.execute("SELECT name FROM agentloom_migrations")}
                for fn in MIGRATIONS:
                    name = migration_name(fn)
                    if name in applied:
                        continue
                    for statement in fn(self._db.dialect):
                        await tx.execute(statement)
                    await tx.execute(
                        "INSERT INTO agentloom_migrations (name, applied_at) VALUES (?, ?)",
                        (name, self._now().isoformat()),
                    )
            self._ready = True

    # --- conversions ------------------------------------------------------------------

    def _dumps(self, value: Any) -> str:
        return self._serde.dumps(value)

    def _loads(self, value: Any) -> Any:
        return None if value is None else self._serde.loads(value)

    @staticmethod
    def _dt(value: Any) -> datetime | None:
        if value is None or isinstance(value, datetime):
            return value
        return datetime.fromisoformat(str(value))

    def _run(self, row: tuple[Any, ...]) -> RunRecord:
        started, updated = self._dt(row[5]), self._dt(row[6])
        assert started is not None and updated is not None
        return RunRecord(
            run_id=row[0], workflow_name=row[1], workflow_hash=row[2], status=row[3],
            meta=self._loads(row[4]) or {}, started_at=started, updated_at=updated,
            cost_usd=Decimal(row[7]) if row[7] is not None else None, latest_seq=int(row[8]),
            claimed_by=row[9], lease_until=self._dt(row[10]),
        )

    # --- runs and checkpoints ---------------------------------------------------------

    async def create_run(self, run_id: str, workflow_name: str, workflow_hash: str,
                         state: dict[str, Any], meta: dict[str, Any] | None = None) -> RunRecord:
        await self._ensure()
        now = self._now()
        payload = self._dumps(checkpoint_to_payload(Checkpoint(state=state)))
        meta_json = self._dumps(meta or {})
        try:
            # One trip for both rows; a run id already taken fails the first statement
            # (its primary key), and the transaction leaves nothing written.
            await self._db.batch([
                ("INSERT INTO runs (run_id, workflow_name, workflow_hash, status, meta, "
                 "started_at, updated_at, cost_usd, latest_seq) VALUES (?, ?, ?, ?, ?j, ?, ?, "
                 "NULL, 0)", (run_id, workflow_name, workflow_hash, "running", meta_json, now,
                              now)),
                ("INSERT INTO checkpoints (run_id, seq, created_at, payload) VALUES "
                 "(?, 0, ?, ?j)", (run_id, now, payload)),
            ])
        except Exception:
            if await self.get_run(run_id) is not None:
                raise RunExists(run_id) from None
            raise
        run = await self.get_run(run_id)
        assert run is not None
        return run

    async def save_checkpoint(self, run_id: str, checkpoint: Checkpoint) -> int:
        check_status(checkpoint.status)
        await self._ensure()
        payload = self._dumps(checkpoint_to_payload(checkpoint))  # fails before any write
        after: list[tuple[str, Sequence[Any]]] = []
        if self._keep is not None:
            newest = "(SELECT latest_seq FROM runs WHERE run_id = ?)"
            after = [
                (f"DELETE FROM checkpoints WHERE run_id = ? AND seq <= {newest} - ?",
                 (run_id, run_id, self._keep)),
                # Deltas before the newest whole checkpoint no longer shape the run.
                (f"DELETE FROM checkpoint_deltas WHERE run_id = ? AND seq < {newest}",
                 (run_id, run_id)),
            ]
        return await self._append("checkpoints", run_id, checkpoint.status,
                                  checkpoint.cost_usd, payload, after)

    async def save_delta(self, run_id: str, delta: CheckpointDelta) -> int:
        check_status(delta.status)
        await self._ensure()
        payload = self._dumps(delta_to_payload(delta))  # fails before any write
        return await self._append("checkpoint_deltas", run_id, delta.status, delta.cost_usd,
                                  payload)

    async def _append(self, table: str, run_id: str, status: str, cost_usd: Decimal | None,
                      payload: str, after: Sequence[tuple[str, Sequence[Any]]] = ()) -> int:
        """The run's next seq (taken with its row locked) and the write stored under it,
        in one transaction; the INSERT reads the seq the UPDATE made, so no value goes
        back to Python between them."""
        now = self._now()
        cost = str(cost_usd) if cost_usd is not None else None
        queued = self._queued.take(run_id)  # this run's queued replies go first
        if self._db.dialect == "postgres" and not after:
            # One statement (PostgreSQL runs an UPDATE in a WITH): one round trip, where
            # a transaction of two costs four.
            (rows,) = await self._db.batch(self._carried(queued, (
                "WITH u AS (UPDATE runs SET latest_seq = latest_seq + 1, status = ?, "
                "updated_at = ?, cost_usd = COALESCE(?, cost_usd) WHERE run_id = ? "
                f"RETURNING run_id, latest_seq) INSERT INTO {table} (run_id, seq, "
                "created_at, payload) SELECT run_id, latest_seq, ?, ?j FROM u RETURNING seq",
                (status, now, cost, run_id, now, payload))))
            if not rows:
                raise RunNotFound(run_id)
            return int(rows[0][0])
        results = await self._db.batch([
            *queued,
            ("UPDATE runs SET latest_seq = latest_seq + 1, status = ?, updated_at = ?, "
             "cost_usd = COALESCE(?, cost_usd) WHERE run_id = ?", (status, now, cost, run_id)),
            (f"INSERT INTO {table} (run_id, seq, created_at, payload) SELECT run_id, "
             "latest_seq, ?, ?j FROM runs WHERE run_id = ? RETURNING seq",
             (now, payload, run_id)),
            *after,
        ])
        inserted = results[len(queued) + 1]
        if not inserted:
            raise RunNotFound(run_id)
        return int(inserted[0][0])

    async def load_latest(self, run_id: str) -> Checkpoint | None:
        await self._ensure()
        async with self._db.transaction() as tx:
            rows = await tx.execute(
                "SELECT seq, created_at, payload FROM checkpoints WHERE run_id = ? "
                "ORDER BY seq DESC LIMIT 1", (run_id,),
            )
            if not rows:
                return None
            deltas = await tx.execute(
                "SELECT seq, created_at, payload FROM checkpoint_deltas WHERE run_id = ? "
                "AND seq > ? ORDER BY seq", (run_id, rows[0][0]),
            )
        seq, created, payload = rows[0]
        cp = checkpoint_from_payload(self._loads(payload), seq=int(seq),
                                     created_at=self._dt(created))
        for seq, created, payload in deltas:
            apply_delta(cp, delta_from_payload(self._loads(payload)), seq=int(seq),
                        created_at=self._dt(created))
        return cp

    async def load_writes(self, run_id: str, *, after_seq: int = -1) -> list[StoredWrite]:
        """The run's kept writes (whole checkpoints and deltas) numbered above
        `after_seq`, in seq order: what `load_latest` folds, from the start; the run page
        replays them for the state after each step. Both tables are keyed (run_id, seq),
        so each side is an index range."""
        await self._ensure()
        async with self._db.transaction() as tx:
            rows = await tx.execute(
                "SELECT seq, created_at, payload, 0 FROM checkpoints WHERE run_id = ? "
                "AND seq > ? UNION ALL SELECT seq, created_at, payload, 1 FROM "
                "checkpoint_deltas WHERE run_id = ? AND seq > ? ORDER BY 1",
                (run_id, after_seq, run_id, after_seq))
        out: list[StoredWrite] = []
        for seq, created, payload, is_delta in rows:
            data, when = self._loads(payload), self._dt(created)
            out.append(StoredWrite(seq=int(seq), created_at=when, delta=delta_from_payload(data))
                       if is_delta else StoredWrite(seq=int(seq), created_at=when,
                       checkpoint=checkpoint_from_payload(data, seq=int(seq), created_at=when)))
        return out

    async def load_latest_many(self, run_ids: Sequence[str]) -> dict[str, Checkpoint]:
        """`load_latest` of each run (those in the store), in one transaction: the run
        list's page of 50 asks once, not 50 times."""
        await self._ensure()
        ids = list(dict.fromkeys(run_ids))
        if not ids:
            return {}
        marks = ", ".join("?" for _ in ids)
        newest = "(SELECT MAX(seq) FROM checkpoints m WHERE m.run_id = {t}.run_id)"
        async with self._db.transaction() as tx:
            bases = await tx.execute(
                f"SELECT run_id, seq, created_at, payload FROM checkpoints c WHERE run_id IN "
                f"({marks}) AND seq = {newest.format(t='c')}", ids)
            deltas = await tx.execute(
                f"SELECT run_id, seq, created_at, payload FROM checkpoint_deltas d WHERE "
                f"run_id IN ({marks}) AND seq > {newest.format(t='d')} ORDER BY run_id, seq",
                ids)
        out = {run_id: checkpoint_from_payload(self._loads(payload), seq=int(seq),
                                               created_at=self._dt(created))
               for run_id, seq, created, payload in bases}
        for run_id, seq, created, payload in deltas:
            if run_id in out:
                apply_delta(out[run_id], delta_from_payload(self._loads(payload)),
                            seq=int(seq), created_at=self._dt(created))
        return out

    async def get_run(self, run_id: str) -> RunRecord | None:
        await self._ensure()
        (rows,) = await self._db.batch([(f"SELECT {_RUN_COLS} FROM runs WHERE run_id = ?",
                                         (run_id,))])  # one statement: one trip
        return self._run(rows[0]) if rows else None

    async def list_runs(self, *, status: str | None = None, limit: int | None = 100
                        ) -> list[RunRecord]:
        await self._ensure()
        sql = f"SELECT {_RUN_COLS} FROM runs"
        params: list[Any] = []
        if status is not None:
            sql += " WHERE status = ?"
            params.append(status)
        sql += " ORDER BY updated_at DESC, run_id"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(int(limit))
        async with self._db.transaction() as tx:
            rows = await tx.execute(sql, params)
        return [self._run(r) for r in rows]

    async def find_runs(self, query: RunQuery | None = None, *, limit: int = 50,
                        offset: int = 0) -> RunPage:
        """One page of the runs `query` matches, newest first (as `list_runs`), and their
        total; the run list of `agentloom ui` pages through this."""
        await self._ensure()
        where, params = self._where(query or RunQuery())
        async with self._db.transaction() as tx:
            total = int((await tx.execute(f"SELECT COUNT(*) FROM runs{where}", params))[0][0])
            rows = await tx.execute(
                f"SELECT {_RUN_COLS} FROM runs{where} ORDER BY updated_at DESC, run_id "
                "LIMIT ? OFFSET ?", [*params, max(0, int(limit)), max(0, int(offset))])
        return RunPage(runs=[self._run(r) for r in rows], total=total)

    def _where(self, query: RunQuery) -> tuple[str, list[Any]]:
        terms: list[str] = []
        params: list[Any] = []
        if query.status is not None:
            terms.append("status = ?")
            params.append(query.status)
        if query.workflow is not None:
            terms.append("workflow_name = ?")
            params.append(query.workflow)
        if query.run_id_contains:
            terms.append("run_id LIKE ? ESCAPE '\\'")
            params.append(like_pattern(query.run_id_contains))
        if query.batch_id is not None:
            terms.append("meta->>'batch_id' = ?" if self._db.dialect == "postgres"
                         else "json_extract(meta, '$.batch_id') = ?")
            params.append(query.batch_id)
        return (" WHERE " + " AND ".join(terms) if terms else ""), params

    async def set_status(self, run_id: str, status: RunStatus) -> None:
        check_status(status)
        await self._ensure()
        *_, rows = await self._db.batch(self._carried(self._queued.take(run_id), (
            "UPDATE runs SET status = ?, updated_at = ? WHERE run_id = ? RETURNING run_id",
            (status, self._now(), run_id))))
        if not rows:
            raise RunNotFound(run_id)

    # --- write-ahead for tool calls and model exchanges -------------------------------

    async def _require_run(self, tx: SqlTx, run_id: str) -> None:
        if not await tx.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)):
            raise RunNotFound(run_id)

    async def record_tool_call(self, run_id: str, step_id: str, turn: int, call_id: str, *,
                               status: ToolCallStatus, result: Any = None,
                               idempotent: bool = False, name: str | None = None,
                               arguments: Any = None) -> None:
        check_tool_status(status)
        await self._ensure()
        result_json = self._dumps(result)
        args_json = self._dumps(arguments) if arguments is not None else None
        # One statement: nothing for an unknown run, and a call already done is left
        # alone when asked back to in_flight; either way no row comes back. The run's
        # queued replies go first: the reply that asked for this call is stored before
        # the call can run.
        *_, rows = await self._db.batch(self._carried(self._queued.take(run_id), (
            "INSERT INTO tool_calls (run_id, step_id, call_id, turn, status, idempotent, "
            "name, arguments, result, updated_at) SELECT ?, ?, ?, ?, ?, ?, ?, ?j, ?j, ? "
            "WHERE EXISTS (SELECT 1 FROM runs WHERE run_id = ?) "
            "ON CONFLICT (run_id, step_id, call_id) DO UPDATE SET turn = excluded.turn, "
            "status = excluded.status, idempotent = excluded.idempotent, "
            "name = COALESCE(excluded.name, tool_calls.name), "
            "arguments = COALESCE(excluded.arguments, tool_calls.arguments), "
            "result = excluded.result, updated_at = excluded.updated_at "
            "WHERE NOT (tool_calls.status = 'done' AND excluded.status = 'in_flight') "
            "RETURNING run_id",
            (run_id, step_id, call_id, turn, status, bool(idempotent), name, args_json,
             result_json, self._now(), run_id),
        )))
        if rows:
            return
        if await self.get_run(run_id) is None:
            raise RunNotFound(run_id)
        raise StoreError(
            f"tool call {call_id!r} of step {step_id!r} (run {run_id!r}) is already "
            "done; it cannot go back to in_flight"
        )

    async def get_tool_calls(self, run_id: str, step_id: str | None = None
                             ) -> list[ToolCallRecord]:
        await self._ensure()
        sql = ("SELECT run_id, step_id, turn, call_id, status, idempotent, result, name, "
               "arguments, updated_at FROM tool_calls WHERE run_id = ?")
        params: list[Any] = [run_id]
        if step_id is not None:
            sql += " AND step_id = ?"
            params.append(step_id)
        sql += " ORDER BY step_id, turn, call_id"
        async with self._db.transaction() as tx:
            rows = await tx.execute(sql, params)
        return [
            ToolCallRecord(run_id=r[0], step_id=r[1], turn=int(r[2]), call_id=r[3], status=r[4],
                           idempotent=bool(r[5]), result=self._loads(r[6]), name=r[7],
                           arguments=self._loads(r[8]), updated_at=self._dt(r[9]))
            for r in rows
        ]

    def _exchange(self, run_id: str, step_id: str, turn: int, request_hash: str,
                  response: Any) -> Statement:
        return (
            "INSERT INTO model_exchanges (run_id, step_id, turn, request_hash, response, "
            "created_at) SELECT ?, ?, ?, ?, ?j, ? WHERE EXISTS (SELECT 1 FROM runs WHERE "
            "run_id = ?) ON CONFLICT (run_id, step_id, turn, request_hash) DO UPDATE SET "
            "response = excluded.response, created_at = excluded.created_at RETURNING run_id",
            (run_id, step_id, turn, request_hash, self._dumps(response), self._now(), run_id),
        )

    async def record_model_exchange(self, run_id: str, step_id: str, turn: int,
                                    request_hash: str, response: Any) -> None:
        await self._ensure()
        statement = self._exchange(run_id, step_id, turn, request_hash, response)
        *_, rows = await self._db.batch([*self._queued.take(run_id), statement])
        if not rows:
            raise RunNotFound(run_id)

    def queue_model_exchange(self, run_id: str, step_id: str, turn: int, request_hash: str,
                             response: Any) -> None:
        """`record_model_exchange`, written with the run's next write (in its
        transaction) instead of a trip of its own: see `_pending.py` for what holds.
        A reply that can't be encoded raises here."""
        if self._closed:
            raise StoreError("the store is closed")
        self._queued.add(run_id, self._exchange(run_id, step_id, turn, request_hash,
                                                response))

    async def flush_model_exchanges(self, run_id: str) -> None:
        """Write the run's queued replies now (a no-op when none is queued); raises a
        failure of any of them."""
        await self._queued.settle(run_id)

    async def get_model_exchanges(self, run_id: str, step_id: str | None = None
                                  ) -> list[ModelExchangeRecord]:
        await self._ensure()
        await self._queued.settle(run_id)
        sql = ("SELECT run_id, step_id, turn, request_hash, response, created_at "
               "FROM model_exchanges WHERE run_id = ?")
        params: list[Any] = [run_id]
        if step_id is not None:
            sql += " AND step_id = ?"
            params.append(step_id)
        sql += " ORDER BY step_id, turn, created_at"
        async with self._db.transaction() as tx:
            rows = await tx.execute(sql, params)
        return [
            ModelExchangeRecord(run_id=r[0], step_id=r[1], turn=int(r[2]), request_hash=r[3],
                                response=self._loads(r[4]), created_at=self._dt(r[5]))
            for r in rows
        ]

    # --- retention and claims ---------------------------------------------------------

    async def prune(self, older_than: timedelta, *,
                    statuses: frozenset[str] = FINISHED_STATUSES) -> int:
        await self._ensure()
        if not statuses:
            return 0
        cutoff = self._now() - older_than
        marks = ", ".join("?" for _ in statuses)
        where = f"updated_at < ? AND status IN ({marks})"
        params = (cutoff, *sorted(statuses))
        async with self._db.transaction() as tx:
            ids = await tx.execute(f"SELECT run_id FROM runs WHERE {where}", params)
            for table in ("checkpoints", "checkpoint_deltas", "tool_calls",
                          "model_exchanges"):
                await tx.execute(
                    f"DELETE FROM {table} WHERE run_id IN (SELECT run_id FROM runs WHERE {where})",
                    params,
                )
            await tx.execute(f"DELETE FROM runs WHERE {where}", params)
        return len(ids)

    async def claim_run(self, run_id: str, worker_id: str, lease_seconds: float) -> bool:
        """Take the run for `worker_id` until the lease ends. True if this worker holds it
        now (it was free, expired, or already ours); False if another worker holds it."""
        await self._ensure()
        now = self._now()
        async with self._db.transaction() as tx:
            # One conditional UPDATE: the row lock makes two claimers take turns, and the
            # loser re-checks the WHERE against the winner's row.
            rows = await tx.execute(
                "UPDATE runs SET claimed_by = ?, lease_until = ? WHERE run_id = ? AND "
                "(claimed_by IS NULL OR claimed_by = ? OR lease_until IS NULL OR lease_until < ?)"
                " RETURNING run_id",
                (worker_id, now + timedelta(seconds=lease_seconds), run_id, worker_id, now),
            )
            if rows:
                return True
            await self._require_run(tx, run_id)
        return False

    async def release_claim(self, run_id: str, worker_id: str) -> None:
        await self._ensure()
        async with self._db.transaction() as tx:
            await tx.execute(
                "UPDATE runs SET claimed_by = NULL, lease_until = NULL "
                "WHERE run_id = ? AND claimed_by = ?", (run_id, worker_id),
            )

    async def close(self) -> None:
        try:
            await self._queued.close()
        finally:
            self._closed = True
            self._ready = False
            await self._db.close()
