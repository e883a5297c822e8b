"""Agent benchmark: what one `Agent.arun_result` call costs over raw aiohttp.

    .venv/bin/python bench/bench_agent.py             # 300 sequential calls, best of 3
    .venv/bin/python bench/bench_agent.py --quick     # 100 calls, best of 2
    .venv/bin/python bench/bench_agent.py --profile   # cProfile of the agent path
    .venv/bin/python bench/bench_agent.py --breakdown # loop/Agent cost without HTTP
    .venv/bin/python bench/bench_agent.py --ttft      # time to first token, agent.astream

FakeOpenAIServer runs in its own process (bench/_fake_server.py, latency 0). Each client
runs in a fresh child process, one after the other, against that server:
  - aiohttp:  one pooled session posting the chat body and parsing the JSON (the floor);
  - provider: `ProviderClient.complete` (encode, transport, decode, retries, breaker);
  - agent_direct: `Agent(provider_client).arun_result(prompt)`: the loop over the same
              ProviderClient, without the runtime's router (fallback, breaker, limiter);
  - agent_text: `Agent.from_env(mapping).arun(prompt)` with no tools: the call most
              applications make, router and loop included, its reply text checked; the
              run's summary is left unread, so it is never built;
  - agent:    `Agent.from_env(mapping).arun_result(prompt)` with no tools, and its
              summary read (`result.summary.status`): the whole path, router, loop,
              summary and observers included;
  - agent_sync: the same through the sync face (`run_result`, the portal thread).
`--breakdown` adds the in-process cost of the layers above HTTP, with an instant
in-memory model: `run_loop` bare, with its deadline, and `Agent.arun_result`.
The per-call figure is the median of 300 sequential calls after 30 warm-up calls; each
client runs 3 times (`--repeats`), the clients interleaved, and the best median is kept,
which filters out a noisy neighbour. CPU per call is the client process's CPU time
(user and system) over its timed calls, and the least of its runs is reported: on a
shared machine a run's CPU time only grows with what the neighbours do (cache misses,
a slower clock), so the least is the closest to the call's own cost, and every client is
read the same way. On a machine of two or more cores the fake server is pinned to the
first core and every client to the second (`--no-pin` to leave them free), so that the
two never share a core's caches or wait for each other's time slices.
`--ttft` streams the 50-chunk reply (2 ms between chunks, as bench_transport.py does) and
times the first text: raw aiohttp (the first SSE chunk with content) against
`async for event in agent.astream(prompt)` (the first `text_delta` event).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from bench_transport import BODY, PY, machine, start_server, stop_server  # noqa: E402

CLIENTS = ("aiohttp", "provider", "agent_direct", "agent_text", "agent", "agent_sync")
PROMPT = "hi"
REPLY_TEXT = "Hello from the fake server."
"""What bench/_fake_server.py answers a call that is not streamed."""
WARMUP = 30


def env_for(base_url: str) -> dict[str, str]:
    return {"OPENAI_API_KEY": "sk", "OPENAI_BASE_URL": base_url,
            "AGENTLOOM_MODEL": "gpt-4o-mini"}


Timing = tuple[list[float], float]
"""Seconds of each timed call, and the client's CPU seconds per call over them."""


async def _timed(call: Any, n: int) -> Timing:
    for _ in range(WARMUP):
        await call()
    times = []
    cpu0 = time.process_time()
    for _ in range(n):
        t = time.perf_counter()
        await call()
        times.append(time.perf_counter() - t)
    return times, (time.process_time() - cpu0) / n


async def run_aiohttp(base_url: str, n: int) -> Timing:
    import aiohttp

    url = base_url + "/chat/completions"
    payload = json.dumps(BODY).encode()
    headers = {"content-type": "application/json", "authorization": "Bearer sk"}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1000)) as session:

        async def call() -> None:
            async with session.post(url, data=payload, headers=headers) as resp:
                json.loads(await resp.read())

        return await _timed(call, n)


