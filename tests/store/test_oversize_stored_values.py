"""One stored value is at most `MAX_STORED_BYTES` (256 MiB) of JSON, on the way in and
on the way out, on SQLite (a real file) and PostgreSQL (a real server) alike.

Out: a row past it (a damaged or hostile database) is one `StoreCorrupt` naming the run,
the row and the field, found by the database (`length()`, `octet_length()`) before the
value is sent to Python, let alone decoded; before, `runs show`, `history` and `resume`
read and decoded it whole. In: a value past it is a `StoreError` before anything is
written, so no run writes a row it could not read back."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from _store_factories import postgres_factory

from agentloom.store import (
    Checkpoint,
    CheckpointDelta,
    JsonSerializer,
    MemoryStore,
    PostgresStore,
    SqliteStore,
    StoreCorrupt,
    StoreError,
)

LIMIT = 256 * 1024 * 1024
OVER = LIMIT + 1024

SHAPE = re.compile(r"^run 'r' in the run store at .+ is damaged: (?P<where>.+) is more "
                   r"than 268435456 bytes \(256 MiB\) of JSON, more than this store writes "
                   r"in one value; it was not read; nothing was changed")


def _sqlite_fill(path: Path, sql: str, params: tuple[Any, ...], table: str) -> None:
    """Run `sql`, which writes `zeroblob(OVER)` into one row's JSON column (SQLite
    writes a zeroblob that ends a row without building it in memory), then that row's
    value becomes a JSON object of that size, written in place a piece at a time."""
    conn = sqlite3.connect(path)
    with conn:
        cur = conn.execute(sql, params)
        rowid = cur.lastrowid if cur.lastrowid else conn.execute(
            f"SELECT max(rowid) FROM {table}").fetchone()[0]
    column = {"checkpoints": "payload", "checkpoint_deltas": "payload",
              "tool_calls": "result", "model_exchanges": "response", "runs": "meta"}[table]
    head = b'{"state": {}, "status": "failed", "pad": "'
    with conn.blobopen(table, column, rowid) as blob:
        blob.write(head)
        piece = b"x" * (16 * 1024 * 1024)
        while blob.tell() < OVER - 2:
            blob.write(piece[:OVER - 2 - blob.tell()])
        blob.write(b'"}')
    conn.close()


async def _made(store: Any) -> None:
    async with store:
        await store.create_run("r", "flow", "h", {"a": 1})
        await store.save_checkpoint("r", Checkpoint(state={"a": 2}, status="running"))
        await store.record_tool_call("r", "s", 0, "c1", status="done", result={"ok": 1})
        await store.record_model_exchange("r", "s", 0, "hash", {"text": "hi"})


READS = {  # what is damaged -> the reads that must refuse it, and the words naming it
    "checkpoint": (["load_latest", "load_writes", "load_latest_many", "load_step_facts"],
                   r"checkpoint 1: the payload"),
    "delta": (["load_writes", "load_latest", "load_latest_many", "load_step_facts"],
              r"the write 2: the payload"),
    "tool-result": (["get_tool_calls"], r"a tool call: result"),
    "reply": (["get_model_exchanges"], r"a model exchange: response"),
    "meta": (["get_run", "list_runs", "find_runs"], r"meta"),
}


async def _refused(store: Any, case: str, *, every: bool = True) -> None:
    """Each of the case's reads (`every`), or its first, refuses the value by name."""
    readers, where = READS[case]
    readers = readers if every else readers[:1]
    calls = {"load_latest": lambda: store.load_latest("r"),
             "load_writes": lambda: store.load_writes("r"),
             "load_latest_many": lambda: store.load_latest_many(["r"]),
             "load_step_facts": lambda: store.load_step_facts(["r"]),  # `history`
             "get_tool_calls": lambda: store.get_tool_calls("r"),
             "get_model_exchanges": lambda: store.get_model_exchanges("r"),
             "get_run": lambda: store.get_run("r"), "list_runs": store.list_runs,
             "find_runs": store.find_runs}
    async with store:
        for name in readers:
            with pytest.raises(StoreCorrupt) as caught:
                await calls[name]()
            shape = SHAPE.match(str(caught.value))
            assert shape is not None, (name, str(caught.value))
            assert re.fullmatch(where, shape["where"]), (name, shape["where"])


SQLITE_ROWS = {
    "checkpoint": ("UPDATE checkpoints SET payload = zeroblob(?) WHERE seq = 1", "checkpoints"),
    "delta": ("INSERT INTO checkpoint_deltas (run_id, seq, created_at, payload) VALUES "
              "('r', 2, '2026-01-01T00:00:00.000000+00:00', zeroblob(?))", "checkpoint_deltas"),
    "tool-result": ("UPDATE tool_calls SET result = zeroblob(?)", "tool_calls"),
    "reply": ("UPDATE model_exchanges SET response = zeroblob(?)", "model_exchanges"),
}


