"""Several processes creating one SQLite store at the same moment (the workers of a
batch) must all open it: switching to WAL doesn't wait on SQLite's busy handler."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

OPEN_AND_WRITE = """
import asyncio, sys, time
from agentloom.store import open_store

async def main() -> None:
    store = open_store(sys.argv[1])
    # Imports take different times: meet at one instant so the opens really collide.
    time.sleep(max(0.0, float(sys.argv[3]) - time.time()))
    async with store:
        await store.create_run(sys.argv[2], "wf", "hash", {"n": 1}, {})

asyncio.run(main())
"""


def test_many_processes_create_one_store_at_once(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    start = str(time.time() + 1.5)
    procs = [
        subprocess.Popen([sys.executable, "-c", OPEN_AND_WRITE, str(db), f"run-{i}", start],
                         stderr=subprocess.PIPE, text=True)
        for i in range(8)
    ]
    errors = [p.communicate(timeout=60)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 8, "\n".join(errors)
    import sqlite3

    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
