"""Run-budget rules a mutation run found untested: the prompt estimate part by part, every
cap exactly at and one unit past it, commits that keep the other unknown half, and the
snapshot."""

from __future__ import annotations

from decimal import Decimal

import pytest

from agentloom.errors import BudgetExceeded, ConfigError
from agentloom.messages import (
    ImagePart,
    Message,
    ModelRequest,
    ReasoningConfig,
    ResponseFormat,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
)
from agentloom.routing import RunBudget, estimate_prompt_tokens
from agentloom.routing._budget import output_bound


def tokens_of(*messages: Message, **kw: object) -> int:
    return estimate_prompt_tokens(ModelRequest(model="m", messages=messages, **kw))  # type: ignore[arg-type]


def test_each_message_costs_four_tokens_of_overhead() -> None:
    assert tokens_of() == 0
    assert tokens_of(Message.user("")) == 4
    assert tokens_of(Message.user(""), Message.user("")) == 8


def test_text_is_four_characters_a_token_rounded_up() -> None:
    assert tokens_of(Message.user("x" * 4)) == 5
    assert tokens_of(Message.user("x" * 5)) == 6


def test_tool_calls_results_tools_schemas_and_media_all_count() -> None:
    call = Message(role="assistant", parts=(ToolCallPart(id="1", name="abcd", arguments="efgh"),))
    assert tokens_of(call) == 4 + 2
    result = Message(role="tool", parts=(ToolResultPart(call_id="1", name="f", content="x" * 8),))
    assert tokens_of(result) == 4 + 2
    image = Message(role="user", parts=(TextPart(text=""), ImagePart(data=b"x")))
    assert tokens_of(image) == 4 + 1500
    tool = ToolSpec(name="ab", description="cd", parameters={})  # str({}) is "{}"
    assert tokens_of(tools=(tool,)) == 2
    schema = ResponseFormat(kind="json_schema", schema={"a": 1})  # "{'a': 1}": 8 chars
    assert tokens_of(response_format=schema) == 2
    assert tokens_of(response_format=ResponseFormat()) == 0


def test_the_output_bound() -> None:
    assert output_bound(ModelRequest(model="m", messages=(), max_tokens=50)) == 50
    assert output_bound(ModelRequest(model="m", messages=()), default=7) == 7
    thinking = ReasoningConfig(enabled=True, budget_tokens=2000)
    assert output_bound(ModelRequest(model="m", messages=(), max_tokens=100,
                                     reasoning=thinking)) == 2100
    assert output_bound(ModelRequest(model="m", messages=(), reasoning=thinking),
                        default=5000) == 5000


def test_a_cost_cap_admits_exactly_the_cap_and_not_a_cent_more() -> None:
    budget = RunBudget(max_cost_usd="1.00")
    first = budget.reserve(cost=Decimal("0.60"), tokens=None)
    with pytest.raises(BudgetExceeded) as info:
        budget.reserve(cost=Decimal("0.41"), tokens=None)
    assert info.value.kind == "cost" and info.value.actual == Decimal("1.01")
    second = budget.reserve(cost=Decimal("0.40"), tokens=None)
    assert budget.reserved_usd == Decimal("1.00")
    budget.commit(first, cost=Decimal("0.60"), tokens=None)
    budget.commit(second, cost=Decimal("0.40"), tokens=None)
    budget.check()  # spent exactly the cap: not exceeded
    assert budget.spent_usd == Decimal("1.00")


def test_a_token_cap_admits_exactly_the_cap_and_not_a_token_more() -> None:
    budget = RunBudget(max_tokens=100)
    with pytest.raises(BudgetExceeded) as info:
        budget.reserve(cost=None, tokens=101)
    assert info.value.kind == "tokens" and info.value.actual == 101
    r = budget.reserve(cost=None, tokens=100)
    assert budget.reserved_tokens == 100
    budget.commit(r, cost=None, tokens=100)
    budget.check()
    r = budget.reserve(cost=None, tokens=0)  # nothing more fits, but zero does
    budget.commit(r, cost=None, tokens=1)
    with pytest.raises(BudgetExceeded, match="token budget 100 exceeded: used 101"):
        budget.check()


