"""SQLite specifics: where the file goes, unwritable paths, and a real SIGKILL mid-write."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from agentloom.store import (
    MemoryStore,
    PostgresStore,
    SqliteStore,
    StoreConfigError,
    open_store,
)


def test_open_store_picks_backend_without_io(tmp_path: Path) -> None:
    default = open_store(run_dir=tmp_path)
    assert isinstance(default, SqliteStore)
    assert default.path == tmp_path / ".agentloom" / "runs.db"
    assert not default.path.exists(), "opening does no I/O"
    plain = open_store(str(tmp_path / "a.db"))
    assert isinstance(plain, SqliteStore) and plain.path == tmp_path / "a.db"
    rel = open_store("sqlite:///rel/runs.db")
    assert isinstance(rel, SqliteStore) and rel.path == Path("rel/runs.db")
    absolute = open_store(f"sqlite:///{tmp_path}/b.db")
    assert isinstance(absolute, SqliteStore) and absolute.path == tmp_path / "b.db"
    pg = open_store("postgresql://u:secretpw@127.0.0.1:1/db")
    assert isinstance(pg, PostgresStore) and "secretpw" not in repr(pg)
    assert isinstance(open_store("memory://"), MemoryStore)
    with pytest.raises(StoreConfigError, match="unknown store URL scheme 'redis'"):
        open_store("redis://x")


async def test_unwritable_path_is_a_config_error_naming_it(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where a directory should be")
    store = SqliteStore(blocker / "runs.db")
    with pytest.raises(StoreConfigError) as info:
        await store.create_run("r", "flow", "h", {})
    assert str(blocker / "runs.db") in str(info.value)
    await store.close()


async def test_read_only_database_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    async with SqliteStore(path) as store:
        await store.create_run("r", "flow", "h", {"kept": True})
    uri_store = SqliteStore(path)
    # Root ignores file modes, so make the file read-only the way sqlite sees it.
    os.chmod(path, 0o444)
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i", str(path)], capture_output=True)
    try:
        if os.access(path, os.W_OK) and os.geteuid() == 0:
            probe = subprocess.run(["sh", "-c", f"echo >> {path}"], capture_output=True)
            if probe.returncode == 0:
                pytest.skip("cannot make a file read-only for root here (no chattr)")
        with pytest.raises(StoreConfigError, match=str(path)):
            await uri_store.create_run("r2", "flow", "h", {})
    finally:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(path)], capture_output=True)
        os.chmod(path, 0o644)
        await uri_store.close()
    async with SqliteStore(path) as again:
        cp = await again.load_latest("r")
        assert cp is not None and cp.state == {"kept": True}


_WRITER = r"""
import asyncio, sys
from agentloom.store import SqliteStore, Checkpoint

async def main():
    store = SqliteStore(sys.argv[1])
    await store.create_run("r", "flow", "h", {"i": 0})
    i = 0
    while True:
        i += 1
        seq = await store.save_checkpoint("r", Checkpoint(state={"i": i, "pad": "x" * 2000}))
        await store.record_tool_call("r", "s", i, f"c{i}", status="in_flight")
        print(seq, flush=True)

asyncio.run(main())
"""


async def test_sigkill_mid_writes_leaves_a_consistent_store(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(path)],
                            stdout=subprocess.PIPE, cwd=Path(__file__).parents[2])
    assert proc.stdout is not None
    seen = 0
    for line in proc.stdout:
        seen = int(line)
        if seen >= 40:
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert seen >= 40
    async with SqliteStore(path) as store:
        cp = await store.load_latest("r")
        run = await store.get_run("r")
        assert cp is not None and run is not None
        assert cp.seq >= seen and cp.seq == run.latest_seq, "every acknowledged write survived"
        assert cp.state["i"] == cp.seq
        calls = await store.get_tool_calls("r")
        assert len(calls) in (cp.seq - 1, cp.seq)
        assert await store.save_checkpoint("r", cp) == cp.seq + 1


async def test_keep_checkpoints_bounds_history(tmp_path: Path) -> None:
    import sqlite3

    from agentloom.store import Checkpoint

    path = tmp_path / "runs.db"
    async with SqliteStore(path, keep_checkpoints=2) as store:
        await store.create_run("r", "flow", "h", {})
        for i in range(5):
            await store.save_checkpoint("r", Checkpoint(state={"i": i}))
        cp = await store.load_latest("r")
        assert cp is not None and cp.seq == 5 and cp.state == {"i": 4}
    with sqlite3.connect(path) as conn:
        seqs = [r[0] for r in conn.execute("SELECT seq FROM checkpoints ORDER BY seq")]
    assert seqs == [4, 5]


async def test_keep_checkpoints_drops_the_deltas_a_whole_checkpoint_replaces(
        tmp_path: Path) -> None:
    import sqlite3

    from agentloom.store import CheckpointDelta

    path = tmp_path / "runs.db"
    async with SqliteStore(path, keep_checkpoints=1) as store:
        await store.create_run("r", "flow", "h", {"a": 0})
        for i in range(3):
            await store.save_delta("r", CheckpointDelta(state={f"d{i}": i}))
        cp = await store.load_latest("r")
        assert cp is not None and cp.state == {"a": 0, "d0": 0, "d1": 1, "d2": 2}
        assert await store.save_checkpoint("r", cp) == 4
        assert await store.save_delta("r", CheckpointDelta(state={"after": True})) == 5
        again = await store.load_latest("r")
        assert again is not None and again.seq == 5
        assert again.state == {**cp.state, "after": True}
    with sqlite3.connect(path) as conn:
        whole = [r[0] for r in conn.execute("SELECT seq FROM checkpoints ORDER BY seq")]
        deltas = [r[0] for r in conn.execute("SELECT seq FROM checkpoint_deltas ORDER BY seq")]
    conn.close()
    assert (whole, deltas) == ([4], [5])


def _open_fds() -> set[str]:
    return set(os.listdir("/dev/fd"))


def test_a_store_used_from_several_event_loops_answers_each_and_leaves_no_pipe(
        tmp_path: Path) -> None:
    # Each loop gets its results through its own wake-up pipe; they go when the store's
    # thread ends.
    before, threads = _open_fds(), set(threading.enumerate())
    store = SqliteStore(tmp_path / "runs.db")

    async def use(run_id: str) -> list[str]:
        await store.create_run(run_id, "flow", "h", {})
        return [r.run_id for r in await store.list_runs()]

    assert asyncio.run(use("r1")) == ["r1"]
    assert sorted(asyncio.run(use("r2"))) == ["r1", "r2"]
    asyncio.run(store.close())
    for thread in set(threading.enumerate()) - threads:
        if thread.name == "agentloom-sqlite":
            thread.join(5)
    assert _open_fds() <= before


class _NoReaderLoop(asyncio.SelectorEventLoop):
    """A loop that can't watch a file descriptor, as Windows' proactor loop can't."""

    def add_reader(self, *args: object, **kwargs: object) -> None:
        raise NotImplementedError


def test_a_loop_that_cannot_read_a_pipe_gets_its_results_all_the_same(
        tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "runs.db")

    async def use() -> list[str]:
        await store.create_run("r1", "flow", "h", {})
        runs = [r.run_id for r in await store.list_runs()]
        await store.close()
        return runs

    loop = _NoReaderLoop()
    try:
        assert loop.run_until_complete(use()) == ["r1"]
    finally:
        loop.close()
