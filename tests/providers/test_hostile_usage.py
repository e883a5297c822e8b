"""A hostile or broken server's usage block: a token count that is not a count (negative,
text, a fraction, NaN, true/false, absurdly large) is read as unreported (None), in every
wire protocol, so it never lowers a budget's spending or crashes the pricing."""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator, Callable
from decimal import Decimal
from typing import Any

import pytest

from agentloom.http import AiohttpTransport
from agentloom.messages import Message, ModelRequest, Usage
from agentloom.providers import (
    anthropic,
    gemini,
    get_protocol,
    ollama,
    openai,
    openai_responses,
    vendor_endpoint,
)
from agentloom.routing import Candidate, ProviderClient, Router, RunBudget
from agentloom.testing import FakeClock
from agentloom.testing._server import FakeBadBody
from agentloom.testing.fake_openai import FakeOpenAIServer


def _openai(n: Any) -> Usage | None:
    return openai.decode_usage({
        "prompt_tokens": n, "completion_tokens": n,
        "prompt_tokens_details": {"cached_tokens": n, "cache_write_tokens": n},
        "completion_tokens_details": {"reasoning_tokens": n}})


def _responses(n: Any) -> Usage:
    return openai_responses.decode_usage({
        "input_tokens": n, "output_tokens": n,
        "input_tokens_details": {"cached_tokens": n, "cache_write_tokens": n},
        "output_tokens_details": {"reasoning_tokens": n}})


def _anthropic(n: Any) -> Usage:
    return anthropic.decode_usage({
        "input_tokens": n, "output_tokens": n, "cache_read_input_tokens": n,
        "cache_creation_input_tokens": n})


def _gemini(n: Any) -> Usage:
    return gemini.decode_usage({
        "promptTokenCount": n, "candidatesTokenCount": n, "thoughtsTokenCount": n,
        "toolUsePromptTokenCount": n, "cachedContentTokenCount": n})


def _ollama(n: Any) -> Usage:
    return ollama.decode_usage({"prompt_eval_count": n, "eval_count": n})


DECODERS: dict[str, Callable[[Any], Usage | None]] = {
    "openai": _openai, "responses": _responses, "anthropic": _anthropic,
    "gemini": _gemini, "ollama": _ollama,
}
COUNTS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
          "reasoning_tokens")

NOT_COUNTS = [-1, -50_000_000, "12", "", 1.5, math.nan, math.inf, -math.inf, True, False,
              10**30, [3], {"n": 3}]


@pytest.mark.parametrize("decoder", DECODERS)
@pytest.mark.parametrize("bad", NOT_COUNTS, ids=repr)
def test_a_token_count_that_is_not_a_count_is_unreported(decoder: str, bad: Any) -> None:
    usage = DECODERS[decoder](bad)
    assert usage is not None
    for name in COUNTS:
        assert getattr(usage, name) is None, (decoder, name, getattr(usage, name))


@pytest.mark.parametrize("decoder", DECODERS)
def test_real_counts_still_read(decoder: str) -> None:
    usage = DECODERS[decoder](7)
    assert usage is not None
    assert usage.input_tokens is not None and usage.input_tokens >= 7
    assert usage.output_tokens is not None and usage.output_tokens >= 7
    # A whole number written as a float (12.0) is the same count.
    floaty = DECODERS[decoder](7.0)
    assert floaty == usage and type(floaty.input_tokens) is int


@pytest.fixture
async def server() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as s:
        yield s  # type: ignore[misc]


@pytest.fixture
async def transport() -> AsyncIterator[AiohttpTransport]:
    t = AiohttpTransport()
    yield t
    await t.aclose()


def _reply(usage: dict[str, Any]) -> FakeBadBody:
    return FakeBadBody(body=json.dumps({
        "id": "r1", "model": "gpt-4o",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "hi"}}],
        "usage": usage}).encode())


async def test_a_negative_count_does_not_give_a_budget_back(
        server: FakeOpenAIServer, transport: AiohttpTransport) -> None:
    ep = vendor_endpoint("openai", api_key="sk", base_url=server.openai_base_url)
    client = ProviderClient(ep, get_protocol("openai"), transport)
    budget = RunBudget(max_cost_usd=Decimal(1), max_tokens=100_000)
    router = Router([Candidate(provider="openai", model="gpt-4o", client=client)],
                    clock=FakeClock(), budget=budget)
    request = ModelRequest(model="gpt-4o", messages=(Message.user("hi"),), max_tokens=10)

    server.script(_reply({"prompt_tokens": -50_000_000, "completion_tokens": 5}))
    response = await router.complete(request)
    assert response.usage.input_tokens is None and response.usage.output_tokens == 5
    assert budget.spent_tokens > 0  # the call's reserved bound, never a refund
    assert budget.spent_usd >= 0

    # Text where a count goes: unknown, not a TypeError out of the pricing.
    server.script(_reply({"prompt_tokens": "12", "completion_tokens": 5}))
    response = await router.complete(request)
    assert response.text == "hi" and response.usage.input_tokens is None
    assert response.usage.cost_usd is None