async def run_provider(base_url: str, n: int) -> Timing:
    from agentloom.http import AiohttpTransport
    from agentloom.messages import Message, ModelRequest
    from agentloom.providers import get_protocol, vendor_endpoint
    from agentloom.routing import ProviderClient

    transport = AiohttpTransport()
    client = ProviderClient(vendor_endpoint("openai", api_key="sk", base_url=base_url),
                            get_protocol("openai"), transport)
    request = ModelRequest(model="gpt-4o-mini", messages=(Message.user(PROMPT),), temperature=0)

    async def call() -> None:
        await client.complete(request)

    try:
        return await _timed(call, n)
    finally:
        await transport.aclose()


async def run_agent_direct(base_url: str, n: int) -> Timing:
    from agentloom import Agent
    from agentloom.http import AiohttpTransport
    from agentloom.providers import get_protocol, vendor_endpoint
    from agentloom.routing import ProviderClient

    transport = AiohttpTransport()
    client = ProviderClient(vendor_endpoint("openai", api_key="sk", base_url=base_url),
                            get_protocol("openai"), transport)
    agent = Agent(client, model="gpt-4o-mini", temperature=0)

    async def call() -> None:
        await agent.arun_result(PROMPT)

    try:
        return await _timed(call, n)
    finally:
        await transport.aclose()


async def run_agent_text(base_url: str, n: int) -> Timing:
    from agentloom import Agent

    async with Agent.from_env(env_for(base_url), tools=[], temperature=0) as agent:

        async def call() -> None:
            text = await agent.arun(PROMPT)
            if text != REPLY_TEXT:
                raise RuntimeError(f"agent run answered {text!r}")

        return await _timed(call, n)


async def run_agent(base_url: str, n: int) -> Timing:
    from agentloom import Agent

    async with Agent.from_env(env_for(base_url), tools=[], temperature=0) as agent:

        async def call() -> None:
            result = await agent.arun_result(PROMPT)
            if not result.summary.status.succeeded:
                raise RuntimeError(f"agent run ended {result.summary.status}")

        return await _timed(call, n)


def run_agent_sync(base_url: str, n: int) -> Timing:
    from agentloom import Agent

    with Agent.from_env(env_for(base_url), tools=[], temperature=0) as agent:
        for _ in range(WARMUP):
            agent.run_result(PROMPT)
        times = []
        cpu0 = time.process_time()
        for _ in range(n):
            t = time.perf_counter()
            agent.run_result(PROMPT)
            times.append(time.perf_counter() - t)
        # The portal thread's CPU is in this process's time too.
        return times, (time.process_time() - cpu0) / n


TTFT_CLIENTS = ("ttft_aiohttp", "ttft_agent")


async def _ttft_times(first_text: Any, n: int) -> Timing:
    for _ in range(5):
        await first_text()
    times = []
    cpu0 = time.process_time()
    for _ in range(n):
        times.append(await first_text())
    return times, (time.process_time() - cpu0) / n


async def run_ttft_aiohttp(base_url: str, n: int) -> Timing:
    import re

    import aiohttp

    first_content = re.compile(rb'"content": ?"[^"]')
    url = base_url + "/chat/completions"
    payload = json.dumps({**BODY, "stream": True,
                          "stream_options": {"include_usage": True}}).encode()
    headers = {"content-type": "application/json", "authorization": "Bearer sk"}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1000)) as session:

        async def first_text() -> float:
            start = time.perf_counter()
            first = None
            async with session.post(url, data=payload, headers=headers) as resp:
                async for chunk in resp.content.iter_any():
                    if first is None and first_content.search(chunk):
                        first = time.perf_counter() - start
            assert first is not None
            return first

        return await _ttft_times(first_text, n)


async def run_ttft_agent(base_url: str, n: int) -> Timing:
    from agentloom import Agent

    async with Agent.from_env(env_for(base_url), tools=[], temperature=0) as agent:

        async def first_text() -> float:
            start = time.perf_counter()
            first = None
            async for event in agent.astream(PROMPT):
                if first is None and event.kind == "text_delta":
                    first = time.perf_counter() - start
            assert first is not None
            return first

        return await _ttft_times(first_text, n)


