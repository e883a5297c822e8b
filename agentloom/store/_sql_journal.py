"""The SQL store's write-ahead journal: tool calls (`in_flight` before a call runs,
`done` with its result) and model exchanges (each reply, stored with the run's next write
when queued). Each write is one statement whose SQL checks the run itself, so it needs
no transaction of its own.
"""

from __future__ import annotations

from typing import Any

from agentloom.store._base import RunNotFound, StoreError, check_tool_status
from agentloom.store._pending import Statement
from agentloom.store._records import ModelExchangeRecord, ToolCallRecord, ToolCallStatus
from agentloom.store._sql_base import WROTE_ROW, SqlBase, SqlTx
from agentloom.store._stored import Damaged, stored_count


class SqlJournal(SqlBase):
    """Tool calls and model exchanges, for `SqlStore`."""

    async def _require_run(self, tx: SqlTx, run_id: str) -> None:
        if not await tx.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)):
            raise RunNotFound(run_id)

    async def record_tool_call(self, run_id: str, step_id: str, turn: int, call_id: str, *,
                               status: ToolCallStatus, result: Any = None,
                               idempotent: bool = False, name: str | None = None,
                               arguments: Any = None) -> None:
        check_tool_status(status)
        if not self._ready:
            await self._ensure()
        result_json = self._dumps(result, "the result of tool call {} (run {})", call_id,
                                  run_id)
        args_json = (self._dumps(arguments, "the arguments of tool call {} (run {})",
                                 call_id, run_id) if arguments is not None else None)
        # One statement: nothing for an unknown run, and a call already done is left
        # alone when asked back to in_flight; either way no row comes back. The run's
        # queued replies go first: the reply that asked for this call is stored before
        # the call can run.
        queued = self._queued.take(run_id)
        *_, rows = await self._batch_carrying(run_id, queued, self._carried(queued, (
            "INSERT INTO tool_calls (run_id, step_id, call_id, turn, status, idempotent, "
            "name, arguments, result, updated_at) SELECT ?, ?, ?, ?, ?, ?, ?, ?j, ?j, ? "
            "WHERE EXISTS (SELECT 1 FROM runs WHERE run_id = ?) "
            "ON CONFLICT (run_id, step_id, call_id) DO UPDATE SET turn = excluded.turn, "
            "status = excluded.status, idempotent = excluded.idempotent, "
            "name = COALESCE(excluded.name, tool_calls.name), "
            "arguments = COALESCE(excluded.arguments, tool_calls.arguments), "
            "result = excluded.result, updated_at = excluded.updated_at "
            "WHERE NOT (tool_calls.status = 'done' AND excluded.status = 'in_flight')"
            + WROTE_ROW,
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
        sql = (f"SELECT run_id, step_id, turn, call_id, status, idempotent, "
               f"{self.bounded('result')}, name, {self.bounded('arguments')}, updated_at "
               "FROM tool_calls WHERE run_id = ?")
        params: list[Any] = [run_id]
        if step_id is not None:
            sql += " AND step_id = ?"
            params.append(step_id)
        sql += " ORDER BY step_id, turn, call_id"
        async with self._db.transaction() as tx:
            rows = await tx.execute(sql, params)
        try:
            return [
                ToolCallRecord(run_id=r[0], step_id=r[1], turn=stored_count(r[2], "turn"),
                               call_id=r[3], status=r[4], idempotent=bool(r[5]),
                               result=self._read(r[6], "result"), name=r[7],
                               arguments=self._read(r[8], "arguments"),
                               updated_at=self._dt(r[9], "updated_at"))
                for r in rows
            ]
        except Damaged as exc:
            raise self._damaged(run_id, f"a tool call: {exc}") from None

    def _exchange(self, run_id: str, step_id: str, turn: int, request_hash: str,
                  response: Any) -> Statement:
        return (
            "INSERT INTO model_exchanges (run_id, step_id, turn, request_hash, response, "
            "created_at) SELECT ?, ?, ?, ?, ?j, ? WHERE EXISTS (SELECT 1 FROM runs WHERE "
            "run_id = ?) ON CONFLICT (run_id, step_id, turn, request_hash) DO UPDATE SET "
            "response = excluded.response, created_at = excluded.created_at" + WROTE_ROW,
            (run_id, step_id, turn, request_hash,
             self._dumps(response, "the model reply of step {} (run {})", step_id, run_id),
             self._now(), run_id),
        )

    async def record_model_exchange(self, run_id: str, step_id: str, turn: int,
                                    request_hash: str, response: Any) -> None:
        await self._ensure()
        statement = self._exchange(run_id, step_id, turn, request_hash, response)
        queued = self._queued.take(run_id)
        *_, rows = await self._batch_carrying(run_id, queued, [*queued, statement])
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
        sql = (f"SELECT run_id, step_id, turn, request_hash, {self.bounded('response')}, "
               "created_at FROM model_exchanges WHERE run_id = ?")
        params: list[Any] = [run_id]
        if step_id is not None:
            sql += " AND step_id = ?"
            params.append(step_id)
        sql += " ORDER BY step_id, turn, created_at"
        async with self._db.transaction() as tx:
            rows = await tx.execute(sql, params)
        try:
            return [
                ModelExchangeRecord(run_id=r[0], step_id=r[1], turn=stored_count(r[2], "turn"),
                                    request_hash=r[3], response=self._read(r[4], "response"),
                                    created_at=self._dt(r[5], "created_at"))
                for r in rows
            ]
        except Damaged as exc:
            raise self._damaged(run_id, f"a model exchange: {exc}") from None