@pytest.mark.parametrize("case", sorted(SQLITE_ROWS))
async def test_a_stored_value_past_the_bound_on_sqlite_is_refused_unread(
        tmp_path: Path, case: str) -> None:
    path = tmp_path / "runs.db"
    await _made(SqliteStore(path))
    sql, table = SQLITE_ROWS[case]
    _sqlite_fill(path, sql, (OVER,), table)
    size = path.stat().st_size
    await _refused(SqliteStore(path), case, every=case in ("checkpoint", "delta"))
    assert path.stat().st_size == size  # nothing was changed
    async with SqliteStore(path) as store:  # the run's row is still there to mend
        run = await store.get_run("r")
        assert run is not None and run.latest_seq >= 1


@pytest.mark.postgres
@pytest.mark.parametrize("case", sorted(READS))
async def test_a_stored_value_past_the_bound_on_postgres_is_refused_unread(
        pg_server: Any, case: str) -> None:
    import psycopg

    # JSONB holds a control character in one byte and writes it as six (\u0001): a
    # value of 45 MB on the server is 270 MB of JSON text for the client.
    big = ("jsonb_build_object('state', jsonb_build_object(), 'status', 'failed', 'pad', "
           f"repeat(chr(1), {OVER // 6 + 1}))")
    sql = {"checkpoint": f"UPDATE checkpoints SET payload = {big} WHERE seq = 1",
           "delta": "INSERT INTO checkpoint_deltas (run_id, seq, created_at, payload) "
                    f"VALUES ('r', 2, now(), {big})",
           "tool-result": f"UPDATE tool_calls SET result = {big}",
           "reply": f"UPDATE model_exchanges SET response = {big}",
           "meta": f"UPDATE runs SET meta = {big}"}[case]
    async with postgres_factory(pg_server.admin_dsn).storage() as opener:
        await _made(opener(now=None))
        dsn = opener(now=None).dsn
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
            await conn.execute(sql)
        # One read each (SQLite's test tries them all): the server writes the 270 MB
        # of text to measure it.
        await _refused(opener(now=None), case, every=False)


class _Huge(JsonSerializer):
    """Writes a value holding "huge" as JSON text one byte past the bound (spaces: the
    store measures it before anything could read it)."""

    def dumps(self, obj: Any) -> str:
        text = super().dumps(obj)
        return " " * (LIMIT + 1) if "huge" in text else text


WRITES = {
    "checkpoint": (lambda s: s.save_checkpoint("r", Checkpoint(state={"x": "huge"})),
                   "the checkpoint of run 'r'"),
    "delta": (lambda s: s.save_delta("r", CheckpointDelta(state={"x": "huge"})),
              "the write of run 'r'"),
    "new-run": (lambda s: s.create_run("r2", "flow", "h", {"x": "huge"}),
                "the first checkpoint of run 'r2'"),
    "tool-result": (lambda s: s.record_tool_call("r", "s", 1, "c2", status="done",
                                                 result="huge"),
                    "the result of tool call 'c2' (run 'r')"),
    "reply": (lambda s: s.record_model_exchange("r", "s", 1, "h2", "huge"),
              "the model reply of step 's' (run 'r')"),
}


@pytest.fixture(params=["sqlite", "postgres", "memory"])
async def huge_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    if request.param == "sqlite":
        yield SqliteStore(tmp_path / "runs.db", serde=_Huge())
    elif request.param == "memory":
        yield MemoryStore(serde=_Huge())
    else:
        request.applymarker(pytest.mark.postgres)
        pg = request.getfixturevalue("pg_server")
        async with postgres_factory(pg.admin_dsn).storage() as opener:
            yield PostgresStore(opener(now=None).dsn, serde=_Huge())


@pytest.mark.parametrize("case", sorted(WRITES))
async def test_a_value_past_the_bound_is_refused_before_it_is_written(
        huge_store: Any, case: str) -> None:
    write, what = WRITES[case]
    async with huge_store as store:
        await _made_in(store)
        with pytest.raises(StoreError) as caught:
            await write(store)
        assert str(caught.value) == (
            f"{what} is {LIMIT + 1} bytes of JSON, more than the 268435456 (256 MiB) a run "
            "store keeps in one value; nothing was written")
        run = await store.get_run("r")
        assert run is not None and run.latest_seq == 1  # no seq was taken
        latest = await store.load_latest("r")
        assert latest is not None and latest.state == {"a": 2}
        assert await store.get_run("r2") is None
        assert [c.call_id for c in await store.get_tool_calls("r")] == ["c1"]
        assert [x.request_hash for x in await store.get_model_exchanges("r")] == ["hash"]


async def _made_in(store: Any) -> None:
    await store.create_run("r", "flow", "h", {"a": 1})
    await store.save_checkpoint("r", Checkpoint(state={"a": 2}, status="running"))
    await store.record_tool_call("r", "s", 0, "c1", status="done", result={"ok": 1})
    await store.record_model_exchange("r", "s", 0, "hash", {"text": "hi"})
