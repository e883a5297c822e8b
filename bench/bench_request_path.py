"""CPU per call of each layer of the request path, in-process, no sockets.

    .venv/bin/python bench/bench_request_path.py [N]

A `MockTransport` answers every request with a canned OpenAI chat completion, so what is
timed is our own work: `ProviderClient.complete` (encode, status check, decode), a reused
`Router` (retry, breaker, pricing), a new `Runtime.client(...)` per call (as a workflow
step builds one) and `Agent.arun_result` on a router (the loop, observers, summary). CPU
time (`time.process_time`), best of 3 rounds of N calls: the least noisy figure on a
shared machine. Prints one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from agentloom import Agent
from agentloom.http import BufferedResponse, MockTransport
from agentloom.messages import Message, ModelRequest
from agentloom.providers import get_protocol, vendor_endpoint
from agentloom.routing import ProviderClient
from agentloom.routing.runtime import Runtime

BODY = json.dumps({
    "id": "x", "object": "chat.completion", "created": 0, "model": "gpt-4o-mini",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"},
                 "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
}).encode()
REQUEST = ModelRequest(model="gpt-4o-mini", messages=(Message.user("hi"),))


def _reply(request: Any) -> BufferedResponse:
    return BufferedResponse(status=200, headers={"content-type": "application/json"},
                            body=BODY)


async def measure(n: int) -> dict[str, float]:
    transport = MockTransport(_reply)
    endpoint = vendor_endpoint("openai", api_key="sk-test")
    provider = ProviderClient(endpoint, get_protocol("openai"), transport)
    runtime = Runtime(endpoints=[endpoint], transport=transport)
    router = runtime.client(model="gpt-4o-mini")
    agent = Agent(runtime.client(model="gpt-4o-mini"), model="gpt-4o-mini")
    cases: dict[str, Callable[[], Awaitable[Any]]] = {
        "provider": lambda: provider.complete(REQUEST),
        "router": lambda: router.complete(REQUEST),
        "runtime.client+call": lambda: runtime.client(model="gpt-4o-mini").complete(REQUEST),
        "agent(router)": lambda: agent.arun_result("hi"),
    }
    best: dict[str, float] = {}
    for _ in range(3):
        for name, make in cases.items():
            for _ in range(200):
                await make()
            start = time.process_time()
            for _ in range(n):
                await make()
            us = (time.process_time() - start) / n * 1e6
            best[name] = min(best.get(name, us), us)
    return {name: round(us, 2) for name, us in best.items()}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(measure(int(sys.argv[1]) if len(sys.argv) > 1 else 2000))))
