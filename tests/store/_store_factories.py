"""Store factories for the conformance suite, shared by the per-backend test modules."""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import AsyncIterator
from typing import Any

from agentloom.store import MemoryBackend, MemoryStore, PostgresStore, SqliteStore
from agentloom.testing.store_conformance import StoreFactory, store_factory


@store_factory("memory")
async def memory_storage() -> AsyncIterator[Any]:
    backend = MemoryBackend()
    yield lambda now: MemoryStore(backend, now=now)


@store_factory("sqlite")
async def sqlite_storage() -> AsyncIterator[Any]:
    with tempfile.TemporaryDirectory() as d:
        yield lambda now: SqliteStore(f"{d}/runs.db", now=now)


def postgres_factory(admin_dsn: str) -> StoreFactory:
    """A fresh schema per check (much cheaper than a database), dropped afterwards."""

    @store_factory("postgres")
    async def storage() -> AsyncIterator[Any]:
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        async with await psycopg.AsyncConnection.connect(admin_dsn, autocommit=True) as admin:
            await admin.execute(f'CREATE SCHEMA "{name}"')
        dsn = f"{admin_dsn}?options=-csearch_path%3D{name}"
        try:
            yield lambda now: PostgresStore(dsn, now=now)
        finally:
            async with await psycopg.AsyncConnection.connect(admin_dsn,
                                                             autocommit=True) as admin:
                await admin.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')

    return storage
