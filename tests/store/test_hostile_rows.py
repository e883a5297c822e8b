"""A run store somebody else wrote or damaged, one row at a time: a run's cost that is
text, NaN or a billion digits, a time that is no time (or year 99999), meta that is a
list, a checkpoint whose payload is no JSON object, whose `state` is a list, whose step
results are text or whose tool loop has fields no store writes. Reading that run is one
`StoreCorrupt` naming the run and the column or field, on SQLite and PostgreSQL alike,
and `agentloom runs`, `runs show`, `history` and `resume` print it as one line (exit 1),
not a traceback; the row is left as it was."""

from __future__ import annotations

import asyncio
import os
import re
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agentloom.store import Checkpoint, PostgresStore, SqliteStore, StoreCorrupt

ROOT = Path(__file__).resolve().parents[2]

RUN_ROWS = {
    # column = SQL value: the words the error must hold
    "cost-text": ("cost_usd = 'abc'", r"cost_usd 'abc' is not a number"),
    "cost-nan": ("cost_usd = 'NaN'", r"cost_usd 'NaN' is not a cost"),
    "cost-huge": ("cost_usd = '1e999999999'", r"cost_usd '1e999999999' is not a cost"),
    "cost-negative": ("cost_usd = '-5'", r"cost_usd '-5' is not a cost"),
    "meta-list": ("meta = '[1, 2]'", r"meta is a list, not an object"),
}
PG_ONLY_RUN_ROWS = {  # TIMESTAMPTZ holds these, Python's datetime doesn't: before, psycopg
    # raised a bare DataError ("timestamp too large (after year 10K)") converting the row
    "started-infinity": ("started_at = 'infinity'",
                         r"started_at 'infinity' is not a time between the years 1 and 9999"),
    "updated-minus-infinity": ("updated_at = '-infinity'",
                               r"updated_at '-infinity' is not a time between the years"),
    "updated-year-99999": ("updated_at = '99999-06-01 00:00:00+00'",
                           r"updated_at '99999-0[56]-\d\d [^']+' is not a time between"),
    "started-bc": ("started_at = '0044-03-15 12:00:00+00 BC'",
                   r"started_at '0044-03-1\d [^']+ BC' is not a time between"),
}
SQLITE_ONLY_RUN_ROWS = {  # PostgreSQL's typed columns can't hold these
    "time-garbage": ("started_at = 'garbage'", r"started_at 'garbage' is not a time"),
    "time-year-99999": ("updated_at = '99999-01-01T00:00:00+00:00'",
                        r"updated_at '99999-01-01T00:00:00\+00:00' is not a time"),
    "seq-text": ("latest_seq = 'x'", r"latest_seq 'x' is not a whole number"),
    "meta-not-json": ("meta = '{nope'", r"meta does not decode \(JSONDecodeError"),
}
PAYLOADS = {
    "payload-list": ("[1, 2]", r"checkpoint \d+: the payload is list, not an object"),
    "state-list": ('{"state": [1, 2], "status": "failed"}',
                   r"checkpoint \d+: state is a list, not an object"),
    "step-results-text": ('{"state": {}, "status": "failed", "step_results": "xx"}',
                          r"checkpoint \d+: step_results is text, not an object"),
    "tool-loop-fields": ('{"state": {}, "status": "failed", "tool_loops": [{"evil": 1}]}',
                         r"checkpoint \d+: tool_loops\[0\] has fields no store writes"),
    "paused-text": ('{"state": {}, "status": "paused", "paused": "soon"}',
                    r"checkpoint \d+: paused is text, not an object"),
    "status-unknown": ('{"state": {}, "status": "evil"}',
                       r"checkpoint \d+: status 'evil' is not a run status"),
    "cost-tag-garbage": ('{"state": {}, "status": "failed", '
                         '"cost_usd": {"__al__": "decimal", "v": "abc"}}',
                         r"checkpoint \d+: the payload does not decode \(InvalidOperation"),
}
SQLITE_ONLY_PAYLOADS = {  # JSONB holds only JSON
    "payload-not-json": ("{nope", r"checkpoint \d+: the payload does not decode "
                                  r"\(JSONDecodeError"),
}
DELTAS = {
    "delta-removed-text": ('{"status": "failed", "state_removed": "a"}',
                           r"the write \d+: state_removed is text, not a list"),
    "delta-kept-text": ('{"status": "failed", "loop_messages_kept": {"s": "2"}}',
                        r"the write \d+: loop_messages_kept\['s'\] '2' is not a whole number"),
}


