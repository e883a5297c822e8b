"""The shared store: PostgreSQL through psycopg 3's async connection.

For runs shared between processes and machines. The logic is `SqlStore`'s; this module
only runs statements. One connection per store, used by one transaction at a time (an
asyncio lock): psycopg_pool is not a dependency, and a store's writes are short. Payloads
are JSONB, read back as text so the serializer revives tagged values. Migrations take a
transaction-scoped advisory lock, so two processes starting together migrate once; run
claims are a conditional UPDATE, which PostgreSQL's row lock makes race-free.
psycopg is imported on first use only.

A TIMESTAMPTZ holds times Python's `datetime` can't (`infinity`, `-infinity`, year
294276, BC), which psycopg refuses with a `DataError` while it converts the rows, before
the store could say which run and column hold one. Such a read is run again with a
timestamp loader, on that cursor only, that hands those values over as their text
(`TimeOutOfRange`), and the store's row checks name them (`_stored.py`). Only a read
that meets one pays for that: every other read converts as psycopg does (in C).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

from agentloom.store._base import MAX_STORED_BYTES, StoreConfigError
from agentloom.store._serde import Serializer
from agentloom.store._sql import Rows, SqlStore
from agentloom.store._stored import TimeOutOfRange
from agentloom.store._urls import shown_url

_MIGRATION_LOCK_KEY = 0x61676C6D  # "aglm": any constant shared by every AgentLoom process


def _translate(sql: str) -> str:
    return sql.replace("?j", "%s::jsonb").replace("?", "%s")


_LENIENT: Any = None


def _lenient_loader() -> Any:
    """psycopg's TIMESTAMPTZ loader (its Python one), but a value no `datetime` holds is
    its text as a `TimeOutOfRange`, not a `DataError`."""
    global _LENIENT
    if _LENIENT is None:
        import psycopg
        from psycopg.types.datetime import TimestamptzLoader

        class LenientTimestamptzLoader(TimestamptzLoader):
            def load(self, data: Any) -> Any:
                try:
                    return super().load(data)
                except psycopg.DataError:
                    return TimeOutOfRange(bytes(data).decode("utf-8", "replace"))

        _LENIENT = LenientTimestamptzLoader
    return _LENIENT


class _PgTx:
    def __init__(self, conn: Any) -> None:
        self._conn = conn

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> Rows:
        query = _translate(sql)
        cur = await self._conn.execute(query, tuple(params))
        if cur.description is None:
            return []
        try:
            rows: Rows = await cur.fetchall()
        except Exception as exc:
            import psycopg

            # A row psycopg could not convert (the server ran the query): a read is run
            # again, on its own cursor, with the lenient loader; a write is never rerun.
            if not (isinstance(exc, psycopg.DataError) and query.startswith("SELECT ")):
                raise
            cur = self._conn.cursor()
            cur.adapters.register_loader("timestamptz", _lenient_loader())
            await cur.execute(query, tuple(params))
            rows = await cur.fetchall()
        return rows


class _PgDb:
    dialect = "postgres"

    def __init__(self, dsn: str, *, connect_timeout: float) -> None:
        self.dsn = dsn
        self.place = shown_url(dsn)
        self._connect_timeout = connect_timeout
        self._conn: Any = None
        self._lock = asyncio.Lock()

    async def open(self) -> None:
        if self._conn is not None:
            return
        try:
            import psycopg
            from psycopg.types.string import TextLoader
        except ImportError as exc:
            raise StoreConfigError(
                "the PostgreSQL store needs psycopg 3: pip install 'agentloom-engine[postgres]'"
            ) from exc
        try:
            conn = await psycopg.AsyncConnection.connect(
                self.dsn, autocommit=True, connect_timeout=max(1, int(self._connect_timeout))
            )
        except psycopg.Error as exc:
            raise StoreConfigError(
                f"cannot connect to the run store at {shown_url(self.dsn)}: {exc}"
            ) from exc
        conn.adapters.register_loader("jsonb", TextLoader)
        self._conn = conn

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[_PgTx]:
        async with self._lock:
            if self._conn is None:
                await self.open()
            conn = self._conn
            try:
                async with conn.transaction():
                    yield _PgTx(conn)
            except Exception:
                if conn.closed:  # the server went away: reconnect on the next call
                    self._conn = None
                raise

    async def batch(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> list[Rows]:
        if len(statements) == 1:  # autocommit: one statement is its own transaction
            async with self._lock:
                if self._conn is None:
                    await self.open()
                conn = self._conn
                try:
                    return [await _PgTx(conn).execute(*statements[0])]
                except Exception:
                    if conn.closed:
                        self._conn = None
                    raise
        # Several statements: one transaction in pipeline mode, so BEGIN, the statements
        # and COMMIT go out together and cost one round trip, not one each.
        async with self._lock:
            if self._conn is None:
                await self.open()
            conn = self._conn
            try:
                async with conn.pipeline(), conn.transaction():
                    cursors = [await conn.execute(_translate(sql), tuple(params))
                               for sql, params in statements]
                return [await cur.fetchall() if cur.description is not None else []
                        for cur in cursors]
            except Exception:
                if conn.closed:  # the server went away: reconnect on the next call
                    self._conn = None
                raise

    async def migration_lock(self, tx: Any) -> None:
        await tx.execute(f"SELECT pg_advisory_xact_lock({_MIGRATION_LOCK_KEY})")

    async def close(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            await conn.close()


class PostgresStore(SqlStore):
    """`PostgresStore("postgresql://user:pw@host:5432/db")`; connects on first use.

        async with PostgresStore(dsn) as store:
            if await store.claim_run(run_id, worker_id="host-1", lease_seconds=60):
                ...                              # this worker may resume the run
    """

    def __init__(self, dsn: str, *, serde: Serializer | None = None,
                 now: Callable[[], datetime] | None = None,
                 keep_checkpoints: int | None = None,
                 connect_timeout: float = 10.0,
                 max_stored_bytes: int = MAX_STORED_BYTES) -> None:
        """`max_stored_bytes`: the most JSON text one stored value holds
        (`MAX_STORED_BYTES`)."""
        self.dsn = dsn
        super().__init__(_PgDb(dsn, connect_timeout=connect_timeout), serde=serde, now=now,
                         keep_checkpoints=keep_checkpoints, max_stored_bytes=max_stored_bytes)

    def __repr__(self) -> str:
        return f"PostgresStore({shown_url(self.dsn)!r})"
