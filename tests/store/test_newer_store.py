"""A run store migrated by a newer AgentLoom (its `agentloom_migrations` lists a migration
this version doesn't know) is refused on first use with a StoreError that says to
upgrade, and nothing in it is changed: its rows may mean what this version can't read,
and this version's writes may break them. SQLite and PostgreSQL. Older stores still open
(tests/store/test_legacy_store.py)."""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path
from typing import Any

import pytest

from agentloom.store import (
    PostgresStore,
    SqliteStore,
    StoreConfigError,
    StoreError,
    shown_url,
)

NEWER = "m003_from_a_newer_agentloom"


async def _refuses(store: Any, place: str) -> None:
    expected = (f"the run store at {place} was migrated by a newer AgentLoom ({NEWER}); "
                "upgrade agentloom to use it")
    for attempt in (store.list_runs(), store.create_run("r2", "w", "h", {})):
        with pytest.raises(StoreError) as info:
            await attempt
        assert str(info.value) == expected
        assert isinstance(info.value, StoreConfigError)  # what the commands print as one line


async def test_a_sqlite_store_a_newer_agentloom_migrated_is_refused_unchanged(
        tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    async with SqliteStore(path) as store:
        await store.create_run("r1", "w", "h", {"a": 1})
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO agentloom_migrations VALUES (?, '2030-01-01T00:00:00')",
                     (NEWER,))
    conn.close()
    before = path.read_bytes()
    store = SqliteStore(path)
    try:
        await _refuses(store, str(path))
    finally:
        await store.close()
    assert path.read_bytes() == before


@pytest.mark.postgres
async def test_a_postgres_store_a_newer_agentloom_migrated_is_refused_unchanged(
        pg_server: Any) -> None:
    import psycopg

    name = f"newer_{uuid.uuid4().hex[:10]}"
    async with await psycopg.AsyncConnection.connect(pg_server.admin_dsn,
                                                     autocommit=True) as admin:
        await admin.execute(f'CREATE SCHEMA "{name}"')
    dsn = f"{pg_server.admin_dsn}?options=-csearch_path%3D{name}"
    try:
        async with PostgresStore(dsn) as store:
            await store.create_run("r1", "w", "h", {"a": 1})
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
            await conn.execute("INSERT INTO agentloom_migrations VALUES "
                               "(%s, '2030-01-01T00:00:00')", (NEWER,))
        store = PostgresStore(dsn)
        try:
            await _refuses(store, shown_url(dsn))
        finally:
            await store.close()
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
            runs = await (await conn.execute("SELECT run_id FROM runs")).fetchall()
            names = await (await conn.execute(
                "SELECT name FROM agentloom_migrations ORDER BY name")).fetchall()
        assert runs == [("r1",)]
        assert [n for (n,) in names] == ["m001_initial", "m002_checkpoint_deltas", NEWER]
    finally:
        async with await psycopg.AsyncConnection.connect(pg_server.admin_dsn,
                                                         autocommit=True) as admin:
            await admin.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
