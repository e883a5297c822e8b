"""A store written before checkpoint deltas opens with today's code: the migration adds
the deltas table, the old runs list and load as they were, and a paused one takes new
writes (deltas on top of its last whole checkpoint) and resumes. SQLite and PostgreSQL."""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path
from typing import Any

import pytest
from legacy import GATE, legacy_rows, load_legacy_sqlite

from agentloom.store import CheckpointDelta, PostgresStore, SqliteStore
from agentloom.store._migrations import m001_initial
from agentloom.testing.scripted import FunctionModel
from agentloom.workflow import RunStatus, arun_workflow, load_workflow_text
from agentloom.workflow.durable.run import Decision, DurableRun


class _Factory:
    default_model = "gpt-4o-mini"

    def __init__(self, model: Any) -> None:
        self.model = model

    def client(self, **_: Any) -> Any:
        return self.model


async def _check_legacy_store(store: Any) -> None:
    runs = {r.run_id: r for r in await store.list_runs()}
    assert {k: (r.status, r.latest_seq) for k, r in runs.items()} == {
        "legacy-done": ("succeeded", 2), "legacy-gate": ("paused", 2)}
    done = await store.load_latest("legacy-done")
    assert done is not None and done.seq == 2 and done.state == {"out": "re hi"}
    assert done.step_results["only"]["text"] == "re hi"
    cp = await store.load_latest("legacy-gate")
    assert cp is not None and cp.status == "paused" and cp.seq == 2
    assert cp.paused is not None and cp.paused.step_id == "approve"
    assert cp.state == {"topic": "tea", "draft": "re draft about tea"}
    assert [e.step_id for e in await store.get_model_exchanges("legacy-gate")] == ["draft"]

    # Resumed with an approval: the finished step is not run again, the rest runs, and
    # its writes are deltas on top of the old whole checkpoint.
    prompts: list[str] = []

    def reply(request: Any) -> str:
        prompts.append(request.messages[-1].text)
        return "sent"

    durable = DurableRun(store=store, run_id="legacy-gate", workflow_hash=runs[
        "legacy-gate"].workflow_hash, resumed=cp, decision=Decision(approve=True))
    result = await arun_workflow(load_workflow_text(GATE), clients=_Factory(
        FunctionModel(reply)), durable=durable)
    assert result.status is RunStatus.SUCCESS, result.error
    assert len(prompts) == 1 and prompts[0].startswith("decision "), prompts
    final = await store.load_latest("legacy-gate")
    assert final is not None and final.status == "succeeded"
    assert final.state["draft"] == "re draft about tea" and final.state["result"] == "sent"
    assert set(final.step_results) == {"draft", "approve", "send"}
    run = await store.get_run("legacy-gate")
    assert run is not None and run.status == "succeeded" and run.latest_seq == final.seq
    assert await store.save_delta("legacy-done", CheckpointDelta(
        status="succeeded", state={"note": "later"})) == 3


async def test_a_sqlite_store_from_before_deltas_opens_lists_and_resumes(tmp_path: Path
                                                                         ) -> None:
    path = tmp_path / "runs.db"
    load_legacy_sqlite(path)
    async with SqliteStore(path) as store:
        await _check_legacy_store(store)
    with sqlite3.connect(path) as conn:
        applied = [r[0] for r in conn.execute(
            "SELECT name FROM agentloom_migrations ORDER BY name")]
        deltas = conn.execute("SELECT COUNT(*) FROM checkpoint_deltas "
                              "WHERE run_id = 'legacy-gate'").fetchone()[0]
        whole = conn.execute("SELECT COUNT(*) FROM checkpoints "
                             "WHERE run_id = 'legacy-gate'").fetchone()[0]
    conn.close()
    assert applied == ["m001_initial", "m002_checkpoint_deltas"]
    assert whole >= 3 and deltas >= 1, (whole, deltas)


@pytest.mark.postgres
async def test_a_postgres_store_from_before_deltas_opens_lists_and_resumes(pg_server: Any
                                                                           ) -> None:
    import psycopg

    name = f"legacy_{uuid.uuid4().hex[:10]}"
    rows = legacy_rows()
    async with await psycopg.AsyncConnection.connect(pg_server.admin_dsn,
                                                     autocommit=True) as admin:
        await admin.execute(f'CREATE SCHEMA "{name}"')
        await admin.execute(f'SET search_path TO "{name}"')
        async with admin.transaction():
            # The schema as it was: migration 1 only, and its rows.
            await admin.execute("CREATE TABLE agentloom_migrations "
                                "(name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
            await admin.execute("INSERT INTO agentloom_migrations VALUES "
                                "('m001_initial', '2026-12-01T00:00:00+00:00')")
            for statement in m001_initial("postgres"):
                await admin.execute(statement)
            for table, table_rows in rows.items():
                for row in table_rows:
                    marks = ", ".join(["%s"] * len(row))
                    await admin.execute(f"INSERT INTO {table} VALUES ({marks})", row)
    dsn = f"{pg_server.admin_dsn}?options=-csearch_path%3D{name}"
    try:
        async with PostgresStore(dsn) as store:
            await _check_legacy_store(store)
    finally:
        async with await psycopg.AsyncConnection.connect(pg_server.admin_dsn,
                                                         autocommit=True) as admin:
            await admin.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
