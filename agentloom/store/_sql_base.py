"""The seam under both SQL backends and what every part of the SQL store shares.

`SqlDb` hides how a statement runs (SQLite: a worker thread; PostgreSQL: psycopg async):
`transaction()` yields something with one method, `execute(sql, params) -> rows`, and
`batch()` runs statements as one transaction in one trip. Statements use `?`
placeholders and `?j` for a JSON parameter; the PostgreSQL adapter rewrites them (`%s`,
`%s::jsonb`). `SqlBase` opens and migrates the database on first use, converts rows and
values, and carries a run's queued model exchanges into its next write (`_pending.py`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime
from typing import Any, Protocol, Self

from agentloom.store._base import (
    MAX_STORED_BYTES,
    StoreConfigError,
    StoreError,
    check_max_stored_bytes,
    check_stored_size,
    shown_bytes,
)
from agentloom.store._migrations import MIGRATIONS, MIGRATIONS_TABLE_SQL, migration_name
from agentloom.store._pending import PendingWrites, Statement
from agentloom.store._records import RunRecord
from agentloom.store._serde import JsonSerializer, Serializer
from agentloom.store._stored import (
    Damaged,
    damaged_run,
    shown,
    stored_cost,
    stored_count,
    stored_lease,
    stored_object,
    stored_optional_text,
    stored_status,
    stored_text,
    stored_time,
)

Rows = list[tuple[Any, ...]]


class SqlTx(Protocol):
    async def execute(self, sql: str, params: Sequence[Any] = ()) -> Rows: ...


class SqlDb(Protocol):
    dialect: str
    place: str
    """Where the store is, as a message names it (a path, a URL without its password)."""

    async def open(self) -> None: ...

    def transaction(self) -> AbstractAsyncContextManager[SqlTx]: ...

    async def batch(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> list[Rows]:
        """Run `statements` as one transaction, in one trip where the driver allows
        (SQLite: BEGIN, all of them and COMMIT on the event loop while its worker thread
        is idle and the database unlocked, else in one hop to that thread)."""
        ...

    async def migration_lock(self, tx: SqlTx) -> None:
        """Serialise migrations between processes (PostgreSQL: an advisory lock)."""
        ...

    async def close(self) -> None: ...


def utcnow() -> datetime:
    return datetime.now(UTC)


WROTE_ROW = " RETURNING run_id"
"""The end of a write whose rows only tell whether it wrote a row: callers test them
for truth, never read them (the SQLite adapter answers with its row count)."""


class StoreTooNew(StoreConfigError, StoreError):
    """The store was migrated by a newer AgentLoom (its `agentloom_migrations` lists one
    this version doesn't know): the rows that version writes may mean what this one
    can't read, and this one's writes may break them. Nothing in it was changed. A
    `StoreError`, and a `StoreConfigError` like any store that won't open."""


RUN_COLS = ("run_id, workflow_name, workflow_hash, status, {meta}, started_at, updated_at, "
            "cost_usd, latest_seq, claimed_by, lease_until")
"""A `runs` row as `_run` reads it, `{meta}` to be filled with `SqlBase.bounded("meta")`
(the store's `run_cols`)."""

TOO_BIG = "#too-big"
"""What `SqlBase.bounded` selects in place of a value past the store's bound
(`max_stored_bytes`, by default `MAX_STORED_BYTES`): text that
is no JSON, so no value the store wrote reads as it (a row a person wrote to read so,
on SQLite, is damaged either way)."""



class SqlBase:
    """Opening, migrating, conversions and closing, for the parts of `SqlStore`."""

    def __init__(self, db: SqlDb, *, serde: Serializer | None = None,
                 now: Callable[[], datetime] | None = None,
                 keep_checkpoints: int | None = None,
                 max_stored_bytes: int = MAX_STORED_BYTES) -> None:
        if keep_checkpoints is not None and keep_checkpoints < 1:
            raise StoreError(f"keep_checkpoints must be at least 1, got {keep_checkpoints}")
        self._keep = keep_checkpoints
        self.max_stored_bytes = check_max_stored_bytes(max_stored_bytes)
        """The most JSON text one stored value holds, written or read (see
        `MAX_STORED_BYTES`, the default)."""
        self._db = db
        self._serde: Serializer = serde or JsonSerializer()
        self._now = now or utcnow
        self._ready = False
        self._ready_lock = asyncio.Lock()
        self._closed = False
        self._queued = PendingWrites(self._send)
        self.run_cols = RUN_COLS.format(meta=self.bounded("meta"))
        """The `runs` columns `_run` reads, meta bounded."""

    def bounded(self, column: str) -> str:
        """`column` (JSON) as a read selects it: `TOO_BIG` in its place when its text is
        longer than `max_stored_bytes`, measured in the database, so a value that big
        is never sent to Python, let alone decoded. SQLite counts the bytes of the
        text as a blob (its `length()` of text stops at a NUL); PostgreSQL the bytes of
        the JSONB's text form, which is what the client would be sent."""
        if self._db.dialect == "postgres":
            return (f"CASE WHEN octet_length({column}::text) > {self.max_stored_bytes} "
                    f"THEN '{TOO_BIG}' ELSE {column}::text END")
        return (f"CASE WHEN length(CAST({column} AS BLOB)) > {self.max_stored_bytes} "
                f"THEN '{TOO_BIG}' ELSE {column} END")

    async def _send(self, statements: list[Statement]) -> list[Rows]:
        await self._ensure()
        return await self._db.batch(statements)

    async def _batch_carrying(self, run_id: str, queued: list[Statement],
                              statements: list[Statement]) -> list[Rows]:
        """`batch(statements)`, which carries the run's `queued` replies: until it is
        stored, the run's next model call waits for it (`PendingWrites.settle`)."""
        if not queued:
            return await self._db.batch(statements)
        self._queued.carrying(run_id)
        try:
            return await self._db.batch(statements)
        finally:
            self._queued.carried(run_id)

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

    async def __aenter__(self) -> Self:
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
                unknown = sorted(map(str, applied - {migration_name(fn) for fn in MIGRATIONS}))
                if unknown:  # refused before any write; the transaction rolls back
                    first = unknown[0] if unknown[0].isidentifier() else shown(unknown[0])
                    more = f" and {len(unknown) - 1} more" if len(unknown) > 1 else ""
                    raise StoreTooNew(
                        f"the run store at {self._db.place} was migrated by a newer "
                        f"AgentLoom ({first[:80]}{more}); upgrade agentloom to use it")
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

    def _dumps(self, value: Any, what: str = "a value to store", *names: Any) -> str:
        """JSON text of `value`; one past `max_stored_bytes` is a `StoreError` naming
        `what` (see `check_stored_size`), raised before anything is written (a row
        past it would read as damaged)."""
        return check_stored_size(self._serde.dumps(value), what, *names,
                                 limit=self.max_stored_bytes)

    def _loads(self, value: Any) -> Any:
        return None if value is None else self._serde.loads(value)

    def _read(self, value: Any, what: str) -> Any:
        """`_loads` of a stored column, whose failure (not JSON, a tagged value that
        doesn't revive) is `Damaged`."""
        if value == TOO_BIG:
            limit = self.max_stored_bytes
            raise Damaged(f"{what} is more than {limit} bytes ({shown_bytes(limit)}) of "
                          "JSON, more than this store writes in one value; it was not read")
        try:
            return self._loads(value)
        except MemoryError:
            raise
        except Exception as exc:
            raise Damaged(f"{what} does not decode ({type(exc).__name__}: "
                          f"{str(exc)[:120]})") from None

    def _damaged(self, run_id: Any, why: str) -> Exception:
        return damaged_run(self._db.place, run_id, why)

    @staticmethod
    def _dt(value: Any, what: str = "a timestamp") -> datetime | None:
        return None if value is None else stored_time(value, what)

    def _run(self, row: tuple[Any, ...]) -> RunRecord:
        """A `runs` row as a record; a column that is not what the store writes (a cost
        that is text or NaN, a time that is none, meta that is a list) is one
        `StoreCorrupt` naming the run and the column."""
        try:
            return RunRecord(
                run_id=stored_text(row[0], "run_id"),
                workflow_name=stored_text(row[1], "workflow_name"),
                workflow_hash=stored_text(row[2], "workflow_hash"),
                status=stored_status(row[3]),
                meta=stored_object(self._read(row[4], "meta"), "meta"),
                started_at=stored_time(row[5], "started_at"),
                updated_at=stored_time(row[6], "updated_at"),
                cost_usd=stored_cost(row[7], "cost_usd"),
                latest_seq=stored_count(row[8], "latest_seq"),
                claimed_by=stored_optional_text(row[9], "claimed_by"),
                lease_until=stored_lease(row[10]),
            )
        except Damaged as exc:
            raise self._damaged(row[0], str(exc)) from None

    async def get_run(self, run_id: str) -> RunRecord | None:
        await self._ensure()
        (rows,) = await self._db.batch([(f"SELECT {self.run_cols} FROM runs WHERE run_id = ?",
                                         (run_id,))])  # one statement: one trip
        return self._run(rows[0]) if rows else None


    async def close(self) -> None:
        try:
            await self._queued.close()
        finally:
            self._closed = True
            self._ready = False
            await self._db.close()
