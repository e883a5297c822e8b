"""The embedded default store: one SQLite file, driven from one dedicated worker thread.

sqlite3 blocks, so statements run on one worker thread (no wait on the event loop); a
result comes back through a queue and a pipe the event loop reads (`_sqlite_worker`;
`call_soon_threadsafe` where a loop can't read one), which costs less than an executor's
futures. An asyncio lock keeps one transaction at a time; writes use `BEGIN IMMEDIATE` so
a second process waits on the busy timeout instead of failing halfway. WAL mode lets
readers run beside a writer, and a committed transaction survives `kill -9` of the process.

A step's write (`batch`) is the exception: when the worker is idle it runs on the event
loop itself, since a WAL commit without fsync (synchronous=NORMAL) costs less CPU than the
two thread switches of the trip (about 0.08 of a step's 0.25 ms). It never waits there:
the connection's busy timeout is 0 for it, and a write that finds the database locked goes
to the worker, which waits with the busy timeout. The WAL's checkpoints, the only fsyncs,
run on the worker too (`_CHECKPOINT_EVERY`), never inside a commit on the loop.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from agentloom._files import create_private
from agentloom.store._base import MAX_STORED_BYTES, StoreConfigError, StoreCorrupt
from agentloom.store._serde import Serializer
from agentloom.store._sql import Rows, SqlStore
from agentloom.store._sql_base import WROTE_ROW
from agentloom.store._sqlite_worker import Worker

T = TypeVar("T")
DEFAULT_PATH = Path(".agentloom") / "runs.db"


_CORRUPT_CODES = (11, 26)  # SQLITE_CORRUPT, SQLITE_NOTADB (primary result codes)


def _corrupt(path: Path, exc: sqlite3.Error) -> StoreCorrupt | None:
    """A StoreCorrupt for an error that says the file is damaged or not a database."""
    if (getattr(exc, "sqlite_errorcode", 0) & 0xFF) not in _CORRUPT_CODES:
        return None
    return StoreCorrupt(
        f"the run store at {path} is damaged or is not a run store ({exc}); it was left "
        f"untouched: move it aside (mv {path} {path}.broken) to start a new one, or use "
        "another with --store sqlite:///some/dir/runs.db")


def _param(value: Any) -> Any:
    if isinstance(value, datetime):
        # Fixed-width UTC text, so string order is time order.
        if value.tzinfo is not UTC:
            value = value.astimezone(UTC)
        return value.isoformat(timespec="microseconds")
    return value


_PLACEHOLDERS: dict[str, str] = {}
"""SQL as written (`?j` for JSON) -> as SQLite takes it: the same few statements run at
every step, and a lookup costs less than rewriting them."""

_COUNTED: set[str] = set()
"""Statements (as SQLite takes them) written with a `RETURNING run_id` that only tells
whether they wrote a row (`WROTE_ROW`): run without it, their row count says the same.
SQLite builds a temporary table for the rows a RETURNING gives, which costs more than
the write itself (two such statements were a third of a step's checkpoint)."""

_WROTE = (None,)

_BUSY_CODES = (5, 6)  # SQLITE_BUSY, SQLITE_LOCKED (primary result codes)

_CHECKPOINT_EVERY = 100
"""Writes between two WAL checkpoints, queued to the worker (the connection's own
automatic ones are off: one would run, with its fsyncs, inside a commit on the event
loop). A step's write is ~9 WAL pages, so this is about SQLite's default of 1,000."""


def _sqlite_sql(sql: str) -> str:
    out = _PLACEHOLDERS.get(sql)
    if out is None:
        if len(_PLACEHOLDERS) > 512:  # SQL built with a variable list of marks
            _PLACEHOLDERS.clear()
            _COUNTED.clear()
        out = sql.replace("?j", "?")
        if out.endswith(WROTE_ROW):
            out = out[:-len(WROTE_ROW)]
            _COUNTED.add(out)
        _PLACEHOLDERS[sql] = out
    return out


def _rows(conn: sqlite3.Connection, sql: str, params: tuple[Any, ...]) -> Rows:
    cursor = conn.execute(sql, params)
    if sql in _COUNTED:  # a write (done by now): a row for each row it wrote
        return [_WROTE] * cursor.rowcount
    return cursor.fetchall()


_AS_IS = frozenset({str, int, float, bytes, type(None)})
"""Parameter types SQLite takes as they are (`_param` converts the rest)."""


class _SqliteTx:
    def __init__(self, db: _SqliteDb) -> None:
        self._db = db
        self.began = False

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> Rows:
        args = (_sqlite_sql(sql), tuple(_param(p) for p in params))
        if self.began:
            return await self._db.call(self._db.execute_sync, *args)
        # The BEGIN rides with the first statement: one trip to the worker thread less
        # per transaction (each trip is a thread switch, ~100 µs on a busy machine).
        self.began = True
        return await self._db.call(self._db.begin_and_execute, *args)


_COMPANIONS = ("", "-wal", "-shm", "-journal")
"""The database file and those SQLite opens beside it, through any link they are."""


def refuse_links(path: Path) -> None:
    """Refuse a database whose folder or files are symbolic links. The default store
    lies in the working directory, which may be a checkout somebody else wrote: a
    `.agentloom` (or a `runs.db-wal`) planted there as a link would have every prompt and
    reply of a run written wherever it points, a folder its author can read."""
    for place in (path.parent, *(path.with_name(path.name + s) for s in _COMPANIONS)):
        if place.is_symlink():
            raise StoreConfigError(
                f"the run store's {place} is a symbolic link (to {os.readlink(place)}); "
                "a run won't write through it: remove it, or name the store with --store")


class _SqliteDb:
    dialect = "sqlite"

    def __init__(self, path: Path, *, busy_timeout: float, follow_links: bool = True) -> None:
        self.path = path
        self.place = str(path)
        self._busy_timeout = busy_timeout
        self._follow_links = follow_links
        self._worker: Worker | None = None
        self._conn: sqlite3.Connection | None = None
        self._lock = asyncio.Lock()
        self._waits = True
        """Whether the connection's busy timeout is the store's (the worker's calls) or 0
        (a write on the event loop): set by whichever thread uses it, when it changes."""
        self._writes = 0
        """Writes and transactions since the last WAL checkpoint (a read-only transaction
        counts too: one checkpoint early now and then costs less than telling them apart)."""

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        if self._worker is None:
            self._worker = Worker()
        try:
            result: T = await self._worker.submit(self._waiting, (fn, args))
        except sqlite3.DatabaseError as exc:
            self._raise_if_corrupt(exc)
            raise
        return result

    def _raise_if_corrupt(self, exc: sqlite3.DatabaseError) -> None:
        # A page damaged deep in the file surfaces on the first statement that reads it.
        corrupt = _corrupt(self.path, exc)
        if corrupt is not None:
            raise corrupt from None

    def _waiting(self, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        """(worker) `fn(*args)` with the store's busy timeout."""
        if not self._waits and self._conn is not None:
            self._conn.execute(f"PRAGMA busy_timeout={int(self._busy_timeout * 1000)}")
            self._waits = True
        return fn(*args)

    def _write_here(self, statements: list[tuple[str, tuple[Any, ...]]]) -> list[Rows] | None:
        """(event loop) `statements` written at once, without waiting for a lock; None
        when the database is locked (nothing was written: the worker writes it)."""
        conn = self._conn
        assert conn is not None
        try:
            if self._waits:
                conn.execute("PRAGMA busy_timeout=0")
                self._waits = False
            return self._batch_sync(statements)
        except sqlite3.OperationalError as exc:
            if (getattr(exc, "sqlite_errorcode", 0) & 0xFF) in _BUSY_CODES:
                return None  # `_batch_sync` rolled back what it began
            raise
        except sqlite3.DatabaseError as exc:
            self._raise_if_corrupt(exc)
            raise

    def _count_write(self) -> None:
        """(event loop) One more write; every `_CHECKPOINT_EVERY`, a WAL checkpoint for
        the worker (not awaited: the next write queues behind it if it is still running)."""
        self._writes += 1
        if self._writes >= _CHECKPOINT_EVERY and self._worker is not None:
            self._writes = 0
            self._worker.submit(self._waiting, (self._checkpoint_sync, ()))

    def _checkpoint_sync(self) -> None:
        """(worker) Copy the WAL into the database as far as readers allow (PASSIVE, what
        SQLite's automatic checkpoint does); a failure leaves the WAL to the next one."""
        if self._conn is None:
            return
        try:
            self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except sqlite3.Error:
            pass

    def _open_sync(self) -> None:
        conn: sqlite3.Connection | None = None
        if not self._follow_links:
            refuse_links(self.path)
        try:
            # Created owner-only: SQLite gives its WAL and shared-memory files the
            # database file's mode.
            create_private(self.path)
            # Used by the worker and, for a write while the worker is idle, by the event
            # loop's thread: never both at once (`Worker.idle`).
            conn = sqlite3.connect(self.path, timeout=self._busy_timeout, isolation_level=None,
                                   check_same_thread=False)
            self._use_wal(conn)
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA wal_autocheckpoint=0")  # run by the worker: _count_write
            conn.execute(f"PRAGMA busy_timeout={int(self._busy_timeout * 1000)}")
            # Touch the file for writing now, so an unwritable store fails here, by name.
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("ROLLBACK")
            # A truncated or garbled file often opens; reading its schema tells.
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except (OSError, sqlite3.Error) as exc:
            if conn is not None:
                conn.close()
            corrupt = _corrupt(self.path, exc) if isinstance(exc, sqlite3.Error) else None
            if corrupt is not None:
                raise corrupt from None
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise StoreConfigError(
                f"cannot open the run store at {self.path}: {why} "
                "(give a writable path, e.g. --store sqlite:///some/dir/runs.db)"
            ) from exc
        self._conn = conn

    def _use_wal(self, conn: sqlite3.Connection) -> None:
        # Switching to WAL doesn't wait on the busy handler: when several processes create
        # the store at once (workers of one batch), all but one get "locked" at once. WAL
        # persists in the file, so it is set once and retried here (this thread only).
        deadline = time.monotonic() + self._busy_timeout
        while True:
            try:
                if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                    conn.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.02)

    async def open(self) -> None:
        if self._conn is None:
            await self.call(self._open_sync)

    def execute_sync(self, sql: str, params: tuple[Any, ...]) -> Rows:
        assert self._conn is not None
        try:
            return _rows(self._conn, sql, params)
        except sqlite3.OperationalError as exc:
            self._raise_readonly(exc)
            raise

    def _raise_readonly(self, exc: sqlite3.OperationalError) -> None:
        if "readonly" in str(exc) or "read-only" in str(exc):
            raise StoreConfigError(f"the run store at {self.path} is not writable: {exc}"
                                   ) from exc

    async def batch(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> list[Rows]:
        args = [(_sqlite_sql(sql), tuple([p if type(p) in _AS_IS else _param(p)
                                                for p in params]))
                for sql, params in statements]
        if not self._lock.locked():
            # No transaction is open, and the job is queued before this coroutine can
            # yield: whatever `transaction()` starts next queues after it, and the worker
            # runs its jobs in order. So the lock would only cost its own bookkeeping.
            self._count_write()
            worker = self._worker
            if worker is not None and worker.idle and self._conn is not None:
                done = self._write_here(args)
                if done is not None:
                    return done
            return await self.call(self._batch_sync, args)
        async with self._lock:
            self._count_write()
            return await self.call(self._batch_sync, args)

    def _batch_sync(self, statements: list[tuple[str, tuple[Any, ...]]]) -> list[Rows]:
        conn = self._conn
        assert conn is not None
        if conn.in_transaction:  # left open by a cancelled caller: undo it first
            conn.execute("ROLLBACK")
        if len(statements) == 1:
            # One statement is atomic on its own: in autocommit mode SQLite wraps it in
            # its own transaction, and a write statement takes the write lock before it
            # reads (the busy timeout applies), so BEGIN IMMEDIATE and COMMIT would be two
            # more calls into SQLite for nothing.
            return [self.execute_sync(*statements[0])]
        # BEGIN, the statements and COMMIT in one hop to this thread: it finishes whole
        # (or rolls back) even if the caller is cancelled meanwhile.
        conn.execute("BEGIN IMMEDIATE")
        try:
            out = [_rows(conn, sql, params) for sql, params in statements]
            conn.execute("COMMIT")
        except BaseException as exc:
            self._rollback_if_open()
            if isinstance(exc, sqlite3.OperationalError):
                self._raise_readonly(exc)
            raise
        return out

    def begin_and_execute(self, sql: str, params: tuple[Any, ...]) -> Rows:
        self._begin()
        return self.execute_sync(sql, params)

    def _begin(self) -> None:
        assert self._conn is not None
        if self._conn.in_transaction:  # left open by a cancelled caller: undo it first
            self._conn.execute("ROLLBACK")
        self._conn.execute("BEGIN IMMEDIATE")

    def _commit(self) -> None:
        assert self._conn is not None
        try:
            self._conn.execute("COMMIT")
        except BaseException:
            self._rollback_if_open()
            raise

    def _rollback_if_open(self) -> None:
        if self._conn is not None and self._conn.in_transaction:
            self._conn.execute("ROLLBACK")

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[_SqliteTx]:
        # The worker thread runs calls in order, so whatever a cancelled caller left
        # queued (a BEGIN, a statement) finishes before the next transaction's BEGIN,
        # which undoes it if it is still open.
        async with self._lock:
            tx = _SqliteTx(self)
            try:
                yield tx
            except BaseException:
                if tx.began:
                    await asyncio.shield(self.call(self._rollback_if_open))
                raise
            if tx.began:
                self._count_write()
                await self.call(self._commit)

    async def migration_lock(self, tx: Any) -> None:
        return None  # BEGIN IMMEDIATE already holds the database's write lock

    def _close_sync(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    async def close(self) -> None:
        if self._worker is None:
            return
        await self.call(self._close_sync)
        self._worker.stop()
        self._worker = None


class SqliteStore(SqlStore):
    """`SqliteStore(path)`; the file and its directory are created on first use.

        store = SqliteStore(".agentloom/runs.db")
        async with store:                       # opens, migrates; closes at the end
            await store.create_run("r1", "flow", "sha256:...", {"topic": "x"})
    """

    def __init__(self, path: str | Path = DEFAULT_PATH, *, serde: Serializer | None = None,
                 now: Callable[[], datetime] | None = None,
                 keep_checkpoints: int | None = None, busy_timeout: float = 30.0,
                 follow_links: bool = True,
                 max_stored_bytes: int = MAX_STORED_BYTES) -> None:
        """`follow_links=False` (the default store's): refuse to open when the folder or
        any of the database's files is a symbolic link (see `refuse_links`).
        `max_stored_bytes`: the most JSON text one stored value holds (`MAX_STORED_BYTES`)."""
        self.path = Path(path)
        db = _SqliteDb(self.path, busy_timeout=busy_timeout, follow_links=follow_links)
        super().__init__(db, serde=serde, now=now, keep_checkpoints=keep_checkpoints,
                         max_stored_bytes=max_stored_bytes)

    def __repr__(self) -> str:
        return f"SqliteStore({str(self.path)!r})"
