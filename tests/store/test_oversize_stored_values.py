"""One stored value is at most the store's `max_stored_bytes` (by default
`MAX_STORED_BYTES`, 256 MiB) of JSON, on the way in and on the way out, on SQLite (a real
file) and PostgreSQL (a real server) alike.

Out: a row past it (a damaged or hostile database) is one `StoreCorrupt` naming the run,
the row and the field, found by the database (`length()`, `octet_length()`) before the
value is sent to Python, let alone decoded; before, `runs show`, `history` and `resume`
read and decoded it whole. In: a value past it is a `StoreError` before anything is
written, so no run writes a row it could not read back.

Each column and read is tried against a store whose bound is 64 KiB (`SMALL`), with rows
just past it; one case per SQL backend (and one write per backend) keeps the default
bound and a real row past 256 MiB, so the default itself is proven too."""

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
SMALL = 64 * 1024
SHOWN = {LIMIT: "256 MiB", SMALL: "64 KiB"}  # how a message names each bound


def _over(limit: int) -> int:
    return limit + 1024


def _shape(limit: int) -> re.Pattern[str]:
    return re.compile(rf"^run 'r' in the run store at .+ is damaged: (?P<where>.+) is more "
                      rf"than {limit} bytes \({SHOWN[limit]}\) of JSON, more than this store "
                      r"writes in one value; it was not read; nothing was changed")


def _sqlite_fill(path: Path, sql: str, over: int, table: str) -> None:
    """Run `sql`, which writes `zeroblob(over)` into one row's JSON column (SQLite
    writes a zeroblob that ends a row without building it in memory), then that row's
    value becomes a JSON object of that size, written in place a piece at a time."""
    conn = sqlite3.connect(path)
    with conn:
        cur = conn.execute(sql, (over,))
        rowid = cur.lastrowid if cur.lastrowid else conn.execute(
            f"SELECT max(rowid) FROM {table}").fetchone()[0]
    column = {"checkpoints": "payload", "checkpoint_deltas": "payload",
              "tool_calls": "result", "model_exchanges": "response", "runs": "meta"}[table]
    head = b'{"state": {}, "status": "failed", "pad": "'
    with conn.blobopen(table, column, rowid) as blob:
        blob.write(head)
        piece = b"x" * (16 * 1024 * 1024)
        while blob.tell() < over - 2:
            blob.write(piece[:over - 2 - blob.tell()])
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


async def _refused(store: Any, case: str, *, every: bool = True,
                   unbounded: tuple[str, ...] = ()) -> None:
    """Each of the case's reads (`every`, but those `unbounded`), or its first, refuses
    the value by name, naming the store's bound."""
    readers, where = READS[case]
    readers = [r for r in readers if r not in unbounded] if every else readers[:1]
    shape_of = _shape(store.max_stored_bytes)
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
            shape = shape_of.match(str(caught.value))
            assert shape is not None, (name, str(caught.value))
            assert re.fullmatch(where, shape["where"]), (name, shape["where"])


SQLITE_ROWS = {
    "checkpoint": ("UPDATE checkpoints SET payload = zeroblob(?) WHERE seq = 1", "checkpoints"),
    "delta": ("INSERT INTO checkpoint_deltas (run_id, seq, created_at, payload) VALUES "
              "('r', 2, '2026-01-01T00:00:00.000000+00:00', zeroblob(?))", "checkpoint_deltas"),
    "tool-result": ("UPDATE tool_calls SET result = zeroblob(?)", "tool_calls"),
    "reply": ("UPDATE model_exchanges SET response = zeroblob(?)", "model_exchanges"),
}


SQLITE_CASES = [(case, SMALL) for case in sorted(SQLITE_ROWS)] + [("checkpoint", LIMIT)]
"""Every row at the small bound; one at the default, with a real 256 MiB + 1 KiB row."""


@pytest.mark.parametrize("case, limit", SQLITE_CASES,
                         ids=[f"{c}-{SHOWN[n].replace(' ', '')}" for c, n in SQLITE_CASES])
async def test_a_stored_value_past_the_bound_on_sqlite_is_refused_unread(
        tmp_path: Path, case: str, limit: int) -> None:
    path = tmp_path / "runs.db"
    await _made(SqliteStore(path, max_stored_bytes=limit))
    sql, table = SQLITE_ROWS[case]
    _sqlite_fill(path, sql, _over(limit), table)
    size = path.stat().st_size
    store = SqliteStore(path) if limit == LIMIT else SqliteStore(path, max_stored_bytes=limit)
    await _refused(store, case)
    assert path.stat().st_size == size  # nothing was changed
    async with SqliteStore(path, max_stored_bytes=limit) as store:  # still there to mend
        run = await store.get_run("r")
        assert run is not None and run.latest_seq >= 1


PG_CASES = [(case, SMALL) for case in sorted(READS)] + [("checkpoint", LIMIT)]


@pytest.mark.postgres
@pytest.mark.parametrize("case, limit", PG_CASES,
                         ids=[f"{c}-{SHOWN[n].replace(' ', '')}" for c, n in PG_CASES])
