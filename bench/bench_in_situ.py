"""What a piece of the Agent call costs where it runs: between real HTTP calls, its code
and data cold, against the same piece run again at once and in a tight loop.

    .venv/bin/python bench/bench_in_situ.py            # 1,000 calls per piece
    .venv/bin/python bench/bench_in_situ.py --n 3000 --pieces summary,started_at

Each piece runs in its own child process (the fake server pinned to the first core, the
child to the second, as bench_agent.py does): `Agent.from_env(...).arun_result(prompt)`
over HTTP, then, once per call, the piece timed by the thread's CPU clock. `cold` is the
piece right after the call; `again` the same piece once more straight after it (what the
call left in the caches helps it); `hot` the piece in a `timeit` loop. The cost of
reading the clock itself (two reads back to back) is taken off each figure.

Why: an instruction count or a hot loop prices a piece by its instructions, but between
two calls the kernel's and aiohttp's work evict it from the caches, so a piece that
touches code nothing else runs (the datetime or decimal C code, a model class's
machinery) costs several times its hot figure in a real call. The reply and body pieces
price the wire modules' JSON against the standard library's where it runs; the forty
functions, called once each or the first of them forty times, tell whether a call's cold
cost grows with the number of distinct Python functions it runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from bench_agent import PROMPT, WARMUP, cpu_sets, env_for, start_pinned  # noqa: E402
from bench_transport import PY, machine, stop_server  # noqa: E402

PIECES = ("nothing", "summary", "summary_build", "started_at", "conversation_id",
          "cost_to_float", "summary_fields_set", "summary_values_copy", "running_loop",
          "reply_json_loads", "reply_load_body", "body_json_dumps", "body_dump_body",
          "distinct_functions", "one_function")

# A chat completion's reply and request body of the size the benchmark's call has.
_REPLY = json.dumps({
    "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello there."},
                 "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 9, "completion_tokens": 7, "total_tokens": 16}}).encode()
_BODY = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}],
         "temperature": 0}


def _forty_functions() -> list[Callable[[int], int]]:
    """Forty small functions, each its own code object (`distinct_functions` calls each
    once, `one_function` the first forty times: what a distinct function costs cold)."""
    namespace: dict[str, Any] = {}
    exec("\n".join(f"def f{i}(x):\n    return (x + {i}) * 2 - {i}" for i in range(40)),
         namespace)
    return [namespace[f"f{i}"] for i in range(40)]


_FORTY = _forty_functions()


def _piece(name: str, result: Any) -> Callable[[], object]:
    """The piece `name` for one call's `result` (an `arun_result` value)."""
    # The record the result reads its summary from, and what it was made of.
    record = result._summary
    collector, info = record._collector, record.info
    if name == "nothing":
        return lambda: None
    if name == "summary":  # what `result.summary.status` costs the first time
        return lambda: collector.build_summary(record).status
    if name == "summary_build":
        return lambda: collector.build_summary(record)
    if name == "started_at":  # the summary's datetime, made on first read
        return lambda: info.started_at
    if name == "conversation_id":
        return lambda: info.conversation_id
    if name == "cost_to_float":  # the summary's `estimated_cost_usd`
        cost = collector.estimated_cost
        return lambda: float(cost)
    if name in ("summary_fields_set", "summary_values_copy"):
        from agentloom.loop import summary
        if name == "summary_fields_set":  # the set `as_validated` hands the model
            return lambda: set(summary.FIELDS_WITHOUT_ERROR)
        return summary.NO_VALUES.copy  # the dict that becomes the model's `__dict__`
    if name == "running_loop":  # a getpid system call on Python 3.11
        return asyncio.get_running_loop
    if name in ("reply_json_loads", "reply_load_body"):  # what parsing the reply costs
        from agentloom.providers._json import load_body
        parse = json.loads if name == "reply_json_loads" else load_body
        return lambda: parse(_REPLY)
    if name == "body_json_dumps":  # writing the request body
        return lambda: json.dumps(_BODY, ensure_ascii=False, separators=(",", ":")).encode()
    if name == "body_dump_body":
        from agentloom.providers._json import dump_body
        return lambda: dump_body(_BODY)
    if name in ("distinct_functions", "one_function"):
        functions = _FORTY if name == "distinct_functions" else [_FORTY[0]] * 40

        def call_each() -> None:
            for f in functions:
                f(1)
        return call_each
    raise SystemExit(f"unknown piece {name!r}; pieces: {', '.join(PIECES)}")


async def _measure(name: str, base_url: str, n: int) -> dict[str, float]:
    from agentloom import Agent

    clock = time.thread_time_ns
    cold = again = probe = 0
    async with Agent.from_env(env_for(base_url), tools=[], temperature=0) as agent:
        for i in range(WARMUP + n):
            result = await agent.arun_result(PROMPT)
            piece = _piece(name, result)
            t0 = clock()
            piece()
            t1 = clock()
            piece()
            t2 = clock()
            t3 = clock()
            if i >= WARMUP:
                cold += t1 - t0
                again += t2 - t1
                probe += t3 - t2
        hot_piece = _piece(name, await agent.arun_result(PROMPT))
        hot = min(timeit.repeat(hot_piece, number=20_000, repeat=5)) / 20_000
    return {"cold_us": (cold - probe) / n / 1e3, "again_us": (again - probe) / n / 1e3,
            "hot_us": hot * 1e6}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1000, help="calls per piece")
    parser.add_argument("--pieces", default=",".join(PIECES))
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        name, url = args.child
        print(json.dumps(asyncio.run(_measure(name, url, args.n))))
        return
    server_cpus, client_cpus = cpu_sets(pin=True)
    proc, url = start_pinned(server_cpus, client_cpus, 0.0)
    try:
        rows = {}
        for name in args.pieces.split(","):
            out = subprocess.run([PY, __file__, "--child", name, url + "/v1", "--n",
                                  str(args.n)], stdout=subprocess.PIPE, text=True,
                                 cwd=ROOT, check=True)
            rows[name] = json.loads(out.stdout.strip().splitlines()[-1])
    finally:
        stop_server(proc)
    print(f"{time.strftime('%Y-%m-%d')}  {machine()}")
    print(f"CPU us per piece after each of {args.n} Agent calls over HTTP\n")
    print(f"{'piece':<18}{'cold':>8}{'again':>8}{'hot':>8}{'cold/hot':>10}")
    for name, r in rows.items():
        ratio = f"{r['cold_us'] / r['hot_us']:.1f}x" if r["hot_us"] > 0.05 else "-"
        print(f"{name:<18}{r['cold_us']:>8.2f}{r['again_us']:>8.2f}{r['hot_us']:>8.2f}"
              f"{ratio:>10}")
    print()
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
