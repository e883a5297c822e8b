"""`Rates.cost` gives what `price_usage` gives: the same Decimal, digit and exponent."""

from __future__ import annotations

import random
from decimal import Decimal, InvalidOperation, localcontext

import pytest

from agentloom.messages import Usage
from agentloom.pricing import Price, PriceTable, Rates, price_usage


def _same(a: Decimal | None, b: Decimal | None) -> bool:
    # Equal values may still differ in exponent (0.10 vs 0.1): compare the digits too.
    if a is None or b is None:
        return a is b
    return a.as_tuple() == b.as_tuple()


def _prices() -> list[Price]:
    table = PriceTable.default()
    found = []
    for section in ("openai", "anthropic", "gemini", "ollama", "local"):
        for model in ("gpt-4o", "gpt-4o-mini", "gpt-4.1-nano", "o3", "gpt-5", "gpt-5-mini",
                      "claude-sonnet-4-5", "claude-opus-4-1", "claude-3-5-haiku",
                      "gemini-2.5-pro", "gemini-2.5-flash", "llama3.2", "smollm2"):
            price = table.lookup(section, model)
            if price is not None:
                found.append(price)
    found += [
        Price(input=Decimal("3"), output=Decimal("15"), cached_input=Decimal("0.3"),
              cache_write=Decimal("3.75")),
        Price(input=Decimal("1E+2"), output=Decimal("0"), cached_input=Decimal("0.0000001")),
        Price(input=Decimal("0.10"), output=Decimal("0.400"), cache_write=Decimal("1.00")),
        Price(input=Decimal("0"), output=Decimal("0")),
    ]
    return found


def _usages(rng: random.Random) -> list[Usage]:
    usages = [Usage(), Usage(input_tokens=5), Usage(input_tokens=0, output_tokens=0)]
    for _ in range(400):
        def count() -> int | None:
            return rng.choice([None, 0, rng.randrange(10), rng.randrange(10**7),
                               rng.randrange(10**12)])
        usages.append(Usage(
            input_tokens=rng.choice([0, 1, 12, rng.randrange(10**6), rng.randrange(10**13)]),
            output_tokens=rng.choice([0, 7, rng.randrange(10**5), rng.randrange(10**13)]),
            cache_read_tokens=count(), cache_write_tokens=count(), reasoning_tokens=count(),
            input_includes_cached=rng.choice([None, True, False]),
        ))
    return usages


def test_rates_price_exactly_as_price_usage() -> None:
    rng = random.Random(7)
    usages = _usages(rng)
    for price in _prices():
        rates = Rates(price)
        for usage in usages:
            for in_output in (True, False):
                want = price_usage(usage, price, reasoning_in_output=in_output)
                got = rates.cost(usage, reasoning_in_output=in_output)
                assert _same(got, want), (price, usage, in_output, got, want)


def test_totals_past_the_precision_round_as_price_usage_does() -> None:
    price = Price(input=Decimal("2.5"), output=Decimal("10.000001"))
    rates = Rates(price)
    for n in (10**20, 10**22 + 3, 10**27 - 1, 3 * 10**30 + 7):
        usage = Usage(input_tokens=n, output_tokens=n + 1)
        assert _same(rates.cost(usage), price_usage(usage, price))


def test_a_narrower_decimal_context_rounds_as_price_usage_does() -> None:
    price = Price(input=Decimal("0.15"), output=Decimal("0.60"), cached_input=Decimal("0.075"))
    rates = Rates(price)
    usage = Usage(input_tokens=123457, output_tokens=98765, cache_read_tokens=1001,
                  input_includes_cached=True)
    for prec in (3, 6, 12):
        with localcontext() as ctx:
            ctx.prec = prec
            assert _same(rates.cost(usage), price_usage(usage, price)), prec


def test_odd_counts_and_prices_take_price_usages_own_path() -> None:
    price = Price(input=Decimal("0.15"), output=Decimal("0.60"))
    rates = Rates(price)
    negative = Usage(input_tokens=10, output_tokens=5, cache_read_tokens=-20,
                     input_includes_cached=False)
    assert _same(rates.cost(negative), price_usage(negative, price))
    floats = Usage(input_tokens=10.0, output_tokens=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        price_usage(floats, price)
    with pytest.raises(TypeError):
        rates.cost(floats)
    for odd in (Price(input=Decimal("-1"), output=Decimal("2")),
                Price(input=Decimal("1E-950"), output=Decimal("2"))):
        usage = Usage(input_tokens=3, output_tokens=4)
        assert _same(Rates(odd).cost(usage), price_usage(usage, odd))
    endless = Price(input=Decimal("Infinity"), output=Decimal("2"))
    usage = Usage(input_tokens=3, output_tokens=4)
    with pytest.raises(InvalidOperation):
        price_usage(usage, endless)  # 0 cached tokens times an infinite price
    with pytest.raises(InvalidOperation):
        Rates(endless).cost(usage)
