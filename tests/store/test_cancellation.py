"""A caller cancelled mid-write (a deadline, Ctrl-C) leaves the store consistent and usable:
each write either landed whole or not at all, and the next write works."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agentloom.store import Checkpoint, PostgresStore, SqliteStore


async def _hammer_with_cancels(store: Any) -> None:
    await store.create_run("r", "flow", "h", {})
    cancelled = 0
    for i in range(120):
        task = asyncio.create_task(store.save_checkpoint("r", Checkpoint(state={"i": i})))
        await asyncio.sleep((i % 13) * 0.0002)  # cancel at varying points of the write
        cancelled += task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
    run, cp = await store.get_run("r"), await store.load_latest("r")
    assert run is not None and cp is not None
    assert run.latest_seq == cp.seq, "the run row and its newest checkpoint agree"
    if cp.seq:
        assert cp.state["i"] >= cp.seq - 1
    assert await store.save_checkpoint("r", Checkpoint(state={"after": True})) == cp.seq + 1
    assert cancelled > 0


async def test_sqlite_survives_cancelled_writes(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "runs.db") as store:
        await _hammer_with_cancels(store)


@pytest.mark.postgres
async def test_postgres_survives_cancelled_writes(pg_server: Any) -> None:
    from _store_factories import postgres_factory

    async with postgres_factory(pg_server.admin_dsn).storage() as opener:
        store = opener(now=None)
        assert isinstance(store, PostgresStore)
        try:
            await _hammer_with_cancels(store)
        finally:
            await store.close()
