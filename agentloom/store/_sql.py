"""The store logic both SQL backends share, written once against a tiny database seam.

SQLite (a worker thread) and PostgreSQL (psycopg async) differ in how a statement runs,
not in what the store does; `_sql_base.py` holds the seam (`SqlDb`) and what every part
shares, `_sql_journal.py` the tool calls and model exchanges, this module the runs, their
checkpoints and deltas, the queries and retention. The writes a run makes at every step
(a delta, a model exchange, a tool call) are single statements whose SQL checks the run
itself, sent with `batch()`: one round trip each, and a queued model exchange rides in
the same trip as the run's next write (`_pending.py`). Every public method is one
transaction, so a write lands whole or not at all; the seq of a checkpoint or delta
comes from the `UPDATE runs` that advances `latest_seq` inside it, so it is monotonic per
run even with several writers (the row lock serialises them).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from agentloom.store._base import (
    RunExists,
    RunNotFound,
    check_lease,
    check_status,
    farthest_lease_end,
)
from agentloom.store._facts import CHUNK, facts_of, facts_sql, fold
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
    RunPage,
    RunQuery,
    RunRecord,
    RunStatus,
    StepFacts,
    StoredWrite,
    apply_delta,
    like_pattern,
)
from agentloom.store._sql_base import WROTE_ROW, Rows, SqlDb, SqlTx, utcnow
from agentloom.store._sql_journal import SqlJournal
from agentloom.store._stored import Damaged, shown, stored_count

__all__ = ["Rows", "SqlDb", "SqlStore", "SqlTx", "utcnow"]


class SqlStore(SqlJournal):
    """A `CheckpointStore` over any `SqlDb`. Opens and migrates on first use."""

    # --- runs and checkpoints ---------------------------------------------------------

    async def create_run(self, run_id: str, workflow_name: str, workflow_hash: str,
                         state: dict[str, Any], meta: dict[str, Any] | None = None) -> RunRecord:
        await self._ensure()
        now = self._now()
        payload = self._dumps(checkpoint_to_payload(Checkpoint(state=state)),
                              "the first checkpoint of run {}", run_id)
        meta_json = self._dumps(meta or {}, "the meta of run {}", run_id)
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
        # The row as written, without a trip to read it back.
        when = now.astimezone(UTC)
        return RunRecord(run_id=run_id, workflow_name=workflow_name,
                         workflow_hash=workflow_hash, status="running",
                         meta=self._loads(meta_json) or {}, started_at=when, updated_at=when,
                         cost_usd=None, latest_seq=0)

    async def save_checkpoint(self, run_id: str, checkpoint: Checkpoint) -> int:
        check_status(checkpoint.status)
        await self._ensure()
        payload = self._dumps(checkpoint_to_payload(checkpoint),  # fails before any write
                              "the checkpoint of run {}", run_id)
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
        if not self._ready:
            await self._ensure()
        payload = self._dumps(delta_to_payload(delta),  # fails before any write
                              "the write of run {}", run_id)
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
            (rows,) = await self._batch_carrying(run_id, queued, self._carried(queued, (
                "WITH u AS (UPDATE runs SET latest_seq = latest_seq + 1, status = ?, "
                "updated_at = ?, cost_usd = COALESCE(?, cost_usd) WHERE run_id = ? "
                f"RETURNING run_id, latest_seq) INSERT INTO {table} (run_id, seq, "
                "created_at, payload) SELECT run_id, latest_seq, ?, ?j FROM u RETURNING seq",
                (status, now, cost, run_id, now, payload))))
            if not rows:
                raise RunNotFound(run_id)
            return int(rows[0][0])
        results = await self._batch_carrying(run_id, queued, [
            *queued,
            ("UPDATE runs SET latest_seq = latest_seq + 1, status = ?, updated_at = ?, "
             "cost_usd = COALESCE(?, cost_usd) WHERE run_id = ?", (status, now, cost, run_id)),
            # Stamped with the time the UPDATE just wrote: one timestamp to convert.
            (f"INSERT INTO {table} (run_id, seq, created_at, payload) SELECT run_id, "
             "latest_seq, updated_at, ?j FROM runs WHERE run_id = ?", (payload, run_id)),
            # The seq read back, not RETURNed: SQLite's RETURNING builds a temporary
            # table, which costs more than this lookup (the write lock is still held).
            ("SELECT latest_seq FROM runs WHERE run_id = ?", (run_id,)),
            *after,
        ])
        inserted = results[len(queued) + 2]
        if not inserted:
            raise RunNotFound(run_id)
        return int(inserted[0][0])

    async def load_latest(self, run_id: str) -> Checkpoint | None:
        await self._ensure()
        payload = self.bounded("payload")
        async with self._db.transaction() as tx:
            rows = await tx.execute(
                f"SELECT seq, created_at, {payload} FROM checkpoints WHERE run_id = ? "
                "ORDER BY seq DESC LIMIT 1", (run_id,),
            )
            if not rows:
                return None
            deltas = await tx.execute(
                f"SELECT seq, created_at, {payload} FROM checkpoint_deltas WHERE run_id = ? "
                "AND seq > ? ORDER BY seq", (run_id, rows[0][0]),
            )
        cp = self._checkpoint(run_id, rows[0])
        for row in deltas:
            seq, created, delta = self._delta(run_id, row)
            apply_delta(cp, delta, seq=seq, created_at=created)
        return cp

    def _checkpoint(self, run_id: str, row: Sequence[Any]) -> Checkpoint:
        """A stored (seq, created_at, payload) of `checkpoints` as a checkpoint; one
        that is not what the store writes is a `StoreCorrupt` naming the run."""
        seq, created, payload = row[:3]
        try:
            return checkpoint_from_payload(self._read(payload, "the payload"),
                                           seq=stored_count(seq, "seq"),
                                           created_at=self._dt(created, "created_at"))
        except Damaged as exc:
            raise self._damaged(run_id, f"checkpoint {shown(seq)}: {exc}") from None

    def _delta(self, run_id: str, row: Sequence[Any]
               ) -> tuple[int, datetime | None, CheckpointDelta]:
        """A stored (seq, created_at, payload) of `checkpoint_deltas`, checked so."""
        seq, created, payload = row[:3]
        try:
            return (stored_count(seq, "seq"), self._dt(created, "created_at"),
                    delta_from_payload(self._read(payload, "the payload")))
        except Damaged as exc:
            raise self._damaged(run_id, f"the write {shown(seq)}: {exc}") from None

    async def load_writes(self, run_id: str, *, after_seq: int = -1) -> list[StoredWrite]:
        """The run's kept writes (whole checkpoints and deltas) numbered above
        `after_seq`, in seq order: what `load_latest` folds, from the start; the run page
        replays them for the state after each step. Both tables are keyed (run_id, seq),
        so each side is an index range."""
        await self._ensure()
        payload = self.bounded("payload")
        async with self._db.transaction() as tx:
            rows = await tx.execute(
                f"SELECT seq, created_at, {payload}, 0 FROM checkpoints WHERE run_id = ? "
                f"AND seq > ? UNION ALL SELECT seq, created_at, {payload}, 1 FROM "
                "checkpoint_deltas WHERE run_id = ? AND seq > ? ORDER BY 1",
                (run_id, after_seq, run_id, after_seq))
        out: list[StoredWrite] = []
        for row in rows:
            if row[3]:
                seq, when, delta = self._delta(run_id, row)
                out.append(StoredWrite(seq=seq, created_at=when, delta=delta))
            else:
                cp = self._checkpoint(run_id, row)
                out.append(StoredWrite(seq=cp.seq, created_at=cp.created_at, checkpoint=cp))
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
        payload = self.bounded("payload")
        async with self._db.transaction() as tx:
            bases = await tx.execute(
                f"SELECT run_id, seq, created_at, {payload} FROM checkpoints c WHERE run_id "
                f"IN ({marks}) AND seq = {newest.format(t='c')}", ids)
            deltas = await tx.execute(
                f"SELECT run_id, seq, created_at, {payload} FROM checkpoint_deltas d WHERE "
                f"run_id IN ({marks}) AND seq > {newest.format(t='d')} ORDER BY run_id, seq",
                ids)
        out = {row[0]: self._checkpoint(row[0], row[1:]) for row in bases}
        for row in deltas:
            if row[0] in out:
                seq, created, delta = self._delta(row[0], row[1:])
                apply_delta(out[row[0]], delta, seq=seq, created_at=created)
        return out

    async def load_step_facts(self, run_ids: Sequence[str]
                              ) -> dict[str, dict[str, StepFacts]]:
        """Each run's step results (those in the store; as `load_latest` folds them) as
        a few facts each, read by the database's JSON functions, not decoded here: what
        `agentloom history` shows (`_facts.py`). A run with a row `load_latest` would
        read as damaged raises its `StoreCorrupt`."""
        await self._ensure()
        ids = list(dict.fromkeys(run_ids))
        out: dict[str, dict[str, StepFacts]] = {}
        damaged: set[str] = set()
        for start in range(0, len(ids), CHUNK):
            chunk = ids[start:start + CHUNK]
            async with self._db.transaction() as tx:
                rows = await tx.execute(
                    facts_sql(self._db.dialect, len(chunk), self.max_stored_bytes),
                    chunk * 2)
            facts, bad = fold(rows)
            out.update(facts)
            damaged |= bad
        for run_id in sorted(damaged):
            cp = await self.load_latest(run_id)  # raises the error naming what is wrong
            out[run_id] = facts_of(cp.step_results if cp is not None else {})
        return out

    async def list_runs(self, *, status: str | None = None, limit: int | None = 100
                        ) -> list[RunRecord]:
        await self._ensure()
        sql = f"SELECT {self.run_cols} FROM runs"
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
                f"SELECT {self.run_cols} FROM runs{where} ORDER BY updated_at DESC, run_id "
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
        queued = self._queued.take(run_id)
        *_, rows = await self._batch_carrying(run_id, queued, self._carried(queued, (
            "UPDATE runs SET status = ?, updated_at = ? WHERE run_id = ?" + WROTE_ROW,
            (status, self._now(), run_id))))
        if not rows:
            raise RunNotFound(run_id)

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
        # Every `agentloom run` prunes, and mostly nothing is old enough: one read then,
        # not a write transaction of six statements to prepare.
        (found,) = await self._db.batch([(f"SELECT 1 FROM runs WHERE {where} LIMIT 1",
                                          params)])
        if not found:
            return 0
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
        check_lease(lease_seconds)
        await self._ensure()
        now = self._now()
        async with self._db.transaction() as tx:
            # One conditional UPDATE: the row lock makes two claimers take turns, and the
            # loser re-checks the WHERE against the winner's row. A lease ending past
            # the farthest one a claim can take is lapsed (`lease_holds`).
            rows = await tx.execute(
                "UPDATE runs SET claimed_by = ?, lease_until = ? WHERE run_id = ? AND "
                "(claimed_by IS NULL OR claimed_by = ? OR lease_until IS NULL OR "
                "lease_until < ? OR lease_until > ?)" + WROTE_ROW,
                (worker_id, now + timedelta(seconds=lease_seconds), run_id, worker_id, now,
                 farthest_lease_end(now)),
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

