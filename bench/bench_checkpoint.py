"""What a write-ahead checkpoint costs per step, and whether it grows with the run.

A chain of N instant llm_call steps runs without a store and with one; the difference,
divided by N, is the checkpoint cost per step, in CPU time (`time.process_time`: this
process, including the SQLite worker thread) and wall time. Each figure is the best of
`--repeat` runs, sizes interleaved so load drifts hit all of them alike.

    python bench/bench_checkpoint.py                      # 10, 100, 1000 steps, SQLite
    python bench/bench_checkpoint.py --sizes 100 --repeat 5
    python bench/bench_checkpoint.py --postgres            # also a throwaway PostgreSQL
    python bench/bench_checkpoint.py --memory              # also the in-memory store
    python bench/bench_checkpoint.py --instructions        # callgrind, per step

`--postgres` starts a server the way the store tests do (tests/store/pg_server.py:
initdb + pg_ctl, fsync off), one fresh schema per run, and stops it at the end.
`--memory` adds the in-memory store: the engine's durable work (request hash, delta,
serialisation) without a database, so the rest of a backend's figure is its writes.
`--instructions` counts instructions instead (callgrind, PYTHONHASHSEED=0; each run in
its own process): per step over no store, ((store at HIGH - none at HIGH) - (store at
LOW - none at LOW)) / (HIGH - LOW) steps (`--steps`, default 200,600), so the run's fixed
costs (imports, opening the store, the first checkpoint) cancel out.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
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


async def _child(n: int, backend: str, db: str) -> None:
    wf = load_workflow_text(_chain(n))
    store = None if backend == "none" else open_store(
        "memory://" if backend == "memory" else Path(db))
    await _once(wf, store)


def _count(n: int, backend: str, db: str) -> int:
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
         __file__, "--child", f"{n},{backend},{db}"],
        env={**os.environ, "PYTHONHASHSEED": "0"}, capture_output=True, text=True, check=True)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise SystemExit(f"no count from valgrind: {done.stderr[-300:]}")
    return int(found.group(1))


def _instructions(steps: str, backends: list[str]) -> None:
    low, high = (int(s) for s in steps.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        counts = {(b, n): _count(n, b, str(Path(tmp) / f"{b}-{n}.db"))
                  for b in ["none", *backends] for n in (low, high)}
    for b in backends:
        per = ((counts[(b, high)] - counts[("none", high)])
               - (counts[(b, low)] - counts[("none", low)])) / (high - low)
        print(f"{b}: {per / 1e3:.1f} k instructions per step over none "
              f"(steps {low} to {high})")


async def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10,100,1000", help="chain lengths (default 10,100,1000)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per size; the best counts")
    ap.add_argument("--postgres", action="store_true", help="also a throwaway PostgreSQL")
    ap.add_argument("--memory", action="store_true", help="also the in-memory store")
    ap.add_argument("--instructions", action="store_true",
                    help="instructions per step (callgrind) instead of time")
    ap.add_argument("--steps", default="200,600", help="LOW,HIGH for --instructions")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        n, backend, db = args.child.split(",", 2)
        await _child(int(n), backend, db)
        return
    if args.instructions:
        _instructions(args.steps, ["sqlite", *(["memory"] if args.memory else [])])
        return
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
