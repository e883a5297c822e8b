"""Tool round-trip benchmark: one model call that asks for a tool, the tool, and the
answering call, through AgentLoom's stack versus two raw aiohttp calls.

    .venv/bin/python bench/bench_tools.py            # 300 round trips per client
    .venv/bin/python bench/bench_tools.py --quick    # 60
    .venv/bin/python bench/bench_tools.py --instructions   # callgrind counts per round trip

FakeOpenAIServer runs in its own process (latency 0): it answers a request with tools
and no tool result with a tool call, and anything else with text. Clients, one after
the other in this process, each timed per round trip (median and p90 in microseconds,
and the client's CPU time per round trip):
  - aiohttp: two POSTs on one session, JSON encode/decode, the tool called in between
    (the floor: what any client must at least do);
  - loop: `run_loop` over a ProviderClient with a ToolSet (the agent loop's path);
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


async def agent_loop_sync_tool(base: str) -> tuple[Callable[[], Awaitable[str]], Any]:
    return await agent_loop(base, weather_sync)


CLIENTS = {"aiohttp": raw_aiohttp, "loop": agent_loop, "workflow": workflow,
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


COUNTED = ("aiohttp", "loop", "workflow")
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions per round trip under callgrind")
    parser.add_argument("--clients", default=",".join(COUNTED),
                        help="with --instructions: which clients (comma-separated)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--repeat", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve())
        return
    if args.repeat:
        name, n, base = args.repeat
        asyncio.run(repeat(name, base, int(n)))
        return
    n = 60 if args.quick else 300
    proc = subprocess.Popen([sys.executable, __file__, "--serve"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stdout is not None and proc.stdin is not None
    base = proc.stdout.readline().strip().rstrip("/")
    base = base.removesuffix("/v1")
    try:
        if args.instructions:
            count_instructions(base, args.clients.split(","))
            return
        results = {name: asyncio.run(measure(name, base, n)) for name in CLIENTS}
    finally:
        proc.stdin.close()
        proc.wait(10)
    floor = results["aiohttp"]["median_us"]
    cpu_floor = results["aiohttp"]["cpu_us"]
    print(f"tool round trip (2 model calls + 1 tool), {n} sequential, server latency 0 ms; "
          f"Python {platform.python_version()}, {platform.machine()}")
    print(f"{'client':<10} {'median µs':>10} {'p90 µs':>10} {'× aiohttp':>10} "
          f"{'cpu µs':>8} {'cpu ×':>6}")
    for name, r in results.items():
        print(f"{name:<10} {r['median_us']:>10.0f} {r['p90_us']:>10.0f} "
              f"{r['median_us'] / floor:>10.2f} {r['cpu_us']:>8.0f} "
              f"{r['cpu_us'] / cpu_floor:>6.2f}")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
