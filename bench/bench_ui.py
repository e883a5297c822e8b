"""What `agentloom ui` costs the server: the run list's first page over a SQLite store of
10,000 runs, and the page of a run with 1,000 steps (`python bench/bench_ui.py [RUNS]
[STEPS] [--profile]`). Server time is measured by a middleware around the handler, over
real HTTP on loopback, with the redactor `agentloom ui` runs; the client's time is
printed beside it. `--profile` prints where the run page's first view spends its time
(cProfile, by own time)."""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from agentloom.messages import ModelResponse, TextPart, Usage
from agentloom.redact import Redactor
from agentloom.store import Checkpoint, CheckpointDelta, SqliteStore
from agentloom.ui import UiSettings, create_app
from agentloom.workflow.durable.run import workflow_hash

STATUSES = ("succeeded", "succeeded", "succeeded", "failed", "paused")


def _step(i: int) -> dict[str, Any]:
    return {"id": f"s{i}", "type": "llm_call", "status": "success", "attempts": 1 + i % 3,
            "model": "gpt-4o-mini", "provider": "openai", "finish_reason": "stop",
            "started_at": 100.0 + i * 0.01, "duration_seconds": 0.05 + (i % 7) * 0.01,
            "output": f"step {i} wrote a short paragraph of text " * 3, "text": None,
            "error": None, "error_type": None, "reason": None, "iterations": 1,
            "usage": Usage(input_tokens=120, output_tokens=40, cost_usd=Decimal("0.00003"))}


def _flow(steps: int) -> str:
    lines = ["name: big", "steps:"]
    for i in range(steps):
        dep = f", depends_on: [s{(i - 1) // 4 * 4}]" if i else ""
        lines.append(f"  - {{id: s{i}, type: llm_call, prompt: p{i}{dep}, output: o{i}}}")
    return "\n".join(lines) + "\n"


async def _fill(store: SqliteStore, runs: int, steps: int, flow: Path) -> None:
    small = {f"s{i}": _step(i) for i in range(4)}
    for i in range(runs):
        run_id = f"run-{i:05d}"
        meta = {"batch_id": f"b{i // 100}"} if i % 2 else {}
        await store.create_run(run_id, f"flow-{i % 20}", "h", {"topic": i}, meta=meta)
        await store.save_checkpoint(run_id, Checkpoint(
            state={"topic": i, "o0": "x" * 200}, status=STATUSES[i % len(STATUSES)],  # type: ignore[arg-type]
            step_results=small, cost_usd=Decimal("0.00012")))
    # The big run is written as a run writes it: a delta per step (its result and its
    # output in the state), so the page replays 1,000 rows to find the state after each.
    # The run's hash is its file's, as a run records it: the page reads an unchanged
    # file's graph off the YAML (a changed file is loaded and validated, ~250 ms more).
    await store.create_run("big", "big", workflow_hash(flow.read_bytes()), {},
                           meta={"workflow_path": str(flow)})
    for i in range(steps):
        await store.save_delta("big", CheckpointDelta(
            state={f"o{i}": f"output {i}"}, step_results={f"s{i}": _step(i)},
            status="succeeded" if i == steps - 1 else "running",
            cost_usd=Decimal("0.00003") * (i + 1)))
    for i in range(steps):
        await store.record_model_exchange("big", f"s{i}", 1, f"sha256:{i}", ModelResponse(
            parts=(TextPart(text=f"reply {i}"),), usage=Usage(input_tokens=120,
                                                              output_tokens=40),
            finish_reason="stop", model="gpt-4o-mini", provider="openai"))


class _Timed:
    """A UI app over `store` with a middleware that records each request's server time
    (wall and CPU of the process, all threads)."""

    def __init__(self, store: SqliteStore) -> None:
        self.times: list[float] = []
        self.cpu: list[float] = []
        self.store = store

    async def client(self) -> TestClient[Any, Any]:
        """A new app: its caches (graphs, histories, list facts) start empty."""
        @web.middleware
        async def timing(request: web.Request, handler: Any) -> web.StreamResponse:
            t, c = time.perf_counter(), time.process_time()
            try:
                return await handler(request)  # type: ignore[no-any-return]
            finally:
                self.times.append(time.perf_counter() - t)
                self.cpu.append(time.process_time() - c)

        redact = Redactor(secrets=["sk-bench-secret-0123456789abcdef"]).redact_text
        app = create_app(UiSettings(store=self.store, store_url=str(self.store.path),
                                    redact=redact))
        app.middlewares.insert(0, timing)
        client: TestClient[Any, Any] = TestClient(TestServer(app, host="127.0.0.1"))
        await client.start_server()
        return client


async def _get(client: TestClient[Any, Any], path: str) -> float:
    t0 = time.perf_counter()
    response = await client.get(path)
    await response.read()
    assert response.status == 200, (path, response.status)
    return time.perf_counter() - t0


async def _profile(client: TestClient[Any, Any], path: str) -> None:
    import cProfile
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    response = await client.get(path)
    await response.read()
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(15)


def _row(label: str, timed: _Timed, n: int, wall: list[float]) -> None:
    server, cpu = timed.times[-n:], timed.cpu[-n:]
    print(f"{label:<46} server median {statistics.median(server) * 1000:7.1f} ms  "
          f"min {min(server) * 1000:7.1f}  max {max(server) * 1000:7.1f}  CPU median "
          f"{statistics.median(cpu) * 1000:6.1f} min {min(cpu) * 1000:6.1f}  client "
          f"{statistics.median(wall) * 1000:7.1f} ms  (n={n})")


async def main(runs: int, steps: int, profile: bool = False) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        flow = Path(tmp) / "big.yaml"
        flow.write_text(_flow(steps))
        store = SqliteStore(Path(tmp) / "runs.db")
        async with store:
            t0 = time.perf_counter()
            await _fill(store, runs, steps, flow)
            print(f"filled {runs:,} runs + one of {steps:,} steps in "
                  f"{time.perf_counter() - t0:.1f}s")
            timed = _Timed(store)
            # A first view: each time a new UI process would see it (empty caches).
            for label, path in (("run list, first page (50), first view", "/api/runs"),
                                (f"run page, {steps:,} steps, first view", "/api/runs/big")):
                if profile and path == "/api/runs/big":
                    client = await timed.client()
                    await _profile(client, path)
                    await client.close()
                wall = []
                for _ in range(5):
                    client = await timed.client()
                    try:
                        wall.append(await _get(client, path))
                    finally:
                        await client.close()
                _row(label, timed, 5, wall)
            client = await timed.client()
            try:
                await _get(client, "/api/runs/big")
                for label, path, n in (
                        ("run list, first page (50), warm", "/api/runs", 30),
                        ("run list, page 100 (offset 4950)", "/api/runs?offset=4950", 5),
                        ("run list, status=failed", "/api/runs?status=failed", 30),
                        ("run list, batch=b7", "/api/runs?batch=b7", 30),
                        ("run list, id search", "/api/runs?q=0042", 30),
                        (f"run page, {steps:,} steps (warm)", "/api/runs/big", 10),
                        (f"a step opened (state after step {steps // 2})",
                         f"/api/runs/big/steps/s{steps // 2}", 10)):
                    wall = [await _get(client, path) for _ in range(n)]
                    _row(label, timed, n, wall)
            finally:
                await client.close()


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:] if a != "--profile"]
    asyncio.run(main(args[0] if args else 10_000, args[1] if len(args) > 1 else 1_000,
                     profile="--profile" in sys.argv))
