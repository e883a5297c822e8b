"""Whole-process cost: `agentloom --help`, and a one-step `agentloom run` against the fake
server, each from process start to exit, next to a bare aiohttp script making the same
call. Users feel these numbers every time they run the CLI.

    .venv/bin/python bench/bench_cli.py [--runs 15]

The fake server runs in its own process (bench/_fake_server.py). Each figure is the best
and the median wall time, and the least CPU time, over `--runs` fresh processes, the rows
interleaved run by run; the ratios are to the bare aiohttp script.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent

BARE_SCRIPT = """
import asyncio, json, sys
import aiohttp

async def main():
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Say hello."}]}
    async with aiohttp.ClientSession() as s:
        async with s.post(sys.argv[1] + "/v1/chat/completions", json=body,
                          headers={"Authorization": "Bearer k"}) as r:
            data = json.loads(await r.read())
    print(data["choices"][0]["message"]["content"])

asyncio.run(main())
"""

FLOW = """
name: one-step
steps:
  - id: greet
    type: llm_call
    model: gpt-4o-mini
    prompt: "Say hello."
    output: greeting
"""


def run_once(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system of the child) of one fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{cmd} failed: {done.stderr[-500:]}")
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def timed(rows: list[tuple[str, list[str]]], env: dict[str, str], runs: int
          ) -> dict[str, tuple[float, float, float]]:
    """Each row's best and median wall ms and its least CPU ms (the figure that moves
    least on a shared machine), the rows interleaved run by run (a, b, c, a, b, c, ...)
    so that a noisy spell falls on every row alike."""
    walls: dict[str, list[float]] = {name: [] for name, _ in rows}
    cpus: dict[str, list[float]] = {name: [] for name, _ in rows}
    for _ in range(runs):
        for name, cmd in rows:
            wall, cpu = run_once(cmd, env)
            walls[name].append(wall)
            cpus[name].append(cpu)
    return {name: (min(walls[name]) * 1000, statistics.median(walls[name]) * 1000,
                   min(cpus[name]) * 1000) for name, _ in rows}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / "_fake_server.py")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    assert server.stdout is not None
    base_url = server.stdout.readline().strip()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            flow = Path(tmp) / "one.yaml"
            flow.write_text(FLOW)
            bare = Path(tmp) / "bare.py"
            bare.write_text(BARE_SCRIPT)
            env = {
                "PATH": os.environ.get("PATH", ""),
                "HOME": tmp,
                "OPENAI_API_KEY": "k",
                "OPENAI_BASE_URL": base_url + "/v1",
                # The tree under test (a worktree, or a copy for an A/B), when one is set.
                "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
            }
            rows = [
                ("bare aiohttp script, one call", [sys.executable, str(bare), base_url]),
                ("agentloom run one-step.yaml", [str(BIN / "agentloom"), "run", str(flow),
                                                  "--no-checkpoint"]),
                ("agentloom run one-step.yaml (checkpointed)",
                 [str(BIN / "agentloom"), "run", str(flow)]),
                ("agentloom --help", [str(BIN / "agentloom"), "--help"]),
                ("python -c pass", [sys.executable, "-c", "pass"]),
            ]
            results = timed(rows, env, args.runs)
            floor = results[rows[0][0]]
            print(f"{'what':46} {'best ms':>8} {'median ms':>10} {'cpu ms':>8} "
                  f"{'best ×':>7} {'cpu ×':>6}")
            for name, (best, median, cpu) in results.items():
                print(f"{name:46} {best:8.1f} {median:10.1f} {cpu:8.1f} "
                      f"{best / floor[0]:7.2f} {cpu / floor[2]:6.2f}")
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(10)


if __name__ == "__main__":
    main()
