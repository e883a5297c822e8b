"""`agentloom history` shows each run's providers and tokens from a few fields of each
stored step result, read by the database's JSON functions (`load_step_facts`), without
decoding any run's state, conversations or tool loops; before, it decoded each listed
run's whole latest checkpoint and every later delta (`load_latest`), 1,000 runs a call.

The facts fold as `load_latest` folds the rows (a delta's results replace the base's,
its `step_results_removed` drop), on SQLite (a real file), PostgreSQL (a real server)
and in memory alike; a row `load_latest` reads as damaged is the same `StoreCorrupt`.
The token counts are now counted: a stored `Usage` is read back as one, not a dict, so
the old listing always said `total_tokens: 0`."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from _store_factories import postgres_factory

from agentloom.cli import main
from agentloom.messages import Usage
from agentloom.store import (
    Checkpoint,
    CheckpointDelta,
    JsonSerializer,
    MemoryBackend,
    MemoryStore,
    PostgresStore,
    SqliteStore,
    StoreCorrupt,
)


class _Counting(JsonSerializer):
    """Counts what it decodes that is a checkpoint or a delta (it has a status)."""

    def __init__(self) -> None:
        self.decoded = 0

    def loads(self, data: str) -> Any:
        if '"status"' in data:
            self.decoded += 1
        return super().loads(data)


async def _fill(store: Any) -> None:
    """Run `a`: a base, deltas that add, replace and drop results, a whole checkpoint
    and a delta after it; `b`: no step results; `c`: results with damaged facts."""
    async with store:
        await store.create_run("a", "flow", "h", {"big": "x" * 10_000})
        await store.save_checkpoint("a", Checkpoint(state={"big": "y" * 10_000}, step_results={
            "draft": {"provider": "openai", "model": "gpt-4o", "output": "z" * 5_000,
                      "usage": Usage(input_tokens=10, output_tokens=5)},
            "tool": {"status": "success", "output": [1, 2]},
        }))
        await store.save_delta("a", CheckpointDelta(step_results={
            "review": {"provider": "anthropic", "model": "claude",
                       "usage": {"input_tokens": 7, "output_tokens": 3}},
        }))
        await store.save_delta("a", CheckpointDelta(
            step_results={"draft": {"provider": "gemini", "model": "flash",
                                    "usage": Usage(input_tokens=1, output_tokens=2)}},
            step_results_removed=["tool"]))
        await store.create_run("b", "flow", "h", {})
        await store.create_run("c", "flow", "h", {})
        await store.save_delta("c", CheckpointDelta(step_results={
            "odd": {"provider": 5, "model": ["m"], "usage": Usage(input_tokens=-1)},
            "long": {"provider": "p" * 300, "usage": {"input_tokens": 2.5,
                                                      "output_tokens": 10**30}},
            "text": "not an object",
        }))


def _expected() -> dict[str, Any]:
    from agentloom.store import StepFacts  # new with `load_step_facts`

    return {
        "a": {"draft": StepFacts(provider="gemini", model="flash", input_tokens=1,
                                 output_tokens=2),
              "review": StepFacts(provider="anthropic", model="claude", input_tokens=7,
                                  output_tokens=3)},
        "b": {},
        "c": {"odd": StepFacts(), "long": StepFacts(), "text": StepFacts()},
    }


async def _opener(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    """A function of a serializer giving a store of the backend (one place per test)."""
    if request.param == "sqlite":
        yield lambda serde=None: SqliteStore(tmp_path / "runs.db", serde=serde)
    elif request.param == "memory":
        shared = MemoryBackend()
        yield lambda serde=None: MemoryStore(shared, serde=serde)
    else:
        request.applymarker(pytest.mark.postgres)
        pg = request.getfixturevalue("pg_server")
        async with postgres_factory(pg.admin_dsn).storage() as fresh:
            dsn = fresh(now=None).dsn
            yield lambda serde=None: PostgresStore(dsn, serde=serde)


@pytest.fixture(params=["sqlite", "postgres", "memory"])
async def opener(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    async for made in _opener(request, tmp_path):
        yield made


@pytest.fixture(params=["sqlite", "postgres"])
async def sql_opener(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    async for made in _opener(request, tmp_path):
        yield made


async def test_the_facts_fold_as_load_latest_does(opener: Any) -> None:
    await _fill(opener())
    async with opener() as store:
        facts = await store.load_step_facts(["c", "a", "missing", "b", "a"])
        assert facts == _expected()
        latest = await store.load_latest("a")
        assert list(facts["a"]) == list(latest.step_results)  # in the same order


async def test_no_checkpoint_is_decoded_for_the_facts(sql_opener: Any) -> None:
    await _fill(sql_opener())
    counting = _Counting()
    async with sql_opener(counting) as store:
        assert await store.load_step_facts(["a", "b", "c"]) == _expected()
        assert counting.decoded == 0
        await store.load_latest("a")
        assert counting.decoded == 3  # its base and two deltas: what the old listing paid


SQLITE_DAMAGE = {  # how run `a`'s rows are damaged -> words of the error
    "payload-list": ("UPDATE checkpoints SET payload = '[1, 2]' WHERE run_id = 'a' AND "
                     "seq = 1", r"checkpoint 1: the payload is list, not an object"),
    "step-results-text": ("UPDATE checkpoints SET payload = json_set(payload, "
                          "'$.step_results', 'xx') WHERE run_id = 'a' AND seq = 1",
                          r"checkpoint 1: step_results is text, not an object"),
    "payload-not-json": ("UPDATE checkpoints SET payload = '{nope' WHERE run_id = 'a' AND "
                         "seq = 1", r"checkpoint 1: the payload does not decode"),
    "delta-not-json": ("UPDATE checkpoint_deltas SET payload = '{nope' WHERE run_id = 'a' "
                       "AND seq = 3", r"the write 3: the payload does not decode"),
    "delta-list": ("UPDATE checkpoint_deltas SET payload = '[]' WHERE run_id = 'a' AND "
                   "seq = 2", r"the write 2: the payload is list, not an object"),
    "removed-text": ("UPDATE checkpoint_deltas SET payload = json_set(payload, "
                     "'$.step_results_removed', 'tool') WHERE run_id = 'a' AND seq = 3",
                     r"the write 3: step_results_removed is text, not a list"),
    "removed-number": ("UPDATE checkpoint_deltas SET payload = json_set(payload, "
                       "'$.step_results_removed', json('[5]')) WHERE run_id = 'a' AND "
                       "seq = 3", r"the write 3: an entry of step_results_removed 5 is not "
                                  r"text"),
}


@pytest.mark.parametrize("case", sorted(SQLITE_DAMAGE))
async def test_a_damaged_row_is_the_error_load_latest_raises(tmp_path: Path,
                                                              case: str) -> None:
    path = tmp_path / "runs.db"
    await _fill(SqliteStore(path))
    sql, words = SQLITE_DAMAGE[case]
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(sql)
    conn.close()
    async with SqliteStore(path) as store:
        with pytest.raises(StoreCorrupt) as from_latest:
            await store.load_latest("a")
        with pytest.raises(StoreCorrupt, match=words) as from_facts:
            await store.load_step_facts(["b", "a"])
        assert str(from_facts.value) == str(from_latest.value)
        assert await store.load_step_facts(["b", "c"]) == {"b": {}, "c": _expected()["c"]}


@pytest.mark.postgres
async def test_a_damaged_row_on_postgres_is_the_error_load_latest_raises(
        pg_server: Any) -> None:
    import psycopg

    async with postgres_factory(pg_server.admin_dsn).storage() as fresh:
        dsn = fresh(now=None).dsn
        await _fill(PostgresStore(dsn))
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
            await conn.execute("UPDATE checkpoint_deltas SET payload = jsonb_set(payload, "
                               "'{step_results_removed}', '\"tool\"') WHERE run_id = 'a' "
                               "AND seq = 3")
        async with PostgresStore(dsn) as store:
            with pytest.raises(StoreCorrupt, match=r"the write 3: step_results_removed is "
                                                   r"text, not a list"):
                await store.load_step_facts(["a"])
            assert await store.load_step_facts(["b"]) == {"b": {}}


def _history(capsys: pytest.CaptureFixture[str], store: str) -> dict[str, Any]:
    code = main(["history", "--store", store, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return {r["run_id"]: r for r in json.loads(out)}


def _check_listing(records: dict[str, Any]) -> None:
    assert records["a"]["providers_used"] == ["gemini/flash", "anthropic/claude"]
    assert records["a"]["total_tokens"] == 13
    assert records["b"]["providers_used"] == [] and records["b"]["total_tokens"] == 0
    assert records["c"]["providers_used"] == [] and records["c"]["total_tokens"] == 0


def test_history_lists_providers_and_tokens_from_sqlite(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "runs.db"
    asyncio.run(_fill(SqliteStore(path)))
    _check_listing(_history(capsys, f"sqlite:///{path}"))


@pytest.mark.postgres
def test_history_lists_providers_and_tokens_from_postgres(
        pg_server: Any, capsys: pytest.CaptureFixture[str]) -> None:
    import psycopg

    name = "step_facts_history"
    with psycopg.connect(pg_server.admin_dsn, autocommit=True) as admin:
        admin.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
        admin.execute(f'CREATE SCHEMA "{name}"')
    dsn = f"{pg_server.admin_dsn}?options=-csearch_path%3D{name}"
    try:
        asyncio.run(_fill(PostgresStore(dsn)))
        _check_listing(_history(capsys, dsn))
    finally:
        with psycopg.connect(pg_server.admin_dsn, autocommit=True) as admin:
            admin.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
