"""Live GC-tracked objects per in-flight call, and collections per 200 calls, at concurrency 200.

    PYTHONPATH=$PWD .venv/bin/python bench/bench_live_objects.py aiohttp,provider,agent

200 calls are parked on the fake server (2 s latency) and `len(gc.get_objects())` is
compared with the idle count (after a full collection both times); then a gc callback
counts the collections of each generation during one more round of 200 calls.
"""

from __future__ import annotations

import asyncio
import gc
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_agent import env_for
from bench_transport import BODY, start_server, stop_server

N = 200


async def measure(call: Callable[[], Awaitable[None]]) -> tuple[float, list[int]]:
    for _ in range(2):  # the connection pool filled, every lazy import done
        await asyncio.gather(*(call() for _ in range(N)))
    gc.collect()
    idle = len(gc.get_objects())
    tasks = [asyncio.ensure_future(call()) for _ in range(N)]
    await asyncio.sleep(1.0)
    gc.collect()
    busy = len(gc.get_objects())
    await asyncio.gather(*tasks)
    counts = [0, 0, 0]

    def count(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            counts[info["generation"]] += 1

    gc.callbacks.append(count)
    await asyncio.gather(*(call() for _ in range(N)))
    gc.callbacks.remove(count)
    return (busy - idle) / N, counts


async def main(which: str, url: str) -> tuple[float, list[int]]:
    if which == "aiohttp":
        import aiohttp

        payload = json.dumps(BODY).encode()
        headers = {"content-type": "application/json", "authorization": "Bearer sk"}
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1000)) as s:

            async def raw() -> None:
                async with s.post(url + "/chat/completions", data=payload,
                                  headers=headers) as r:
                    json.loads(await r.read())

            return await measure(raw)
    if which == "provider":
        from agentloom.http import AiohttpTransport
        from agentloom.messages import Message, ModelRequest
        from agentloom.providers import get_protocol, vendor_endpoint
        from agentloom.routing import ProviderClient

        transport = AiohttpTransport()
        client = ProviderClient(vendor_endpoint("openai", api_key="sk", base_url=url),
                                get_protocol("openai"), transport)
        request = ModelRequest(model="gpt-4o-mini", messages=(Message.user("hi"),),
                               temperature=0)

        async def provider() -> None:
            await client.complete(request)

        try:
            return await measure(provider)
        finally:
            await transport.aclose()
    from agentloom import Agent

    async with Agent.from_env(env_for(url), tools=[], temperature=0) as agent:

        async def agent_call() -> None:
            assert (await agent.arun_result("hi")).summary.status.succeeded

        return await measure(agent_call)


if __name__ == "__main__":
    proc, base = start_server(2.0)
    try:
        for name in (sys.argv[1] if len(sys.argv) > 1 else "aiohttp,provider,agent").split(","):
            per, counts = asyncio.run(main(name, base))
            print(f"{name:9} live objects per in-flight call {per:6.1f}; "
                  f"collections per {N} calls gen0/1/2 {counts}")
    finally:
        stop_server(proc)
