"""Durable batches on a real PostgreSQL server: workers sharing the store split the inputs
(none is done twice), and a run claimed by a worker that died is taken over once its
lease lapses and resumed from its checkpoint."""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from store_helpers import HoldingServer, lines_of, write_docs

from agentloom.scale import batch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "store"))

from pg_server import pg_server as pg_server

pytestmark = pytest.mark.postgres


@pytest.fixture
def server() -> Iterator[HoldingServer]:
    s = HoldingServer(latency=0.01)
    s.start_in_thread()
    yield s
    s.release()
    s.stop_thread()


def _env(server: HoldingServer) -> dict[str, str]:
    return {"OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": server.openai_base_url}


async def _until(cond: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 20
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.01)


async def test_two_batches_sharing_the_store_never_run_an_input_twice(
        tmp_path: Path, flow: Path, server: HoldingServer, pg_server: Any) -> None:
    n = 24
    inputs = write_docs(tmp_path / "in.jsonl", n)
    batch_id = "share-" + uuid.uuid4().hex[:8]
    a = batch(flow, inputs, output=tmp_path / "a.jsonl", store=pg_server.dsn,
              batch_id=batch_id, env=_env(server), concurrency=3)
    b = batch(flow, inputs, output=tmp_path / "b.jsonl", store=pg_server.dsn,
              batch_id=batch_id, env=_env(server), concurrency=3)
    ra, rb = await asyncio.gather(a.results(), b.results())
    assert len(server.requests) == 2 * n, "every input ran once: two model calls each"
    ran_a = {r.id for r in ra if not r.reused}
    ran_b = {r.id for r in rb if not r.reused}
    assert not ran_a & ran_b
    assert ran_a | ran_b == {f"d{i:02d}" for i in range(n)}
    assert ran_a and ran_b, "both workers took a share"
    # Each output still has every input once: what the other ran comes from the store.
    for out, ran in ((tmp_path / "a.jsonl", ran_a), (tmp_path / "b.jsonl", ran_b)):
        lines = lines_of(out)
        assert sorted(line["id"] for line in lines) == [f"d{i:02d}" for i in range(n)]
        assert {line["id"] for line in lines if not line["reused"]} == ran
        assert all(line["status"] == "success" for line in lines)
    assert a.stats.reused == n - len(ran_a) and b.stats.reused == n - len(ran_b)


async def test_a_dead_workers_run_is_resumed_after_its_lease_lapses(
        tmp_path: Path, flow: Path, server: HoldingServer, pg_server: Any) -> None:
    from agentloom.store import open_store

    n = 4
    inputs, out = write_docs(tmp_path / "in.jsonl", n), tmp_path / "out.jsonl"
    batch_id = "lease-" + uuid.uuid4().hex[:8]
    held = "Title for: echo:Summarize: doc03|"
    server.hold = (held,)
    first = batch(flow, inputs, output=out, store=pg_server.dsn, batch_id=batch_id,
                  env=_env(server), concurrency=n)

    async def drain() -> None:
        async for _ in first:
            pass

    task = asyncio.create_task(drain())
    await _until(lambda: len(server.requests) == 2 * n and len(lines_of(out)) == n - 1,
                 "three runs to finish and the fourth to hang in its second step")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    run_id = f"{batch_id}.d03"
    # A worker on another machine took the interrupted run, then died: its claim stays
    # until the lease lapses.
    async with open_store(pg_server.dsn) as store:  # type: ignore[attr-defined]
        assert await store.claim_run(run_id, "elsewhere:4242:dead00", 1.0)
    server.release()
    before = len(server.requests)
    t0 = time.monotonic()
    again = batch(flow, inputs, output=out, store=pg_server.dsn, batch_id=batch_id,
                  env=_env(server), resume=True)
    results = await again.results()
    assert time.monotonic() - t0 >= 0.5, "it waited for the lease"
    assert [r.id for r in results] == ["d03"] and results[0].resumed and results[0].ok
    assert again.stats.deferred == 1
    assert server.prompts(before) == [held], "the stored first step was not asked again"
    async with open_store(pg_server.dsn) as store:  # type: ignore[attr-defined]
        record = await store.get_run(run_id)
    assert record is not None and record.status == "succeeded" and record.claimed_by is None


def test_two_batch_processes_split_the_inputs(
        tmp_path: Path, flow: Path, server: HoldingServer, pg_server: Any) -> None:
    import os
    import subprocess

    n = 30
    inputs = write_docs(tmp_path / "in.jsonl", n)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENTLOOM_"))}
    env.update(_env(server))
    cli = str(Path(__file__).parent / "cli_main.py")
    batch_id = "procs-" + uuid.uuid4().hex[:8]
    procs = [subprocess.Popen([sys.executable, cli, "batch", str(flow), str(inputs), "-o",
                               str(tmp_path / f"{name}.jsonl"), "--store", pg_server.dsn,
                               "--batch-id", batch_id, "-c", "4", "--json"],
                              env=env, cwd=tmp_path, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
             for name in ("a", "b")]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    assert len(server.requests) == 2 * n, "every input ran once: two model calls each"
    ran = [{line["id"] for line in lines_of(tmp_path / f"{name}.jsonl") if not line["reused"]}
           for name in ("a", "b")]
    assert not ran[0] & ran[1]
    assert ran[0] | ran[1] == {f"d{i:02d}" for i in range(n)}
    for name in ("a", "b"):
        ids = sorted(line["id"] for line in lines_of(tmp_path / f"{name}.jsonl"))
        assert ids == [f"d{i:02d}" for i in range(n)]
