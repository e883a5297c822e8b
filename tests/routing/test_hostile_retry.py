"""A 503 storm against a policy whose backoff grows fast. The wait before retry n is
`backoff_base * backoff_multiplier ** (n - 1)`, capped by `backoff_max`; the power itself
overflowed a float (OverflowError: Numerical result out of range) once it passed 1.8e308:
at the third retry with `backoff_multiplier: 1e200` (a profile takes any finite number),
at the 32nd of a step's `retry: {backoff_base: 1e10}`, at the 1025th with the defaults.
The call then died with that traceback instead of waiting `backoff_max` and ending as a
`CallFailed`. Real HTTP to a loopback fake server; time on a FakeClock."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator

import pytest

from agentloom.http import AiohttpTransport
from agentloom.messages import Message, ModelRequest
from agentloom.routing import CallFailed, RetryPolicy
from agentloom.routing.runtime import Runtime
from agentloom.testing import FakeClock
from agentloom.testing._server import FakeError
from agentloom.testing.fake_openai import FakeOpenAIServer


@pytest.fixture
async def server() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as fake:
        assert isinstance(fake, FakeOpenAIServer)
        yield fake


async def test_a_503_storm_under_a_steep_backoff_waits_the_cap_and_fails_clearly(
        server: FakeOpenAIServer) -> None:
    server.script(*(FakeError(status=503) for _ in range(5)))
    clock = FakeClock()
    transport = AiohttpTransport()
    runtime = Runtime(transport=transport, clock=clock)
    runtime.add_providers({"p": {"type": "openai", "base_url": server.openai_base_url}})
    policy = RetryPolicy(max_retries=4, backoff_multiplier=1e200, jitter=0)
    try:
        client = runtime.client(provider="p", model="gpt-4o-mini", retry=policy)
        request = ModelRequest(model="gpt-4o-mini", messages=(Message.user("hi"),))
        with pytest.raises(CallFailed) as info:
            await client.complete(request)
    finally:
        await runtime.aclose()
        await transport.aclose()
    assert info.value.status == 503
    assert len(server.requests) == 5  # the first try and every retry the policy allows
    assert clock.sleeps == [0.5, 30.0, 30.0, 30.0]


@pytest.mark.parametrize(("multiplier", "retry_number"), [
    (1e200, 3),
    (1e10, 40),          # what a step's `retry: {backoff_base: 1e10, max_retries: 100}` makes
    (2.0, 1100),         # the default growth, with many retries
    (2, 1100),           # a whole number: int ** int never overflows, its float() did
])
def test_backoff_past_any_float_is_the_cap(multiplier: float, retry_number: int) -> None:
    policy = RetryPolicy(max_retries=retry_number, backoff_multiplier=multiplier,
                         backoff_max=60.0, jitter=0)
    assert policy.backoff(retry_number) == 60.0
    assert policy.delay(retry_number) == 60.0  # the engine's step retries ask this way
    assert RetryPolicy(backoff_base=0, backoff_multiplier=multiplier,
                       jitter=0).backoff(retry_number) == 0.0


def test_a_nan_multiplier_is_refused() -> None:
    with pytest.raises(ValueError, match="backoff_multiplier"):
        RetryPolicy(backoff_multiplier=math.nan)