async def test_a_stored_value_past_the_bound_on_postgres_is_refused_unread(
        pg_server: Any, case: str, limit: int) -> None:
    import psycopg

    # JSONB holds a control character in one byte and writes it as six (\u0001): a
    # value of 45 MB on the server is 270 MB of JSON text for the client.
    big = ("jsonb_build_object('state', jsonb_build_object(), 'status', 'failed', 'pad', "
           f"repeat(chr(1), {_over(limit) // 6 + 1}))")
    sql = {"checkpoint": f"UPDATE checkpoints SET payload = {big} WHERE seq = 1",
           "delta": "INSERT INTO checkpoint_deltas (run_id, seq, created_at, payload) "
                    f"VALUES ('r', 2, now(), {big})",
           "tool-result": f"UPDATE tool_calls SET result = {big}",
           "reply": f"UPDATE model_exchanges SET response = {big}",
           "meta": f"UPDATE runs SET meta = {big}"}[case]
    async with postgres_factory(pg_server.admin_dsn).storage() as opener:
        dsn = opener(now=None).dsn
        await _made(PostgresStore(dsn, max_stored_bytes=limit))
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
            await conn.execute(sql)
        if limit == LIMIT:
            # One read (SQLite's test tries them all): the server writes the 270 MB of
            # text to measure it.
            await _refused(PostgresStore(dsn), case, every=False)
        else:
            # Every read but `history`'s, whose JSONB functions read a few fields of a
            # payload without rendering it, so PostgreSQL never sends it whole.
            await _refused(PostgresStore(dsn, max_stored_bytes=limit), case,
                           unbounded=("load_step_facts",))


class _Huge(JsonSerializer):
    """Writes a value holding "huge" as JSON text one byte past `limit` (spaces: the
    store measures it before anything could read it)."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def dumps(self, obj: Any) -> str:
        text = super().dumps(obj)
        return " " * (self.limit + 1) if "huge" in text else text


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


def _store(backend: str, tmp_path: Path, limit: int, dsn: str = "") -> Any:
    """A store of `backend` writing with `_Huge(limit)`, its bound `limit` (the default
    left unset)."""
    bound: dict[str, Any] = {} if limit == LIMIT else {"max_stored_bytes": limit}
    serde = _Huge(limit)
    if backend == "sqlite":
        return SqliteStore(tmp_path / "runs.db", serde=serde, **bound)
    if backend == "memory":
        return MemoryStore(serde=serde, **bound)
    return PostgresStore(dsn, serde=serde, **bound)


@pytest.fixture(params=["sqlite", "postgres", "memory"])
async def backend(request: pytest.FixtureRequest) -> AsyncIterator[tuple[str, str]]:
    """The backend's name, and a fresh schema's DSN for PostgreSQL."""
    if request.param != "postgres":
        yield request.param, ""
        return
    request.applymarker(pytest.mark.postgres)
    pg = request.getfixturevalue("pg_server")
    async with postgres_factory(pg.admin_dsn).storage() as opener:
        yield "postgres", opener(now=None).dsn


WRITE_CASES = [(case, SMALL) for case in sorted(WRITES)] + [("checkpoint", LIMIT)]


@pytest.mark.parametrize("case, limit", WRITE_CASES,
                         ids=[f"{c}-{SHOWN[n].replace(' ', '')}" for c, n in WRITE_CASES])
async def test_a_value_past_the_bound_is_refused_before_it_is_written(
        backend: tuple[str, str], tmp_path: Path, case: str, limit: int) -> None:
    write, what = WRITES[case]
    async with _store(backend[0], tmp_path, limit, backend[1]) as store:
        assert store.max_stored_bytes == limit
        await _made_in(store)
        with pytest.raises(StoreError) as caught:
            await write(store)
        assert str(caught.value) == (
            f"{what} is {limit + 1} bytes of JSON, more than the {limit} ({SHOWN[limit]}) a "
            "run store keeps in one value; nothing was written")
        run = await store.get_run("r")
        assert run is not None and run.latest_seq == 1  # no seq was taken
        latest = await store.load_latest("r")
        assert latest is not None and latest.state == {"a": 2}
        assert await store.get_run("r2") is None
        assert [c.call_id for c in await store.get_tool_calls("r")] == ["c1"]
        assert [x.request_hash for x in await store.get_model_exchanges("r")] == ["hash"]


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "65536", None], ids=repr)
@pytest.mark.parametrize("kind", ["sqlite", "postgres", "memory"])
def test_the_bound_is_a_whole_number_of_bytes(tmp_path: Path, kind: str, bad: Any) -> None:
    """Refused when the store is made, before it opens anything (PostgreSQL's connects
    on first use, so no server is needed here)."""
    make = {"sqlite": lambda: SqliteStore(tmp_path / "runs.db", max_stored_bytes=bad),
            "postgres": lambda: PostgresStore("postgresql://u@127.0.0.1:1/db",
                                              max_stored_bytes=bad),
            "memory": lambda: MemoryStore(max_stored_bytes=bad)}[kind]
    with pytest.raises(StoreError, match=r"^max_stored_bytes must be a whole number of "
                                         r"bytes, 1 or more, got "):
        make()
    assert not (tmp_path / "runs.db").exists()


async def _made_in(store: Any) -> None:
    await store.create_run("r", "flow", "h", {"a": 1})
    await store.save_checkpoint("r", Checkpoint(state={"a": 2}, status="running"))
    await store.record_tool_call("r", "s", 0, "c1", status="done", result={"ok": 1})
    await store.record_model_exchange("r", "s", 0, "hash", {"text": "hi"})
