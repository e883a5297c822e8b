"""Price table lookup and cost arithmetic."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from agentloom.errors import ConfigError
from agentloom.messages import Usage
from agentloom.pricing import Price, PriceTable, cost

M = 1_000_000


def test_every_vendor_family_has_prices() -> None:
    table = PriceTable.default()
    for provider, model in [
        ("openai", "gpt-4o"),
        ("openai", "gpt-4o-mini"),
        ("openai", "gpt-4.1-nano"),
        ("openai", "o3"),
        ("openai", "o4-mini"),
        ("openai", "gpt-5"),
        ("openai", "gpt-5-mini"),
        ("anthropic", "claude-sonnet-4-5"),
        ("anthropic", "claude-opus-4-1"),
        ("anthropic", "claude-3-5-haiku"),
        ("gemini", "gemini-2.5-pro"),
        ("gemini", "gemini-2.5-flash"),
        ("gemini", "gemini-2.0-flash"),
    ]:
        assert table.lookup(provider, model) is not None, model


def test_dated_names_take_the_longest_prefix() -> None:
    table = PriceTable.default()
    assert table.lookup("openai", "gpt-4o-2024-08-06") == table.lookup("openai", "gpt-4o")
    assert table.lookup("openai", "gpt-4o-mini-2024-07-18") == table.lookup("openai", "gpt-4o-mini")
    assert table.lookup("anthropic", "claude-sonnet-4-5-20250929") == table.lookup(
        "anthropic", "claude-sonnet-4-5"
    )
    assert table.lookup("gemini", "models/gemini-2.5-flash") == table.lookup(
        "gemini", "gemini-2.5-flash"
    )
    # A prefix must end at a separator: gpt-4o is not gpt-4, gpt-5.9 is not gpt-5.
    assert table.lookup("openai", "gpt-4o") != table.lookup("openai", "gpt-4")
    assert table.lookup("openai", "gpt-5.9") is None


def test_unknown_model_costs_none_never_zero() -> None:
    usage = Usage(input_tokens=10, output_tokens=10)
    assert cost(usage, provider="openai", model="my-finetune-xyz") is None
    assert cost(usage, provider="my_vllm", model="gpt-4o") is None  # provider-qualified


def test_local_and_ollama_are_explicitly_free() -> None:
    usage = Usage(input_tokens=1000, output_tokens=1000)
    assert cost(usage, provider="local", model="smollm2") == Decimal(0)
    assert cost(usage, provider="ollama", model="llama3.2:3b") == Decimal(0)


def test_incomplete_usage_costs_none() -> None:
    assert cost(Usage(output_tokens=5), provider="openai", model="gpt-4o") is None


def test_openai_cached_tokens_are_inside_input() -> None:
    usage = Usage(
        input_tokens=M, cache_read_tokens=M // 2, output_tokens=M, input_includes_cached=True
    )
    # gpt-4o: 0.5M at $2.50 + 0.5M at $1.25 + 1M at $10.00
    assert cost(usage, provider="openai", model="gpt-4o") == Decimal("11.875")


def test_anthropic_cache_read_and_write_are_apart_from_input() -> None:
    usage = Usage(
        input_tokens=M,
        cache_read_tokens=M,
        cache_write_tokens=M,
        output_tokens=M,
        input_includes_cached=False,
    )
    # sonnet 4.5: 3.00 + 0.30 + 3.75 + 15.00
    assert cost(usage, provider="anthropic", model="claude-sonnet-4-5") == Decimal("22.05")


def test_openai_reasoning_is_inside_output_and_not_billed_twice() -> None:
    usage = Usage(
        input_tokens=0, output_tokens=M, reasoning_tokens=M // 2, input_includes_cached=True
    )
    assert cost(usage, provider="openai", model="o3") == Decimal("8")


def test_gemini_thoughts_are_billed_at_output_once() -> None:
    # The Gemini decoder folds thoughtsTokenCount into output_tokens (reasoning_tokens
    # says how many were thoughts), so pricing must not add them a second time.
    usage = Usage(
        input_tokens=0, output_tokens=2 * M, reasoning_tokens=M, input_includes_cached=True
    )
    assert cost(usage, provider="gemini", model="gemini-2.5-flash") == Decimal("5")


def test_reasoning_reported_beside_the_output_can_be_added() -> None:
    usage = Usage(input_tokens=0, output_tokens=M, reasoning_tokens=M)
    assert cost(
        usage, provider="gemini", model="gemini-2.5-flash", reasoning_in_output=False
    ) == Decimal("5")


def test_missing_cache_prices_fall_back_to_input() -> None:
    price = Price(input=Decimal(2), output=Decimal(4))
    usage = Usage(
        input_tokens=M,
        cache_read_tokens=M,
        cache_write_tokens=M,
        output_tokens=0,
        input_includes_cached=False,
    )
    assert cost(usage, provider="x", model="y", price=price) == Decimal(6)


def test_overrides_from_mapping_and_file(tmp_path: Path) -> None:
    table = PriceTable.default().with_overrides(
        {"openai/ft:gpt-4o-mini:acme": {"input": 0.3, "output": 1.2}}
    )
    usage = Usage(input_tokens=M, output_tokens=M)
    assert cost(usage, provider="openai", model="ft:gpt-4o-mini:acme", table=table) == Decimal(
        "1.5"
    )
    assert cost(usage, provider="openai", model="gpt-4o", table=table) == Decimal("12.5")
    path = tmp_path / "prices.yaml"
    path.write_text("my_vllm:\n  llama-70b: {input: 0.5, output: 0.5}\n")
    ytable = PriceTable.from_file(path, parent=PriceTable.default())
    assert cost(usage, provider="my_vllm", model="llama-70b", table=ytable) == Decimal(1)
    jpath = tmp_path / "prices.json"
    jpath.write_text(json.dumps({"gpt-4o": {"input": 1, "output": 1}}))
    jtable = PriceTable.from_file(jpath, parent=PriceTable.default())
    assert cost(usage, provider="openai", model="gpt-4o", table=jtable) == Decimal(2)


@pytest.mark.parametrize(
    "bad",
    [
        {"openai": {"m": {"input": -1, "output": 1}}},
        {"openai": {"m": {"input": "x", "output": 1}}},
        {"openai": {"m": {"input": 1}}},
        {"openai": {"m": {"inptu": 1, "output": 1}}},
        {"openai": ["not", "a", "mapping"]},
    ],
)
def test_bad_price_data_is_a_config_error(bad: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        PriceTable.from_mapping(bad)


def test_missing_price_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read price file"):
        PriceTable.from_file(tmp_path / "nope.json")
