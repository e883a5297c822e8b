"""Tool round-trip benchmark: one model call that asks for a tool, the tool, and the
answering call, through AgentLoom's stack versus two raw aiohttp calls.

    .venv/bin/python bench/bench_tools.py            # 300 round trips per client
    .venv/bin/python bench/bench_tools.py --quick    # 60
    .venv/bin/python bench/bench_tools.py --instructions   # callgrind counts per round trip

FakeOpenAIServer runs in its own process (latency 0): it answers a request with tools
and no tool result with a tool call, and anything else with text. Each client runs in
a fresh child process, the clients interleaved over `--repeats` runs (3 by default),
each run timed per round trip (median and p90 in microseconds, and the child's CPU time
per round trip); the best median and the least CPU of a client's runs are reported. On
two or more cores the server is pinned to the first and every client to the second
(`--no-pin` leaves them free), as bench_agent.py does. The clients:
  - aiohttp: two POSTs on one session, JSON encode/decode, the tool called in between
    (the floor: what any client must at least do);
  - loop: `run_loop` over a ProviderClient with a ToolSet (the agent loop's path);
  - agent: `Agent.from_env(mapping, tools=[weather]).arun(prompt)`: what an application
    writes, the runtime's router and the Agent's run set-up included;
  - workflow: `arun_workflow` of a one-step llm_call file with the tool declared (load
    once; each run builds its context, tool set and request, and writes state);
  - loop-sync: `loop` with a plain `def` tool, which runs in a worker thread.
The tool is `async def` elsewhere, so the figures show the stack, not a thread hop.

`--instructions` counts instead of timing (wall and CPU time on a shared machine move
±20-40%): each client runs in a process of its own under `valgrind --tool=callgrind`
(PYTHONHASHSEED=0) at a low and a high number of round trips, and the figure is
(count at high - count at low) / (high - low): the instructions of one round trip, with
imports, set-up and warm-up cancelled out. The server's process is not counted. Needs
valgrind; about a minute per client.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from bench_agent import cpu_sets  # noqa: E402

FLOW = """\
name: bench-tools
config: {provider: openai, model: gpt-4o-mini}
steps:
  - id: ask
    type: llm_call
    prompt: What is the weather in Paris?
    tools: [weather]
