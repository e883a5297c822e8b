"""A Ray actor killed in the middle of a durable run: the input goes to another actor,
which takes over the dead actor's claim and resumes the run from its checkpoint."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from store_helpers import HoldingServer, lines_of, write_docs

from agentloom.scale import RayExecutor, WorkflowRunnerFactory, batch

pytestmark = pytest.mark.ray


async def test_killed_actor_run_is_resumed_by_another_actor(
        tmp_path: Path, flow: Path, ray_local: Any) -> None:
    server = HoldingServer()
    server.start_in_thread()
    try:
        await _scenario(tmp_path, flow, ray_local, server)
    finally:
        server.release()
        server.stop_thread()


async def _scenario(tmp_path: Path, flow: Path, ray: Any, server: HoldingServer) -> None:
    n = 4
    inputs, out, db = write_docs(tmp_path / "in.jsonl", n), tmp_path / "out.jsonl", \
        tmp_path / "runs.db"
    held = "Title for: echo:Summarize: doc02|"
    server.hold = (held,)
    env = {"OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": server.openai_base_url}
    factory = replace(WorkflowRunnerFactory.from_file(flow, env=env), store=str(db),
                      batch_id="ray", lease_seconds=30.0)
    executor = RayExecutor(factory, workers=2, concurrency=n)
    b = batch(None, inputs, executor=executor, output=out, store=db)

    async def kill_the_holder() -> None:
        deadline = time.monotonic() + 60
        while held not in server.prompts():
            assert time.monotonic() < deadline, "the held call never came"
            await asyncio.sleep(0.01)
        slot = next(s for s in executor.slots if "d02" in s.running)
        ray.kill(slot.handle)
        # Release only once the executor has seen the death and another actor asks again:
        # released any earlier, a slow kill (a loaded machine) could let the doomed actor
        # receive its reply and finish.
        while any(s is slot for s in executor.slots):
            assert time.monotonic() < deadline, "the kill was never noticed"
            await asyncio.sleep(0.01)
        since = len(server.requests)
        while held not in server.prompts(since):
            assert time.monotonic() < deadline, "the run was never resumed elsewhere"
            await asyncio.sleep(0.01)
        server.release()

    killer = asyncio.create_task(kill_the_holder())
    results = {r.id: r for r in await b.results()}
    await killer
    assert sorted(results) == [f"d{i:02d}" for i in range(n)]
    assert all(r.ok for r in results.values())
    d02 = results["d02"]
    assert d02.attempts == 2 and d02.resumed
    # The first step's reply was stored: after the kill, only the second call is made.
    assert sum("doc02|" in p for p in server.prompts()) == 3  # first, held, resumed
    assert server.prompts().count(held) == 2
    assert sorted(line["id"] for line in lines_of(out)) == sorted(results)
