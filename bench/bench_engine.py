"""Engine overhead per step: a 500-step chain and a 1000-step fan-out (one root, 999
steps depending on it) of `llm_call` steps answered by an instant in-process model, so
what is left is the engine itself (scheduling, templates, state writes, step summaries).

    .venv/bin/python bench/bench_engine.py [--runs 5]

Figures are CPU time (`time.process_time`), best of `--runs`, so other work on the
machine moves them less than wall time would; the load average is printed with them.
The workflow is loaded once and run `--runs` times; loading is not counted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from typing import Any

from agentloom.testing.scripted import FunctionModel
from agentloom.workflow import arun_workflow, load_workflow_text


class _Factory:
    default_model = "m"

    def __init__(self) -> None:
        self.model = FunctionModel(lambda request: "ok")

    def client(self, **_: Any) -> Any:
        return self.model


def chain(n: int) -> str:
    lines = ["name: chain", "steps:"]
    for i in range(n):
        dep = f", depends_on: [s{i - 1}]" if i else ""
        lines.append(f"  - {{id: s{i}, type: llm_call, prompt: p{i}{dep}, output: o{i}}}")
    return "\n".join(lines) + "\n"


def fan_out(n: int) -> str:
    lines = ["name: fan", "config: {max_concurrent_steps: 1024}", "steps:",
             "  - {id: root, type: llm_call, prompt: go, output: root}"]
    for i in range(n - 1):
        lines.append(f"  - {{id: s{i}, type: llm_call, prompt: p{i}, depends_on: [root], "
                     f"output: o{i}}}")
    return "\n".join(lines) + "\n"


async def per_step_us(text: str, n: int, runs: int) -> float:
    wf = load_workflow_text(text)
    best = float("inf")
    for _ in range(runs):
        t0 = time.process_time()
        result = await arun_workflow(wf, clients=_Factory())
        took = time.process_time() - t0
        if result.status != "success":
            raise SystemExit(f"run ended {result.status}")
        best = min(best, took)
    return best / n * 1e6


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    c = await per_step_us(chain(500), 500, args.runs)
    f = await per_step_us(fan_out(1000), 1000, args.runs)
    load = os.getloadavg()[0]
    print(f"engine per step, CPU best of {args.runs}: 500-step chain {c:.1f} µs, "
          f"1000-step fan-out {f:.1f} µs (load {load:.2f}; target <= 50 µs)")


if __name__ == "__main__":
    asyncio.run(main())
