"""Two stores on one SQLite file in one process (the UI beside a run, a test's second
handle): opening the second must not cost the first its later writes.

Closing any descriptor of a database drops every POSIX lock the process holds on it,
those of SQLite's own open connection included. The second store's open did just that
(it opened the file to create it, then closed it), so the next process to open and close
the database took it for unused and deleted the write-ahead log the first connection was
still writing into: the first store's later writes were never seen by anyone else, and
were gone once it closed. Real files, a real second process; nothing is timed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from agentloom.store import SqliteStore

_PEEK = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1])
print(",".join(sorted(r[0] for r in conn.execute("SELECT run_id FROM runs"))))
conn.close()
"""


def _runs_seen_by_another_process(path: Path) -> list[str]:
    out = subprocess.run([sys.executable, "-c", _PEEK, str(path)], capture_output=True,
                         text=True, check=True, timeout=60)
    return [r for r in out.stdout.strip().split(",") if r]


async def test_a_second_store_on_the_file_keeps_the_firsts_later_writes(
        tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    first = SqliteStore(path)
    async with first:
        await first.create_run("before", "flow", "h", {})
        async with SqliteStore(path) as second:
            assert await second.get_run("before") is not None
        # Another process opens and closes the database: with the first's locks gone,
        # its close checkpointed and deleted the log the first still wrote to.
        assert _runs_seen_by_another_process(path) == ["before"]
        await first.create_run("after", "flow", "h", {})
        assert _runs_seen_by_another_process(path) == ["after", "before"]
    reopened = SqliteStore(path)
    async with reopened:
        assert await reopened.get_run("after") is not None
