"""Calls per second at concurrency 200: raw aiohttp, `ProviderClient` and `Agent`.

    .venv/bin/python bench/bench_concurrency.py              # 3 interleaved rounds
    .venv/bin/python bench/bench_concurrency.py --rounds 1 --calls 1000

FakeOpenAIServer runs in its own process with 50 ms latency (bench/_fake_server.py), so
a call is mostly waiting and the client's own work decides how many fit in a second.
Each client runs in a fresh child process: 200 warm-up calls, then `--calls` calls by 200
concurrent workers. Reported per client, best of the rounds: calls/s, the client's CPU
per call, and the server's CPU per call read from /proc over the same span (a server
that used a whole core would be the limit, not the client):
  - aiohttp:  one session (connection limit 1000) posting pre-encoded JSON, json.loads;
  - provider: `ProviderClient.complete` over `AiohttpTransport`;
  - agent:    `Agent.from_env(...).arun_result`, reading the summary's status.
On a free machine the ceiling is 200 / 0.05 s = 4,000 calls/s for every client.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from bench_agent import PROMPT, env_for  # noqa: E402
from bench_transport import BODY, PY, start_server, stop_server  # noqa: E402

CLIENTS = ("aiohttp", "provider", "agent")
CONCURRENCY = 200
TICKS = os.sysconf("SC_CLK_TCK")


async def _drive(call: Callable[[], Awaitable[None]], calls: int) -> tuple[float, float]:
    """Seconds and client CPU seconds for `calls` calls by CONCURRENCY workers."""
    async def worker(count: int) -> None:
        for _ in range(count):
            await call()

    share = [calls // CONCURRENCY + (i < calls % CONCURRENCY) for i in range(CONCURRENCY)]
    await asyncio.gather(*(worker(1) for _ in range(CONCURRENCY)))  # warm-up: the pool
    cpu0, t0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker(n) for n in share))
    return time.perf_counter() - t0, time.process_time() - cpu0


async def child(name: str, url: str, calls: int) -> tuple[float, float]:
    if name == "aiohttp":
        import aiohttp

        payload = json.dumps(BODY).encode()
        headers = {"content-type": "application/json", "authorization": "Bearer sk"}
        async with aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=1000)) as session:

            async def raw() -> None:
                async with session.post(url + "/chat/completions", data=payload,
                                        headers=headers) as resp:
                    json.loads(await resp.read())

            return await _drive(raw, calls)
    if name == "provider":
        from agentloom.http import AiohttpTransport
        from agentloom.messages import Message, ModelRequest
        from agentloom.providers import get_protocol, vendor_endpoint
        from agentloom.routing import ProviderClient

        transport = AiohttpTransport()
        client = ProviderClient(vendor_endpoint("openai", api_key="sk", base_url=url),
                                get_protocol("openai"), transport)
        request = ModelRequest(model="gpt-4o-mini", messages=(Message.user(PROMPT),),
                               temperature=0)

        async def provider() -> None:
            await client.complete(request)

        try:
            return await _drive(provider, calls)
        finally:
            await transport.aclose()
    from agentloom import Agent

    async with Agent.from_env(env_for(url), tools=[], temperature=0) as agent:

        async def agent_call() -> None:
            result = await agent.arun_result(PROMPT)
            if not result.summary.status.succeeded:
                raise RuntimeError(f"agent run ended {result.summary.status}")

        return await _drive(agent_call, calls)


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def run_child(name: str, url: str, calls: int, server_pid: int) -> dict[str, float]:
    before = _cpu_ticks(server_pid)
    done = subprocess.run([PY, __file__, "--child", name, "--url", url, "--calls",
                           str(calls)], capture_output=True, text=True, check=True)
    server_cpu = (_cpu_ticks(server_pid) - before) / TICKS
    seconds, cpu = json.loads(done.stdout)
    # The server's figure spans the child's warm-up and start too: an upper bound.
    return {"calls_per_s": calls / seconds, "client_cpu_us": cpu / calls * 1e6,
            "server_cpu_us_max": server_cpu / (calls + CONCURRENCY) * 1e6}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--child")
    parser.add_argument("--url")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(child(args.child, args.url, args.calls))))
        return
    server, url = start_server(0.05)
    try:
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in CLIENTS}
        for _ in range(args.rounds):
            for name in CLIENTS:
                runs[name].append(run_child(name, url, args.calls, server.pid))
    finally:
        stop_server(server)
    best = {name: max(r, key=lambda x: x["calls_per_s"]) for name, r in runs.items()}
    floor = best["aiohttp"]["calls_per_s"]
    print(f"{args.calls} calls at concurrency {CONCURRENCY}, server latency 50 ms, "
          f"best of {args.rounds}")
    print(f"{'client':<10} {'calls/s':>8} {'× aiohttp':>10} {'client cpu µs':>14} "
          f"{'server cpu µs':>14}  all rounds, calls/s")
    for name, r in best.items():
        every = " ".join(f"{x['calls_per_s']:.0f}" for x in runs[name])
        print(f"{name:<10} {r['calls_per_s']:>8.0f} {r['calls_per_s'] / floor:>10.2f} "
              f"{r['client_cpu_us']:>14.0f} {r['server_cpu_us_max']:>14.0f}  {every}")


if __name__ == "__main__":
    main()
