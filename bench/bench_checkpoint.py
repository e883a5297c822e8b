"""What a write-ahead checkpoint costs per step, and whether it grows with the run.

A chain of N instant llm_call steps runs without a store and with one; the difference,
divided by N, is the checkpoint cost per step, in CPU time (`time.process_time`: this
process, including the SQLite worker thread) and wall time. Each figure is the best of
`--repeat` runs, sizes interleaved so load drifts hit all of them alike.

    python bench/bench_checkpoint.py                      # 10, 100, 1000 steps, SQLite
    python bench/bench_checkpoint.py --sizes 100 --repeat 5
    python bench/bench_checkpoint.py --postgres            # also a throwaway PostgreSQL
    python bench/bench_checkpoint.py --memory              # also the in-memory store

`--postgres` starts a server the way the store tests do (tests/store/pg_server.py:
initdb + pg_ctl, fsync off), one fresh schema per run, and stops it at the end.
`--memory` adds the in-memory store: the engine's durable work (request hash, delta,
serialisation) without a database, so the rest of a backend's figure is its writes.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentloom.store import CheckpointStore, open_store
from agentloom.testing.scripted import FunctionModel
from agentloom.workflow import arun_workflow, load_workflow_text
from agentloom.workflow.durable.run import DurableRun

StoreOpener = Callable[[], Any]


class _Factory:
    default_model = "m"

    def __init__(self) -> None:
        self.model = FunctionModel(lambda request: "ok")

    def client(self, **_: Any) -> Any:
        return self.model


def _chain(n: int) -> str:
    lines = ["name: chain", "steps:"]
    for i in range(n):
        dep = f", depends_on: [s{i - 1}]" if i else ""
        lines.append(f"  - {{id: s{i}, type: llm_call, prompt: p{i}{dep}, output: o{i}}}")
    return "\n".join(lines) + "\n"


async def _once(wf: Any, store: CheckpointStore | None) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one run of `wf`."""
    d = None if store is None else DurableRun(store=store, run_id=uuid.uuid4().hex,
                                              workflow_hash="h")
    if store is not None:
        await store.list_runs(limit=1)  # open and migrate outside the timing
    c0, w0 = time.process_time(), time.perf_counter()
    result = await arun_workflow(wf, clients=_Factory(), durable=d)
    took = time.process_time() - c0, time.perf_counter() - w0
    assert result.ok, result.error
    if store is not None:
        await store.close()
    return took


async def _measure(sizes: list[int], repeat: int, backends: dict[str, StoreOpener]
                   ) -> dict[tuple[str, int], tuple[float, float]]:
    flows = {n: load_workflow_text(_chain(n)) for n in sizes}
    best: dict[tuple[str, int], tuple[float, float]] = {}
    for _ in range(repeat):
        for n in sizes:
            for name, opener in [("none", lambda: None), *backends.items()]:
                cpu, wall = await _once(flows[n], opener())
                old = best.get((name, n), (float("inf"), float("inf")))
                best[(name, n)] = (min(old[0], cpu), min(old[1], wall))
    return best


def _report(best: dict[tuple[str, int], tuple[float, float]], sizes: list[int],
            backends: list[str]) -> None:
    print("| store | steps | run CPU ms | CPU ms per step over none | run wall ms "
          "| wall ms per step over none |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name in ["none", *backends]:
        for n in sizes:
            cpu, wall = best[(name, n)]
            base_cpu, base_wall = best[("none", n)]
            extra = ("–", "–") if name == "none" else (
                f"{(cpu - base_cpu) / n * 1000:.3f}", f"{(wall - base_wall) / n * 1000:.3f}")
            print(f"| {name} | {n} | {cpu * 1000:.1f} | {extra[0]} | {wall * 1000:.1f} "
                  f"| {extra[1]} |")


def _postgres() -> tuple[Any, str]:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "store"))
    from pg_server import start_pg_server  # the store tests' throwaway server

    running = start_pg_server()
    return running, running.server.admin_dsn


async def _pg_schema(admin_dsn: str) -> str:
    import psycopg

    name = f"b_{uuid.uuid4().hex[:12]}"
    async with await psycopg.AsyncConnection.connect(admin_dsn, autocommit=True) as admin:
        await admin.execute(f'CREATE SCHEMA "{name}"')
    return f"{admin_dsn}?options=-csearch_path%3D{name}"


async def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10,100,1000", help="chain lengths (default 10,100,1000)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per size; the best counts")
    ap.add_argument("--postgres", action="store_true", help="also a throwaway PostgreSQL")
    ap.add_argument("--memory", action="store_true", help="also the in-memory store")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        backends: dict[str, StoreOpener] = {
            "sqlite": lambda: open_store(Path(tmp) / f"runs-{uuid.uuid4().hex}.db")}
        if args.memory:
            backends["memory"] = lambda: open_store("memory://")
        running = None
        try:
            if args.postgres:
                running, admin = _postgres()
                dsns = [await _pg_schema(admin) for _ in range(len(sizes) * args.repeat)]
                backends["postgres"] = lambda: open_store(dsns.pop())
            best = await _measure(sizes, args.repeat, backends)
        finally:
            if running is not None:
                running.stop()
    _report(best, sizes, list(backends))


if __name__ == "__main__":
    asyncio.run(main())
