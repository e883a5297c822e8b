"""A step's write runs on the event loop while the store's worker is idle, and only
then: it never waits there for a lock another process holds, and the WAL's checkpoints
(their fsyncs) stay on the worker, so the WAL stays bounded while a run writes."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import threading
from collections.abc import Coroutine
from pathlib import Path
from types import FrameType
from typing import Any

from agentloom.store import CheckpointDelta, SqliteStore


def _executing_threads(calls: list[str]) -> Any:
    """A profile hook recording the thread of every `sqlite3.Connection.execute`."""
    def hook(frame: FrameType, event: str, arg: Any) -> None:
        if event == "c_call" and getattr(arg, "__qualname__", "") == "Connection.execute":
            calls.append(threading.current_thread().name)
    return hook


async def test_a_write_runs_on_the_event_loop_when_the_worker_is_idle(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "runs.db")
    calls: list[str] = []
    async with store:
        await store.create_run("r", "flow", "h", {})
        sys.setprofile(_executing_threads(calls))
        try:
            seq = await store.save_delta("r", CheckpointDelta(state={"a": 1}))
        finally:
            sys.setprofile(None)
        cp = await store.load_latest("r")
    assert seq == 1 and cp is not None and cp.state == {"a": 1}
    # The busy timeout set to 0 (once) and the batch itself: all on this thread.
    assert calls and set(calls) == {threading.current_thread().name}


class _LockHolder(threading.Thread):
    """Another writer (as another process would be): holds the database's write lock
    until told to let go, or until a watchdog that only a stalled event loop reaches."""

    def __init__(self, path: Path) -> None:
        super().__init__(daemon=True)
        self.path = path
        self.holding = threading.Event()
        self.release = threading.Event()
        self.by_watchdog = False

    def run(self) -> None:
        conn = sqlite3.connect(self.path, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        self.holding.set()
        self.by_watchdog = not self.release.wait(10.0)
        conn.execute("COMMIT")
        conn.close()


async def _while_locked(path: Path, *writes: Coroutine[Any, Any, Any]
                        ) -> tuple[bool, list[Any], bool]:
    """Run `writes` while another connection holds the write lock: (whether all were
    still waiting after 20 turns of the loop, their results once the lock went, whether
    the watchdog had to let go)."""
    holder = _LockHolder(path)
    holder.start()
    holder.holding.wait(10.0)
    try:
        tasks = [asyncio.create_task(w) for w in writes]
        for _ in range(20):  # the loop keeps turning while the worker waits
            await asyncio.sleep(0)
        waiting = not any(t.done() for t in tasks)
    finally:
        holder.release.set()  # the lock goes: the worker's writes go through
    results = [await t for t in tasks]
    holder.join(10.0)
    return waiting, results, holder.by_watchdog


async def test_a_locked_database_sends_the_write_to_the_worker_without_stalling_the_loop(
        tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    store = SqliteStore(path, busy_timeout=30.0)
    async with store:
        await store.create_run("r", "flow", "h", {})
        waiting, results, by_watchdog = await _while_locked(
            path, store.save_delta("r", CheckpointDelta(state={"a": 1})))
        cp = await store.load_latest("r")
    # A write that waited on the event loop would have held it until the watchdog.
    assert waiting and not by_watchdog and results == [1]
    assert cp is not None and cp.state == {"a": 1}


async def test_the_wal_is_checkpointed_while_a_run_writes(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    wal = Path(f"{path}-wal")
    store = SqliteStore(path)
    body = "x" * 3000  # about a page per write, as a step's result with some text
    async with store:
        await store.create_run("r", "flow", "h", {})
        for i in range(1000):
            await store.save_delta("r", CheckpointDelta(state={f"k{i}": body}))
        await store.list_runs(limit=1)  # queued after the last checkpoint: it has run
        wal_bytes = wal.stat().st_size
        cp = await store.load_latest("r")
    assert cp is not None and len(cp.state) == 1000
    # Unchecked, the WAL holds every page written: 1,000 writes of ~7 pages, ~29 MB.
    # Checkpointed every 100 writes, it is reused from its start: a few MB at most.
    assert wal_bytes < 6 * 1024 * 1024, wal_bytes


async def test_after_a_write_on_the_loop_the_worker_still_waits_for_a_lock(
        tmp_path: Path) -> None:
    # The write on the loop left the connection's busy timeout at 0; the worker's
    # statements (a transaction, a write sent to it) get the store's timeout back.
    path = tmp_path / "runs.db"
    store = SqliteStore(path, busy_timeout=30.0)
    async with store:
        await store.create_run("r", "flow", "h", {})
        await store.save_delta("r", CheckpointDelta(state={"a": 1}))  # on the loop
        waiting, _, by_watchdog = await _while_locked(
            path, store.create_run("r2", "flow", "h", {}), store.set_status("r", "paused"))
        runs = {r.run_id: r.status for r in await store.list_runs()}
    assert waiting and not by_watchdog
    assert runs == {"r": "paused", "r2": "running"}