"""
TOOL_SPEC = {"type": "function", "function": {
    "name": "weather", "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}


async def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def weather_sync(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


# --- the server process ------------------------------------------------------------------

async def serve() -> None:
    from agentloom.testing._server import FakeReply
    from agentloom.testing.fake_openai import FakeOpenAIServer

    def responder(body: Any) -> FakeReply:
        messages = body.get("messages", []) if isinstance(body, dict) else []
        if body.get("tools") and not any(m.get("role") == "tool" for m in messages):
            return FakeReply(tool_calls=[("weather", {"city": "Paris"})])
        return FakeReply(text="It is sunny in Paris.")

    server = FakeOpenAIServer(responder=responder)
    await server.start()
    server.requests = _Discard()
    print(server.base_url, flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    await server.stop()


class _Discard(list):  # type: ignore[type-arg]
    def append(self, item: object) -> None:
        return None


# --- the clients -------------------------------------------------------------------------

async def raw_aiohttp(base: str) -> tuple[Callable[[], Awaitable[str]], Any]:
    import aiohttp

    session = aiohttp.ClientSession()
    url = base.rstrip("/") + "/v1/chat/completions"
    headers = {"authorization": "Bearer sk-bench", "content-type": "application/json"}

    async def once() -> str:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Paris?"}]
        body = {"model": "gpt-4o-mini", "messages": messages, "tools": [TOOL_SPEC]}
        async with session.post(url, data=json.dumps(body), headers=headers) as r:
            first = json.loads(await r.read())
        message = first["choices"][0]["message"]
        messages.append(message)
        for call in message["tool_calls"]:
            result = await weather(**json.loads(call["function"]["arguments"]))
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
        async with session.post(url, data=json.dumps(body), headers=headers) as r:
            second = json.loads(await r.read())
        return str(second["choices"][0]["message"]["content"])

    return once, session.close


async def agent_loop(base: str, tool: Any = weather) -> tuple[Callable[[], Awaitable[str]], Any]:
    from agentloom.http import AiohttpTransport
    from agentloom.loop import run_loop
    from agentloom.messages import Message, ModelRequest
    from agentloom.providers import get_protocol, vendor_endpoint
    from agentloom.routing import ProviderClient
    from agentloom.tools import ToolSet

    transport = AiohttpTransport()
    client = ProviderClient(vendor_endpoint("openai", api_key="sk-bench", base_url=base + "/v1"),
                            get_protocol("openai"), transport)
    tools = ToolSet.of([tool])
    request = ModelRequest(model="gpt-4o-mini", messages=(Message.user("Weather in Paris?"),),
                           tools=tools.specs)

    async def once() -> str:
        return (await run_loop(client, request, tools=tools)).text

    return once, transport.aclose


async def workflow(base: str) -> tuple[Callable[[], Awaitable[str]], Any]:
    from agentloom.routing.runtime import Runtime
    from agentloom.tools import ToolRegistry
    from agentloom.workflow import arun_workflow, load_workflow

    wf = load_workflow(FLOW)
    runtime = Runtime.from_env({"OPENAI_API_KEY": "sk-bench", "OPENAI_BASE_URL": base + "/v1"})
    registry = ToolRegistry([weather])

    async def once() -> str:
        result = await arun_workflow(wf, clients=runtime, tools=registry)
        assert result.ok, result.error
        return result.steps["ask"].text or ""

    return once, runtime.aclose


async def agent(base: str) -> tuple[Callable[[], Awaitable[str]], Any]:
    from agentloom import Agent

    env = {"OPENAI_API_KEY": "sk-bench", "OPENAI_BASE_URL": base + "/v1",
           "AGENTLOOM_MODEL": "gpt-4o-mini"}
    # Entered on its first run, as an Agent used without `async with` is.
    bot = Agent.from_env(env, tools=[weather])

    async def once() -> str:
        return await bot.arun("Weather in Paris?")

    return once, bot.aclose


async def agent_loop_sync_tool(base: str) -> tuple[Callable[[], Awaitable[str]], Any]:
    return await agent_loop(base, weather_sync)


CLIENTS = {"aiohttp": raw_aiohttp, "loop": agent_loop, "agent": agent, "workflow": workflow,
           "loop-sync": agent_loop_sync_tool}


async def measure(name: str, base: str, n: int) -> dict[str, float]:
    once, close = await CLIENTS[name](base)
    try:
        for _ in range(max(10, n // 10)):  # warm up: connections, imports, caches
            assert "sunny" in await once()
        times = []
        cpu0 = time.process_time()
        for _ in range(n):
            t0 = time.perf_counter()
            await once()
            times.append((time.perf_counter() - t0) * 1e6)
        # CPU time: on a shared machine, wall time counts other processes too.
        cpu_us = (time.process_time() - cpu0) / n * 1e6
    finally:
        await close()
    times.sort()
    return {"median_us": statistics.median(times), "p90_us": times[int(len(times) * 0.9)],
            "mean_us": statistics.fmean(times), "cpu_us": cpu_us}


async def repeat(name: str, base: str, n: int) -> None:
    """Warm up, then `n` round trips, untimed: what `--instructions` counts."""
    once, close = await CLIENTS[name](base)
    try:
        for _ in range(20 + n):
            assert "sunny" in await once()
    finally:
        await close()


COUNTED = ("aiohttp", "loop", "agent", "workflow")
LOW, HIGH = 50, 250


def instructions(name: str, base: str, n: int) -> int:
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
         __file__, "--repeat", name, str(n), base],
        env={**os.environ, "PYTHONHASHSEED": "0"}, capture_output=True, text=True,
        check=True, cwd=ROOT)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise SystemExit(f"no count from valgrind: {done.stderr[-300:]}")
    return int(found.group(1))


def count_instructions(base: str, clients: list[str]) -> None:
    per: dict[str, float] = {}
    print(f"tool round trip, instructions per round trip: (count at {HIGH} - count at {LOW})"
          f" / {HIGH - LOW}; Python {platform.python_version()}, {platform.machine()}")
    for name in clients:
        low, high = instructions(name, base, LOW), instructions(name, base, HIGH)
        per[name] = (high - low) / (HIGH - LOW)
        ratio = f"{per[name] / per['aiohttp']:.2f}x" if "aiohttp" in per else ""
        print(f"{name:<10} {per[name] / 1e3:9.1f} k  {ratio}", flush=True)
    print(json.dumps(per))


def child(name: str, n: int, base: str) -> None:
    print(json.dumps(asyncio.run(measure(name, base, n))))


def run_child(name: str, n: int, base: str) -> dict[str, float]:
    out = subprocess.run([sys.executable, __file__, "--child", name, str(n), base],
                         stdout=subprocess.PIPE, text=True, cwd=ROOT, check=True)
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def start_server(server_cpus: set[int] | None, client_cpus: set[int] | None,
                 ) -> tuple[subprocess.Popen[str], str]:
    """The fake server in its own process (on its core, when pinned); this process, and
    so every client it starts, on the clients' core. Returns the server and its base."""
    if server_cpus is not None:
        os.sched_setaffinity(0, server_cpus)
    try:
        proc = subprocess.Popen([sys.executable, __file__, "--serve"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True, cwd=ROOT)
    finally:
        if client_cpus is not None:
            os.sched_setaffinity(0, client_cpus)
    assert proc.stdout is not None
    base = proc.stdout.readline().strip().rstrip("/")
    return proc, base.removesuffix("/v1")


def timed_runs(names: list[str], n: int, repeats: int, base: str
               ) -> dict[str, dict[str, Any]]:
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in names}
    # Interleaved (a, b, c, a, b, c, ...): a noisy spell falls on every client alike.
    for _ in range(repeats):
        for name in names:
            runs[name].append(run_child(name, n, base))
    results: dict[str, dict[str, Any]] = {}
    for name in names:
        best = min(runs[name], key=lambda r: r["median_us"])
        results[name] = {**best, "cpu_us": min(r["cpu_us"] for r in runs[name]),
                         "runs_cpu_us": [round(r["cpu_us"]) for r in runs[name]]}
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions per round trip under callgrind")
    parser.add_argument("--clients", default=None,
                        help="which clients (comma-separated); ratios need aiohttp (first, with "
                             "--instructions)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="timed runs of each client, interleaved (default 3)")
    parser.add_argument("--no-pin", action="store_true",
                        help="leave the server and the clients free to use any core")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--repeat", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve())
        return
    if args.repeat:
        name, count, base = args.repeat
        asyncio.run(repeat(name, base, int(count)))
        return
    if args.child:
        name, count, base = args.child
        child(name, int(count), base)
        return
    n, repeats = (60, 2) if args.quick else (300, args.repeats)
    names = args.clients.split(",") if args.clients else (
        list(COUNTED) if args.instructions else list(CLIENTS))
    pinned = not args.no_pin and not args.instructions
    server_cpus, client_cpus = cpu_sets(pin=pinned)
    proc, base = start_server(server_cpus, client_cpus)
    assert proc.stdin is not None
    try:
        if args.instructions:
            count_instructions(base, names)
            return
        results = timed_runs(names, n, repeats, base)
    finally:
        proc.stdin.close()
        proc.wait(10)
    floor = results.get("aiohttp")
    print(f"tool round trip (2 model calls + 1 tool), {n} sequential, server latency 0 ms, "
          f"best median and least CPU of {repeats} interleaved runs"
          f"{', pinned' if client_cpus is not None else ''}; "
          f"Python {platform.python_version()}, {platform.machine()}")
    print(f"{'client':<10} {'median µs':>10} {'p90 µs':>10} {'× aiohttp':>10} "
          f"{'cpu µs':>8} {'cpu ×':>6}")
    for name, r in results.items():
        wall = f"{r['median_us'] / floor['median_us']:.2f}" if floor else "-"
        cpu = f"{r['cpu_us'] / floor['cpu_us']:.2f}" if floor else "-"
        print(f"{name:<10} {r['median_us']:>10.0f} {r['p90_us']:>10.0f} {wall:>10} "
              f"{r['cpu_us']:>8.0f} {cpu:>6}")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