async def _fill(store: Any) -> None:
    async with store:
        await store.create_run("good", "flow", "h", {"a": 1})
        await store.create_run("bad\x1b[2J", "flow", "h", {"a": 1})
        await store.save_checkpoint("bad\x1b[2J", Checkpoint(state={"a": 2}, status="failed"))


async def _reads(store: Any, run_id: str, *, what: str) -> list[str]:
    """What each way of reading the damaged run raised (as text)."""
    out = []
    async with store:
        readers = {"run": [lambda: store.get_run(run_id), store.list_runs,
                           store.find_runs],
                   "checkpoint": [lambda: store.load_latest(run_id),
                                  lambda: store.load_writes(run_id),
                                  lambda: store.load_latest_many([run_id, "good"])]}[what]
        for reader in readers:
            with pytest.raises(StoreCorrupt) as caught:
                await reader()
            out.append(str(caught.value))
        # The other run is still there to read on its own.
        assert (await store.load_latest("good")) is not None
    return out


def _check(messages: list[str], place: str, pattern: str) -> None:
    for message in messages:
        assert message.startswith(f"run 'bad\\x1b[2J' in the run store at {place} is "
                                  "damaged: "), message
        assert "\x1b" not in message
        assert re.search(pattern, message), (pattern, message)


def _sqlite(path: Path, sql: str, params: tuple[Any, ...] = ()) -> None:
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(sql, params)
    conn.close()


@pytest.mark.parametrize("case", sorted({**RUN_ROWS, **SQLITE_ONLY_RUN_ROWS}))
async def test_a_damaged_run_row_on_sqlite_is_one_error_naming_the_run(
        tmp_path: Path, case: str) -> None:
    path = tmp_path / "runs.db"
    await _fill(SqliteStore(path))
    setting, pattern = {**RUN_ROWS, **SQLITE_ONLY_RUN_ROWS}[case]
    _sqlite(path, f"UPDATE runs SET {setting} WHERE run_id = ?", ("bad\x1b[2J",))
    before = path.read_bytes()
    _check(await _reads(SqliteStore(path), "bad\x1b[2J", what="run"), str(path), pattern)
    assert path.read_bytes() == before


@pytest.mark.parametrize("case", sorted({**PAYLOADS, **SQLITE_ONLY_PAYLOADS, **DELTAS}))
async def test_a_damaged_checkpoint_on_sqlite_is_one_error_naming_the_run(
        tmp_path: Path, case: str) -> None:
    path = tmp_path / "runs.db"
    await _fill(SqliteStore(path))
    if case in DELTAS:
        payload, pattern = DELTAS[case]
        _sqlite(path, "INSERT INTO checkpoint_deltas (run_id, seq, created_at, payload) "
                "VALUES (?, 2, '2026-01-01T00:00:00+00:00', ?)", ("bad\x1b[2J", payload))
    else:
        payload, pattern = {**PAYLOADS, **SQLITE_ONLY_PAYLOADS}[case]
        _sqlite(path, "UPDATE checkpoints SET payload = ? WHERE run_id = ?",
                (payload, "bad\x1b[2J"))
    _check(await _reads(SqliteStore(path), "bad\x1b[2J", what="checkpoint"), str(path),
           pattern)


