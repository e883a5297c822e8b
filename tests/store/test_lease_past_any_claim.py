"""A claim's lease stored further out than any claim can take (year 9999, written by a
worker on another host that is damaged or hostile, or whose clock is years ahead) is
lapsed: the run can be claimed again at once, on SQLite (a real file), PostgreSQL (a real
server) and in memory alike. Before, `lease_until < now` was the only way out, so such
a run could never be claimed again. A lease up to the longest a claim takes (30 days)
plus a day of another host's clock running ahead still keeps other claimers out.

The store's clock is fixed (`now=`): nothing here depends on time passing."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from _store_factories import postgres_factory

from agentloom.store import MemoryBackend, MemoryStore, SqliteStore, lease_holds, take_claim

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)

HELD = {  # a lease end, as the other host wrote it -> whether it still keeps us out
    "ends-in-a-minute": (NOW + timedelta(minutes=1), True),
    "ends-in-30-days": (NOW + 30 * DAY, True),  # the longest lease a claim takes
    "30-days-and-a-clock-a-day-ahead": (NOW + 31 * DAY, True),
    "ended": (NOW - timedelta(seconds=1), False),
    "31-days-and-a-minute": (NOW + 31 * DAY + timedelta(minutes=1), False),
    "next-year": (NOW + 365 * DAY, False),
    "year-9999": (datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC), False),
}


Poke = Callable[[datetime], Any]
"""Writes the other host's claim (`elsewhere:1:abcd`) with that lease end into the row."""


@pytest.fixture(params=["sqlite", "postgres", "memory"])
async def backend(request: pytest.FixtureRequest, tmp_path: Path
                  ) -> AsyncIterator[tuple[Any, Poke]]:
    if request.param == "sqlite":
        path = tmp_path / "runs.db"

        def poke_file(until: datetime) -> None:
            conn = sqlite3.connect(path)
            with conn:
                conn.execute("UPDATE runs SET claimed_by = 'elsewhere:1:abcd', lease_until = ?",
                             (until.isoformat(timespec="microseconds"),))
            conn.close()

        yield SqliteStore(path, now=lambda: NOW), poke_file
        return
    if request.param == "memory":
        shared = MemoryBackend()

        def poke_memory(until: datetime) -> None:
            from dataclasses import replace
            shared.runs["r"] = replace(shared.runs["r"], claimed_by="elsewhere:1:abcd",
                                       lease_until=until)

        yield MemoryStore(shared, now=lambda: NOW), poke_memory
        return
    request.applymarker(pytest.mark.postgres)
    pg = request.getfixturevalue("pg_server")
    async with postgres_factory(pg.admin_dsn).storage() as opener:
        store = opener(now=lambda: NOW)

        async def poke_pg(until: datetime) -> None:
            import psycopg
            async with await psycopg.AsyncConnection.connect(store.dsn,
                                                             autocommit=True) as conn:
                await conn.execute("UPDATE runs SET claimed_by = 'elsewhere:1:abcd', "
                                   "lease_until = %s", (until,))

        yield store, poke_pg


async def _poke(poke: Poke, until: datetime) -> None:
    done = poke(until)
    if done is not None:
        await done


@pytest.mark.parametrize("case", list(HELD))
async def test_a_lease_past_any_claim_is_lapsed(backend: tuple[Any, Poke], case: str) -> None:
    store, poke = backend
    until, held = HELD[case]
    async with store:
        await store.create_run("r", "flow", "h", {})
        await _poke(poke, until)
        assert await store.claim_run("r", "w1", 60) is (not held)
        run = await store.get_run("r")
        assert run is not None
        if held:  # the row is as the other host left it
            assert run.claimed_by == "elsewhere:1:abcd" and run.lease_until == until
        else:  # ours now, for the lease we asked for
            assert run.claimed_by == "w1"
            assert run.lease_until == NOW + timedelta(seconds=60)


@pytest.mark.parametrize("case", list(HELD))
def test_the_rule_is_one_function_callers_can_ask(case: str) -> None:
    from agentloom.store import lease_holds  # what a holder check outside a claim asks

    until, held = HELD[case]
    assert lease_holds(until, NOW) is held
    assert lease_holds(None, NOW) is False


async def test_resume_takes_a_run_whose_lease_ends_in_year_9999(
        backend: tuple[Any, Poke]) -> None:
    """`take_claim`, what `agentloom resume` and the batch workers call: the holder is
    on another host (so not known to be gone) and yet the run is taken."""
    store, poke = backend
    async with store:
        await store.create_run("r", "flow", "h", {})
        await _poke(poke, datetime(9999, 12, 31, tzinfo=UTC))
        assert await take_claim(store, "r", "me:2:beef", 120) is None
        run = await store.get_run("r")
        assert run is not None and run.claimed_by == "me:2:beef"
        # ... and holds it against the next claimer, as any claim does.
        assert await take_claim(store, "r", "other:3:cafe", 120) == "me:2:beef"


@pytest.mark.postgres
async def test_an_infinite_lease_on_postgres_is_lapsed(pg_server: Any) -> None:
    """TIMESTAMPTZ holds 'infinity', which no claim writes."""
    import psycopg

    async with postgres_factory(pg_server.admin_dsn).storage() as opener, \
            opener(now=lambda: NOW) as store:
        await store.create_run("r", "flow", "h", {})
        async with await psycopg.AsyncConnection.connect(store.dsn, autocommit=True) as conn:
            await conn.execute("UPDATE runs SET claimed_by = 'elsewhere:1:abcd', "
                               "lease_until = 'infinity'")
        assert await store.claim_run("r", "w1", 60) is True
        run = await store.get_run("r")
        assert run is not None and run.claimed_by == "w1"


@pytest.mark.postgres
@pytest.mark.parametrize("until, read_as", [
    ("infinity", datetime.max.replace(tzinfo=UTC)),
    ("-infinity", datetime.min.replace(tzinfo=UTC)),
    ("99999-01-01 00:00:00+00", datetime.max.replace(tzinfo=UTC)),
], ids=["infinity", "minus-infinity", "year-99999"])
async def test_an_infinite_lease_on_postgres_reads_as_lapsed(pg_server: Any, until: str,
                                                              read_as: datetime) -> None:
    """Before the run is claimed again: a lease no `datetime` holds reads as the latest
    (earliest) time there is, which `lease_holds` counts as lapsed, as the claim does;
    before, psycopg's DataError ("timestamp too large") failed `get_run`, `agentloom
    runs` and the UI's list over it."""
    import psycopg

    async with postgres_factory(pg_server.admin_dsn).storage() as opener, \
            opener(now=lambda: NOW) as store:
        await store.create_run("r", "flow", "h", {})
        await store.create_run("other", "flow", "h", {})
        async with await psycopg.AsyncConnection.connect(store.dsn, autocommit=True) as conn:
            await conn.execute("UPDATE runs SET claimed_by = 'elsewhere:1:abcd', "
                               "lease_until = %s WHERE run_id = 'r'", (until,))
        listed = await store.list_runs()
        found = (await store.find_runs()).runs
        run = await store.get_run("r")
        for record in (run, *[r for r in [*listed, *found] if r.run_id == "r"]):
            assert record is not None and record.claimed_by == "elsewhere:1:abcd"
            assert record.lease_until == read_as
            assert lease_holds(record.lease_until, NOW) is False
        assert sorted(r.run_id for r in listed) == ["other", "r"]
        assert await take_claim(store, "r", "me:2:beef", 120) is None  # taken at once
        run = await store.get_run("r")
        assert run is not None and run.claimed_by == "me:2:beef"
        assert run.lease_until == NOW + timedelta(seconds=120)