def breakdown(n: int = 3000) -> dict[str, float]:
    """CPU microseconds per call of each layer over an instant model, best of 3."""
    import asyncio

    from agentloom import Agent
    from agentloom.loop._loop import run_loop
    from agentloom.loop._options import LoopOptions
    from agentloom.messages import Message, ModelRequest, ModelResponse, TextPart, Usage

    reply = ModelResponse(parts=(TextPart(text="hi"),), usage=Usage(input_tokens=1,
                          output_tokens=1), model="gpt-4o-mini", provider="openai",
                          finish_reason="stop")

    class Instant:
        model = "gpt-4o-mini"

        async def complete(self, request: Any, **_: Any) -> ModelResponse:
            return reply

    request = ModelRequest(model="gpt-4o-mini", messages=(Message.user(PROMPT),))
    bare = LoopOptions(wrap_errors=True, max_iterations=20)
    timed_out = LoopOptions(wrap_errors=True, max_iterations=20, deadline_seconds=600)
    agent = Agent(Instant())
    agent_nd = Agent(Instant(), deadline_seconds=None)
    cases: dict[str, Any] = {
        "model call alone": lambda: Instant().complete(request),
        "run_loop, no deadline": lambda: run_loop(Instant(), request, options=bare),
        "run_loop, deadline": lambda: run_loop(Instant(), request, options=timed_out),
        "Agent.arun_result, no deadline": lambda: agent_nd.arun_result(PROMPT),
        "Agent.arun_result (default)": lambda: agent.arun_result(PROMPT),
    }

    async def go() -> dict[str, float]:
        out: dict[str, float] = {}
        for _ in range(3):
            for name, make in cases.items():
                for _ in range(200):
                    await make()
                # CPU time: on a shared machine, wall time counts other processes too.
                t = time.process_time()
                for _ in range(n):
                    await make()
                us = (time.process_time() - t) / n * 1e6
                out[name] = min(out.get(name, us), us)
        return out

    return asyncio.run(go())


def child(name: str, base_url: str, n: int, profile: bool) -> None:
    import asyncio

    def go() -> Timing:
        if name == "agent_sync":
            return run_agent_sync(base_url, n)
        runner = {"aiohttp": run_aiohttp, "provider": run_provider,
                  "agent_direct": run_agent_direct, "agent_text": run_agent_text,
                  "agent": run_agent,
                  "ttft_aiohttp": run_ttft_aiohttp, "ttft_agent": run_ttft_agent}[name]
        return asyncio.run(runner(base_url, n))

    if profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        times, cpu = prof.runcall(go)
        stats = pstats.Stats(prof, stream=sys.stderr)
        stats.sort_stats("cumulative").print_stats(45)
        stats.sort_stats("tottime").print_stats(30)
    else:
        times, cpu = go()
    print(json.dumps({"median_us": statistics.median(times) * 1e6,
                      "mean_us": statistics.fmean(times) * 1e6,
                      "cpu_us_per_call": cpu * 1e6}))


def cpu_sets(*, pin: bool) -> tuple[set[int] | None, set[int] | None]:
    """The cores for the fake server and for the clients: the first core and the next
    one this process may use, or (None, None) to leave both free (one core, or no pin)."""
    if not pin or not hasattr(os, "sched_getaffinity"):
        return None, None
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        return None, None
    return {cores[0]}, {cores[1]}


def start_pinned(server_cpus: set[int] | None, client_cpus: set[int] | None,
                 chunk_delay: float) -> tuple[subprocess.Popen[str], str]:
    """The fake server on its core; this process, and so every client it starts, on
    the clients' core (children inherit the affinity)."""
    if server_cpus is None or client_cpus is None:
        return start_server(0.0, chunk_delay)
    os.sched_setaffinity(0, server_cpus)
    try:
        started = start_server(0.0, chunk_delay)
    finally:
        os.sched_setaffinity(0, client_cpus)
    return started


