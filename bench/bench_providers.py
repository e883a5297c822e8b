"""Per-call time through the whole stack (Runtime client: router, breaker, pricing,
provider encode/decode, transport) for the OpenAI and the Anthropic paths, each beside
raw aiohttp posting the same pre-encoded body to the same fake server (the floor).

The fake servers run in a separate process, so client and server share neither an event
loop nor a GIL. 300 sequential calls per path per round, rounds interleaved; the table
keeps each figure's best round (noise only ever makes a figure worse).

    .venv/bin/python bench/bench_providers.py            # 3 rounds, writes bench/PROVIDERS.md
    .venv/bin/python bench/bench_providers.py --rounds 1 --calls 100 --no-write
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PATHS = ("openai", "anthropic")
MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5"}


# --- the server process --------------------------------------------------------------------


async def serve() -> None:
    from agentloom.testing._server import FakeReply
    from agentloom.testing.fake_anthropic import FakeAnthropicServer
    from agentloom.testing.fake_openai import FakeOpenAIServer

    reply = FakeReply(text="Hello from the fake server.")
    servers = [FakeOpenAIServer(responder=lambda _b: reply),
               FakeAnthropicServer(responder=lambda _b: reply)]
    for s in servers:
        await s.start()
        s.requests = _Discard()  # a long benchmark must not grow the server's memory
    print(json.dumps({"openai": servers[0].base_url, "anthropic": servers[1].base_url}),
          flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    for s in servers:
        await s.stop()


class _Discard(list):  # type: ignore[type-arg]
    def append(self, item: object) -> None:
        return None


# --- the client side -----------------------------------------------------------------------


def _raw_request(path: str, base: str) -> tuple[str, bytes, dict[str, str]]:
    body: dict[str, Any]
    if path == "openai":
        body = {"model": MODELS[path], "messages": [{"role": "user", "content": "Say hello"}]}
        return (f"{base}/v1/chat/completions", json.dumps(body).encode(),
                {"content-type": "application/json", "authorization": "Bearer k"})
    body = {"model": MODELS[path], "max_tokens": 4096,
            "messages": [{"role": "user", "content": "Say hello"}]}
    return (f"{base}/v1/messages", json.dumps(body).encode(),
            {"content-type": "application/json", "x-api-key": "k",
             "anthropic-version": "2023-06-01"})


async def time_aiohttp(path: str, base: str, n: int) -> dict[str, float]:
    import aiohttp

    url, data, headers = _raw_request(path, base)
    async with aiohttp.ClientSession() as session:

        async def call() -> None:
            async with session.post(url, data=data, headers=headers) as resp:
                json.loads(await resp.read())

        return await _timed(call, n)


async def time_stack(path: str, base: str, n: int) -> dict[str, float]:
    from agentloom.messages import Message, ModelRequest
    from agentloom.routing.runtime import Runtime

    async with Runtime() as runtime:
        runtime.add_provider(path, {"base_url": base + ("/v1" if path == "openai" else ""),
                                    "api_key": "k"})
        client = runtime.client(model=MODELS[path], provider=path)
        request = ModelRequest(model=MODELS[path], messages=(Message.user("Say hello"),))

        async def call() -> None:
            response = await client.complete(request)
            assert response.text

        return await _timed(call, n)


async def _timed(call: Any, n: int) -> dict[str, float]:
    for _ in range(20):
        await call()
    times = []
    cpu0 = time.process_time()
    for _ in range(n):
        t0 = time.perf_counter()
        await call()
        times.append(time.perf_counter() - t0)
    cpu = (time.process_time() - cpu0) / n
    times.sort()
    return {"median_ms": statistics.median(times) * 1e3,
            "mean_ms": statistics.fmean(times) * 1e3,
            "p95_ms": times[int(0.95 * (len(times) - 1))] * 1e3,
            "cpu_us": cpu * 1e6}


def _best(rows: list[dict[str, float]]) -> dict[str, float]:
    return {k: min(r[k] for r in rows) for k in rows[0]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve())
        return
    proc = subprocess.Popen([sys.executable, __file__, "--serve"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert proc.stdout is not None
        urls = json.loads(proc.stdout.readline())
        results: dict[tuple[str, str], list[dict[str, float]]] = {}
        for _ in range(args.rounds):
            for path in PATHS:
                for kind, fn in (("aiohttp", time_aiohttp), ("agentloom", time_stack)):
                    row = asyncio.run(fn(path, urls[path], args.calls))
                    results.setdefault((path, kind), []).append(row)
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        proc.wait(timeout=10)
    best = {key: _best(rows) for key, rows in results.items()}
    lines = [
        "# Provider paths: OpenAI vs Anthropic through the whole stack",
        "",
        f"`bench/bench_providers.py`: {args.calls} sequential calls per path, 0 ms server "
        f"latency, fake servers in a separate process, best of {args.rounds} interleaved "
        f"rounds. Python {platform.python_version()}, {platform.machine()}.",
        "",
        "`agentloom` is `Runtime.client(model, provider).complete(request)`: router, "
        "breaker, budget/pricing, the provider's encoder and decoder, the shared aiohttp "
        "transport. `aiohttp` posts the same pre-encoded body and parses the JSON (the floor).",
        "",
        "| path | client | median ms | mean ms | p95 ms | client CPU µs/call | overhead "
        "vs floor (median) |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for path in PATHS:
        floor = best[(path, "aiohttp")]
        for kind in ("aiohttp", "agentloom"):
            b = best[(path, kind)]
            ratio = b["median_ms"] / floor["median_ms"]
            lines.append(f"| {path} | {kind} | {b['median_ms']:.3f} | {b['mean_ms']:.3f} | "
                         f"{b['p95_ms']:.3f} | {b['cpu_us']:.0f} | "
                         f"{'—' if kind == 'aiohttp' else f'{ratio:.2f}×'} |")
    oa, an = best[("openai", "agentloom")], best[("anthropic", "agentloom")]
    lines += ["", f"Anthropic path / OpenAI path (median, whole stack): "
              f"{an['median_ms'] / oa['median_ms']:.2f}×; overhead over each floor: "
              f"OpenAI {oa['median_ms'] - best[('openai', 'aiohttp')]['median_ms']:.3f} ms, "
              f"Anthropic {an['median_ms'] - best[('anthropic', 'aiohttp')]['median_ms']:.3f} ms "
              "per call.", ""]
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        (ROOT / "bench" / "PROVIDERS.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