@pytest.fixture
async def pg_schema(pg_server: Any) -> AsyncIterator[str]:
    import psycopg

    name = f"hostile_{uuid.uuid4().hex[:10]}"
    async with await psycopg.AsyncConnection.connect(pg_server.admin_dsn,
                                                     autocommit=True) as admin:
        await admin.execute(f'CREATE SCHEMA "{name}"')
    try:
        yield f"{pg_server.admin_dsn}?options=-csearch_path%3D{name}"
    finally:
        async with await psycopg.AsyncConnection.connect(pg_server.admin_dsn,
                                                         autocommit=True) as admin:
            await admin.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


async def _pg(dsn: str, sql: str, params: tuple[Any, ...] = ()) -> None:
    import psycopg

    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        await conn.execute(sql, params)


@pytest.mark.postgres
@pytest.mark.parametrize("case", sorted({**RUN_ROWS, **PG_ONLY_RUN_ROWS}))
async def test_a_damaged_run_row_on_postgres_is_one_error_naming_the_run(
        pg_schema: str, case: str) -> None:
    await _fill(PostgresStore(pg_schema))
    setting, pattern = {**RUN_ROWS, **PG_ONLY_RUN_ROWS}[case]
    await _pg(pg_schema, f"UPDATE runs SET {setting} WHERE run_id = %s", ("bad\x1b[2J",))
    messages = await _reads(PostgresStore(pg_schema), "bad\x1b[2J", what="run")
    for message in messages:
        assert "in the run store at postgresql://" in message, message
        assert re.search(pattern, message), (pattern, message)


@pytest.mark.postgres
@pytest.mark.parametrize("case", sorted({**PAYLOADS, **DELTAS}))
async def test_a_damaged_checkpoint_on_postgres_is_one_error_naming_the_run(
        pg_schema: str, case: str) -> None:
    await _fill(PostgresStore(pg_schema))
    if case in DELTAS:
        payload, pattern = DELTAS[case]
        await _pg(pg_schema, "INSERT INTO checkpoint_deltas (run_id, seq, created_at, "
                  "payload) VALUES (%s, 2, now(), %s::jsonb)", ("bad\x1b[2J", payload))
    else:
        payload, pattern = PAYLOADS[case]
        await _pg(pg_schema, "UPDATE checkpoints SET payload = %s::jsonb WHERE run_id = %s",
                  (payload, "bad\x1b[2J"))
    for message in await _reads(PostgresStore(pg_schema), "bad\x1b[2J", what="checkpoint"):
        assert message.startswith("run 'bad\\x1b[2J' in the run store at postgresql://")
        assert re.search(pattern, message), (pattern, message)


@pytest.mark.postgres
@pytest.mark.parametrize("table, setting, pattern", [
    ("checkpoints", "created_at = 'infinity'",
     r"checkpoint \d+: created_at 'infinity' is not a time between the years 1 and 9999"),
    ("tool_calls", "updated_at = '-infinity'",
     r"a tool call: updated_at '-infinity' is not a time between"),
    ("model_exchanges", "created_at = '99999-06-01 00:00:00+00'",
     r"a model exchange: created_at '99999-0[56]-\d\d [^']+' is not a time between"),
], ids=["checkpoint-infinity", "tool-call-minus-infinity", "exchange-year-99999"])
async def test_a_time_python_cant_hold_on_postgres_is_one_error_naming_the_run(
        pg_schema: str, table: str, setting: str, pattern: str) -> None:
    """The other rows' times, on every read that selects them."""
    await _fill(PostgresStore(pg_schema))
    async with PostgresStore(pg_schema) as store:
        await store.record_tool_call("bad\x1b[2J", "s", 0, "c1", status="done", result=1)
        await store.record_model_exchange("bad\x1b[2J", "s", 0, "h", {"text": "hi"})
    await _pg(pg_schema, f"UPDATE {table} SET {setting} WHERE run_id = %s", ("bad\x1b[2J",))
    if table == "checkpoints":
        messages = await _reads(PostgresStore(pg_schema), "bad\x1b[2J", what="checkpoint")
    else:
        async with PostgresStore(pg_schema) as store:
            read = (store.get_tool_calls if table == "tool_calls"
                    else store.get_model_exchanges)
            with pytest.raises(StoreCorrupt) as caught:
                await read("bad\x1b[2J")
            assert await store.get_run("bad\x1b[2J") is not None  # the run reads
        messages = [str(caught.value)]
    for message in messages:
        assert message.startswith("run 'bad\\x1b[2J' in the run store at postgresql://")
        assert re.search(pattern, message), (pattern, message)