def test_spent_one_past_the_cost_cap_fails_the_check() -> None:
    budget = RunBudget(max_cost_usd="0.5")
    r = budget.reserve(cost=Decimal("0.1"), tokens=None)
    budget.commit(r, cost=Decimal("0.5000001"), tokens=None)
    with pytest.raises(BudgetExceeded, match=r"cost budget \$0.5 exceeded"):
        budget.check()


def test_a_commit_keeps_the_reserved_half_that_is_unknown() -> None:
    budget = RunBudget()
    r = budget.reserve(cost=Decimal("0.3"), tokens=40)
    budget.commit(r, cost=Decimal("0.1"), tokens=None)
    assert (budget.spent_usd, budget.spent_tokens) == (Decimal("0.1"), 40)
    r = budget.reserve(cost=Decimal("0.3"), tokens=40)
    budget.commit(r, cost=None, tokens=5)
    assert (budget.spent_usd, budget.spent_tokens) == (Decimal("0.4"), 45)
    r = budget.reserve(cost=None, tokens=None)
    budget.commit(r, cost=None, tokens=None)
    assert (budget.spent_usd, budget.spent_tokens) == (Decimal("0.4"), 45)
    assert budget.reserved_usd == 0 and budget.reserved_tokens == 0


def test_release_frees_the_reservation_only_once() -> None:
    budget = RunBudget(max_tokens=10)
    r = budget.reserve(cost=None, tokens=10)
    budget.release(r)
    budget.release(r)
    assert budget.reserved_tokens == 0 and budget.spent_tokens == 0
    budget.reserve(cost=None, tokens=10)


def test_an_unpriced_call_under_a_cost_cap_is_refused() -> None:
    with pytest.raises(ConfigError, match="model 'mystery' at provider '\\?' has no price"):
        RunBudget(max_cost_usd=1).reserve(cost=None, tokens=1, model="mystery")
    RunBudget(max_tokens=5).reserve(cost=None, tokens=1)  # no cost cap: fine
    RunBudget(max_cost_usd=1).require_price("p", "m", priced=True)


def test_the_snapshot_names_every_figure() -> None:
    budget = RunBudget(max_cost_usd="2", max_tokens=9)
    budget.commit(budget.reserve(cost=Decimal("0.5"), tokens=3), cost=None, tokens=None)
    assert budget.snapshot() == {"max_cost_usd": Decimal("2"), "spent_usd": Decimal("0.5"),
                                 "max_tokens": 9, "spent_tokens": 3}


@pytest.mark.parametrize("good", [0, "0", Decimal("0.01"), 1.5])
def test_cost_caps_from_zero_up_are_accepted(good: object) -> None:
    assert RunBudget(max_cost_usd=good).max_cost_usd == Decimal(str(good))  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [float("inf"), "-0.01"])
def test_cost_caps_that_are_not_finite_or_negative(bad: object) -> None:
    with pytest.raises(ConfigError, match="cost budget must be"):
        RunBudget(max_cost_usd=bad)  # type: ignore[arg-type]


def test_token_caps_from_zero_up() -> None:
    assert RunBudget(max_tokens=0).max_tokens == 0
    with pytest.raises(ConfigError, match="token budget must be >= 0, got -1"):
        RunBudget(max_tokens=-1)
    with pytest.raises(ConfigError, match="token budget must be >= 0, got True"):
        RunBudget(max_tokens=True)


def test_thinking_without_max_tokens_bounds_the_output_by_the_budget_alone() -> None:
    thinking = ReasoningConfig(enabled=True, budget_tokens=2000)
    request = ModelRequest(model="m", messages=(), reasoning=thinking)
    assert output_bound(request, default=100) == 2000
