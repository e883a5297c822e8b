"""What a write-ahead checkpoint costs per step: a chain of N instant llm_call steps run
with and without a SQLite run store (`python bench/bench_checkpoint.py [N]`)."""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from agentloom.store import open_store
from agentloom.testing.scripted import FunctionModel
from agentloom.workflow import arun_workflow, load_workflow_text
from agentloom.workflow.durable.run import DurableRun


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


async def _once(n: int, durable: bool, where: Path) -> float:
    wf = load_workflow_text(_chain(n))
    d = None
    if durable:
        store = open_store(where / f"runs-{time.monotonic_ns()}.db")
        d = DurableRun(store=store, run_id="b", workflow_hash="h")
    t0 = time.perf_counter()
    await arun_workflow(wf, clients=_Factory(), durable=d)
    took = time.perf_counter() - t0
    if d is not None:
        await d.store.close()
    return took


async def main(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        plain = min([await _once(n, False, Path(tmp)) for _ in range(3)])
        durable = min([await _once(n, True, Path(tmp)) for _ in range(3)])
    print(f"{n} steps: {plain * 1000:.1f} ms without checkpoints, {durable * 1000:.1f} ms "
          f"with SQLite checkpoints: {(durable - plain) / n * 1000:.2f} ms per step")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 100))
