"""RunBudget: reservations stop a concurrent fan-out before it overshoots; unknown prices
fail closed before the first call."""

from __future__ import annotations

import asyncio
from decimal import Decimal

import pytest
from _routing_fakes import FakeClient, request

from agentloom.errors import BudgetExceeded, ConfigError
from agentloom.messages import Message, ModelRequest, Usage
from agentloom.routing import Candidate, Router, RunBudget, estimate_prompt_tokens
from agentloom.routing._budget import output_bound
from agentloom.testing import FakeClock


async def test_fifty_way_fan_out_stops_before_overshooting() -> None:
    # gpt-4o-mini: $0.15 in / $0.60 out per 1M. Worst case per call with max_tokens=1000
    # and a short prompt is a little over $0.0006; 20 of them fit in $0.0125.
    budget = RunBudget(max_cost_usd=Decimal("0.0125"))
    usage = Usage(input_tokens=10, output_tokens=1000, input_includes_cached=True)
    client = FakeClient("openai", usage=usage, delay=0.001)
    router = Router(
        [Candidate(provider="openai", model="gpt-4o-mini", client=client)],
        clock=FakeClock(),
        budget=budget,
    )

    async def one() -> str:
        try:
            await router.complete(request("x" * 40, max_tokens=1000))
        except BudgetExceeded as exc:
            assert exc.kind == "cost" and exc.limit == Decimal("0.0125")
            return "stopped"
        return "ran"

    outcomes = await asyncio.gather(*(one() for _ in range(50)))
    ran = outcomes.count("ran")
    assert 0 < ran < 50
    assert len(client.calls) == ran  # refused calls never reached the model
    assert budget.spent_usd <= budget.max_cost_usd  # never overshot
    assert budget.reserved_usd == 0  # every reservation settled


async def test_unpriced_model_with_cost_budget_fails_before_the_first_call() -> None:
    client = FakeClient("my_vllm")
    router = Router(
        [Candidate(provider="my_vllm", model="llama-70b", client=client)],
        clock=FakeClock(),
        budget=RunBudget(max_cost_usd=Decimal(1)),
    )
    with pytest.raises(ConfigError) as info:
        await router.complete(request())
    assert client.calls == []
    message = str(info.value)
    assert "llama-70b" in message and "price" in message and "pricing" in message


async def test_unpriced_model_without_cost_budget_runs_with_cost_none() -> None:
    client = FakeClient("my_vllm")
    router = Router(
        [Candidate(provider="my_vllm", model="llama-70b", client=client)],
        clock=FakeClock(),
        budget=RunBudget(max_tokens=10_000),
    )
    response = await router.complete(request())
    assert response.usage.cost_usd is None


async def test_token_budget() -> None:
    budget = RunBudget(max_tokens=2000)
    client = FakeClient("a", usage=Usage(input_tokens=100, output_tokens=400))
    router = Router(
        [Candidate(provider="a", model="m", client=client)], clock=FakeClock(), budget=budget
    )
    await router.complete(request(max_tokens=500))
    assert budget.spent_tokens == 500
    await router.complete(request(max_tokens=500))
    await router.complete(request(max_tokens=500))
    with pytest.raises(BudgetExceeded) as info:
        await router.complete(request(max_tokens=500))
    assert info.value.kind == "tokens"
    assert len(client.calls) == 3


async def test_failed_calls_release_their_reservation() -> None:
    from _routing_fakes import status_error

    from agentloom.routing import NO_RETRY, CallFailed

    budget = RunBudget(max_cost_usd=Decimal(1))
    client = FakeClient("openai", [status_error(401)])
    router = Router(
        [Candidate(provider="openai", model="gpt-4o", client=client)],
        clock=FakeClock(),
        budget=budget,
        retry=NO_RETRY,
    )
    with pytest.raises(CallFailed):
        await router.complete(request())
    assert budget.reserved_usd == 0 and budget.spent_usd == 0


def test_unknown_actual_cost_keeps_the_worst_case() -> None:
    budget = RunBudget(max_cost_usd=Decimal(1))
    r = budget.reserve(cost=Decimal("0.4"), tokens=10)
    budget.commit(r, cost=None, tokens=None)
    assert budget.spent_usd == Decimal("0.4") and budget.spent_tokens == 10


def test_commit_over_the_cap_is_recorded_and_check_raises() -> None:
    budget = RunBudget(max_cost_usd=Decimal("0.1"))
    r = budget.reserve(cost=Decimal("0.05"), tokens=None)
    budget.commit(r, cost=Decimal("0.2"), tokens=None)  # estimate was short
    with pytest.raises(BudgetExceeded):
        budget.check()
    with pytest.raises(BudgetExceeded):
        budget.reserve(cost=Decimal("0.0001"), tokens=None)


@pytest.mark.parametrize("bad", [-1, "-0.5", "abc", float("nan"), True])
def test_bad_budgets(bad: object) -> None:
    with pytest.raises(ConfigError):
        RunBudget(max_cost_usd=bad)  # type: ignore[arg-type]


def test_estimates() -> None:
    req = ModelRequest(model="m", messages=(Message.user("x" * 400),), max_tokens=50)
    assert 100 <= estimate_prompt_tokens(req) <= 120
    assert output_bound(req) == 50
    assert output_bound(ModelRequest(model="m", messages=())) == 4096