def run_child(name: str, base_url: str, n: int, profile: bool = False) -> dict[str, Any]:
    cmd = [PY, __file__, "--child", name, "--url", base_url, "--n", str(n)]
    if profile:
        cmd.append("--profile")
    # With --profile the stats go to stderr, which is left on the terminal.
    out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, cwd=ROOT, check=True)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--profile", action="store_true",
                        help="cProfile one run of the agent client (stats on stderr)")
    parser.add_argument("--breakdown", action="store_true",
                        help="also time the layers above HTTP in-process")
    parser.add_argument("--ttft", action="store_true",
                        help="time to first token: raw aiohttp vs agent.astream")
    parser.add_argument("--clients", default=None)
    parser.add_argument("--child")
    parser.add_argument("--url")
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs of each client, interleaved (default 3)")
    parser.add_argument("--no-pin", action="store_true",
                        help="leave the server and the clients free to use any core")
    args = parser.parse_args()
    if args.child == "breakdown":
        print(json.dumps(breakdown()))
        return
    if args.child:
        child(args.child, args.url, args.n, args.profile)
        return

    n, repeats = (100, 2) if args.quick else (300, args.repeats)
    if args.ttft:
        n = 50 if args.quick else 100
    server_cpus, client_cpus = cpu_sets(pin=not args.no_pin)
    free_cpus = os.sched_getaffinity(0) if client_cpus is not None else None
    proc, url = start_pinned(server_cpus, client_cpus, 0.002 if args.ttft else 0.0)
    base_url = url + "/v1"
    try:
        if args.profile:
            run_child("agent", base_url, n, profile=True)
            return
        names = (args.clients.split(",") if args.clients
                 else list(TTFT_CLIENTS if args.ttft else CLIENTS))
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
        # Interleaved (a, b, c, a, b, c, ...) so that a noisy spell on a shared machine
        # does not fall on one client's runs only.
        for _ in range(repeats):
            for name in names:
                runs[name].append(run_child(name, base_url, n))
        results: dict[str, dict[str, Any]] = {}
        for name in names:
            best = min(runs[name], key=lambda r: float(r["median_us"]))
            results[name] = {
                **best,
                "cpu_us_per_call": min(float(r["cpu_us_per_call"]) for r in runs[name]),
                "runs_median_us": [round(r["median_us"]) for r in runs[name]],
                "runs_cpu_us": [round(r["cpu_us_per_call"]) for r in runs[name]],
            }
    finally:
        stop_server(proc)
        if free_cpus is not None:
            os.sched_setaffinity(0, free_cpus)  # the in-process breakdown below runs free
    report(results, n, repeats, "ttft_aiohttp" if args.ttft else "aiohttp")
    if args.breakdown:
        out = subprocess.run([PY, __file__, "--child", "breakdown"], stdout=subprocess.PIPE,
                             text=True, cwd=ROOT, check=True)
        print("\nin-process, instant model (CPU us per call, best of 3):")
        for name, us in json.loads(out.stdout.strip().splitlines()[-1]).items():
            print(f"  {name:<34}{us:>7.1f}")


def report(results: dict[str, dict[str, Any]], n: int, repeats: int,
           floor_name: str = "aiohttp") -> None:
    print(f"{time.strftime('%Y-%m-%d')}  {machine()}")
    print(f"{n} sequential calls after warm-up, best median (and least CPU) of {repeats} "
          "runs\n")
    floor = results.get(floor_name, {})
    print(f"{'client':<14}{'median us':>11}{'mean us':>10}{'cpu us':>9}"
          f"{'median/aiohttp':>16}{'cpu/aiohttp':>13}")
    for name, r in results.items():
        ratio = f"{r['median_us'] / floor['median_us']:.2f}x" if floor else "-"
        cpu = f"{r['cpu_us_per_call'] / floor['cpu_us_per_call']:.2f}x" if floor else "-"
        print(f"{name:<14}{r['median_us']:>11.0f}{r['mean_us']:>10.0f}"
              f"{r['cpu_us_per_call']:>9.0f}{ratio:>16}{cpu:>13}")
    print()
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
