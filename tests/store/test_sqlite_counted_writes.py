"""SQLite runs the writes whose `RETURNING run_id` only says whether they wrote a row
without that clause (their row count answers instead): each outcome still reads right."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from agentloom.store import CheckpointDelta, RunNotFound, SqliteStore, StoreError


async def test_writes_report_whether_they_wrote(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "runs.db")
    async with store:
        await store.create_run("r", "flow", "h", {})
        assert await store.save_delta("r", CheckpointDelta(state={"a": 1})) == 1
        assert await store.save_delta("r", CheckpointDelta(state={"b": 2})) == 2
        with pytest.raises(RunNotFound):
            await store.save_delta("nope", CheckpointDelta())
        with pytest.raises(RunNotFound):
            await store.set_status("nope", "failed")
        await store.set_status("r", "paused")
        await store.record_tool_call("r", "s", 1, "c", status="done", result={"x": 1})
        with pytest.raises(StoreError, match="already done"):  # the upsert wrote nothing
            await store.record_tool_call("r", "s", 1, "c", status="in_flight")
        with pytest.raises(RunNotFound):
            await store.record_tool_call("nope", "s", 1, "c", status="in_flight")
        await store.record_model_exchange("r", "s", 1, "h1", {"reply": 1})
        await store.record_model_exchange("r", "s", 1, "h1", {"reply": 2})  # replaced
        with pytest.raises(RunNotFound):
            await store.record_model_exchange("nope", "s", 1, "h1", {})
        assert await store.claim_run("r", "w1", 60)
        assert not await store.claim_run("r", "w2", 60)
        cp = await store.load_latest("r")
        run = await store.get_run("r")
    assert cp is not None and cp.state == {"a": 1, "b": 2} and cp.seq == 2
    assert run is not None and run.status == "paused" and run.latest_seq == 2
    assert [x.response for x in await _exchanges(store)] == [{"reply": 2}]
    with sqlite3.connect(tmp_path / "runs.db") as conn:  # what a reader of the file sees
        assert conn.execute("SELECT seq FROM checkpoint_deltas ORDER BY seq").fetchall() \
            == [(1,), (2,)]


async def _exchanges(store: SqliteStore) -> list:  # type: ignore[type-arg]
    reopened = SqliteStore(store.path)
    async with reopened:
        return await reopened.get_model_exchanges("r")
