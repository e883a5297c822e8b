"""Run FakeOpenAIServer in its own process for the benchmark (client and server must not
share one event loop or one GIL, or each would slow the other).

    python bench/_fake_server.py --latency 0.05 [--chunk-delay 0.002]

Prints the base URL on stdout, then serves until stdin closes.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from agentloom.testing._server import FakeReply
from agentloom.testing.fake_openai import FakeOpenAIServer

STREAM_TEXT = " ".join(f"w{i}" for i in range(50))


def responder(body: Any) -> FakeReply:
    if isinstance(body, dict) and body.get("stream"):
        return FakeReply(text=STREAM_TEXT, chunks=50)
    return FakeReply(text="Hello from the fake server.")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--chunk-delay", type=float, default=0.0)
    args = parser.parse_args()
    server = FakeOpenAIServer(latency=args.latency, chunk_delay=args.chunk_delay,
                              responder=responder)
    await server.start()
    # Requests are not kept: a long benchmark must not grow the server's memory.
    server.requests = _Discard()
    print(server.base_url, flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)
    await server.stop()


class _Discard(list):  # type: ignore[type-arg]
    def append(self, item: object) -> None:
        return None


if __name__ == "__main__":
    asyncio.run(main())