@pytest.mark.postgres
@pytest.mark.parametrize("argv", [["runs"], ["runs", "show", "bad"], ["history"]],
                         ids=["runs", "runs-show", "history"])
def test_the_commands_print_an_infinite_time_on_postgres_as_one_line(
        pg_schema: str, tmp_path: Path, argv: list[str]) -> None:
    async def fill() -> None:
        async with PostgresStore(pg_schema) as store:
            await store.create_run("bad", "flow", "h", {"a": 1})
        await _pg(pg_schema, "UPDATE runs SET started_at = 'infinity'")

    asyncio.run(fill())
    child = _cli([*argv, "--store", pg_schema], tmp_path)
    assert child.returncode == 1, (child.stdout, child.stderr)
    lines = child.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in child.stderr, child.stderr
    assert "run 'bad' in the run store at postgresql://" in lines[0], lines[0]
    assert "started_at 'infinity' is not a time" in lines[0], lines[0]


def _cli(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTLOOM_")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-m", "agentloom.cli", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("argv", [["runs"], ["runs", "--json"], ["runs", "show", "bad"],
                                  ["history"], ["resume", "bad"]],
                         ids=["runs", "runs-json", "runs-show", "history", "resume"])
def test_the_commands_print_a_damaged_run_as_one_line(tmp_path: Path,
                                                      argv: list[str]) -> None:
    path = tmp_path / ".agentloom" / "runs.db"
    path.parent.mkdir()

    async def fill() -> None:
        async with SqliteStore(path) as store:
            await store.create_run("bad", "flow", "h", {"a": 1})

    asyncio.run(fill())
    _sqlite(path, "UPDATE runs SET cost_usd = 'abc', started_at = 'garbage'")
    child = _cli(argv, tmp_path)
    assert child.returncode == 1, (child.stdout, child.stderr)
    lines = child.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in child.stderr, child.stderr
    assert "run 'bad' in the run store at .agentloom/runs.db is damaged: " in lines[0]


@pytest.mark.parametrize("table, setting, pattern", [
    ("tool_calls", "updated_at = 'garbage'",
     r"a tool call: updated_at 'garbage' is not a time"),
    ("tool_calls", "result = '{nope'", r"a tool call: result does not decode"),
    ("model_exchanges", "turn = 'x'", r"a model exchange: turn 'x' is not a whole number"),
], ids=["tool-call-time", "tool-call-result", "exchange-turn"])
async def test_a_damaged_journal_row_is_one_error_naming_the_run(
        tmp_path: Path, table: str, setting: str, pattern: str) -> None:
    path = tmp_path / "runs.db"
    await _fill(SqliteStore(path))
    async with SqliteStore(path) as store:
        await store.record_tool_call("bad\x1b[2J", "s", 0, "c1", status="done", result=1)
        await store.record_model_exchange("bad\x1b[2J", "s", 0, "h", {"text": "hi"})
    _sqlite(path, f"UPDATE {table} SET {setting}")
    async with SqliteStore(path) as store:
        read = (store.get_tool_calls if table == "tool_calls"
                else store.get_model_exchanges)
        with pytest.raises(StoreCorrupt) as caught:
            await read("bad\x1b[2J")
    _check([str(caught.value)], str(path), pattern)
