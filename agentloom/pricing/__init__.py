"""What a call cost, from its usage and a price table.

Job: the price table as data and `cost(usage, provider=, model=)`. May import: the types
layer (tests/test_layers.py holds the rule).

`cost(usage, provider=..., model=...)` is exact `Decimal` USD, or None when the model has
no price or the usage is incomplete: None means unknown, never zero, so a cost budget can
fail closed instead of silently letting an unpriced model through.

How tokens are billed:

- input: unless `usage.input_includes_cached` is False (so for OpenAI, Gemini, and an
  unknown None), cache reads and writes are inside `input_tokens`, so they are taken out
  and billed at `cached_input` and `cache_write`; when it is False (Anthropic)
  `input_tokens` is the uncached part and cached tokens are added apart.
- cache writes at `cache_write` (Anthropic); missing cache prices fall back to `input`.
- output at `output`, reasoning included: reasoning is billed at the output price. In
  our `Usage`, `output_tokens` always counts reasoning (OpenAI's completion_tokens already
  do; the Gemini decoder adds `thoughtsTokenCount`, which Gemini reports apart, to
  `candidatesTokenCount`), and `reasoning_tokens` says how many of them were reasoning, so
  reasoning is never added twice. For counts taken elsewhere, where reasoning sits beside
  the output, pass `reasoning_in_output=False`.
"""

from __future__ import annotations

from decimal import Decimal, getcontext

from agentloom.messages import Usage
from agentloom.pricing._table import Price as Price
from agentloom.pricing._table import PriceTable as PriceTable

_MILLION = Decimal(1_000_000)


def cost(
    usage: Usage,
    *,
    provider: str | None,
    model: str,
    table: PriceTable | None = None,
    price: Price | None = None,
    reasoning_in_output: bool = True,
) -> Decimal | None:
    """USD for one call (or a sum of calls of one model), or None if unknown.

    Args:
        price: use this price instead of looking the model up (a profile's pricing).
        reasoning_in_output: whether `output_tokens` already counts reasoning (True for
            every `Usage` our providers build).
    """
    if price is None:
        price = (table or PriceTable.default()).lookup(provider, model)
    if price is None:
        return None
    return price_usage(usage, price, reasoning_in_output=reasoning_in_output)


def price_usage(usage: Usage, price: Price, *, reasoning_in_output: bool = True) -> Decimal | None:
    if usage.input_tokens is None or usage.output_tokens is None:
        return None
    cached = usage.cache_read_tokens or 0
    written = usage.cache_write_tokens or 0
    uncached = usage.input_tokens
    if usage.input_includes_cached is not False:
        # OpenAI-style counts (and unknown: the safer reading, never negative): cache
        # reads and writes are inside `input_tokens`, priced apart once each.
        uncached = max(0, usage.input_tokens - cached - written)
    output = usage.output_tokens
    if not reasoning_in_output and usage.reasoning_tokens:
        output += usage.reasoning_tokens
    total = (
        uncached * price.input
        + cached * (price.cached_input if price.cached_input is not None else price.input)
        + written * (price.cache_write if price.cache_write is not None else price.input)
        + output * price.output
    )
    return total / _MILLION


class Rates:
    """One price, ready for many calls: `rates.cost(usage)` is `price_usage(usage, price)`,
    the same `Decimal` to the digit and exponent, for a fraction of the work.

    The four rates are held as integers at one common decimal exponent E (the smallest
    of the four), so the weighted sum is integer arithmetic. `price_usage`'s products and
    sums are exact whenever the total has fewer digits than the context's precision
    (every term and partial sum is no larger: all are >= 0), and give that total at
    exponent E: the integer times 10**E, exactly, after which the division by a million
    is the same operation on the same operand. Anything else (a negative or non-integer count, a
    price that isn't a finite non-negative `Decimal`, a total too long for the
    precision) is handed to `price_usage` itself. Exponent limits are not looked at:
    the default ones (+-999999) are a thousand times wider than any price needs.
    """

    __slots__ = ("_cached", "_input", "_output", "_unit", "_write", "price")

    def __init__(self, price: Price) -> None:
        self.price = price
        fields = (price.input, _or(price.cached_input, price.input),
                  _or(price.cache_write, price.input), price.output)
        self._unit: Decimal | None = None
        self._input = self._cached = self._write = self._output = 0
        if not all(type(f) is Decimal and f.is_finite() and not f.is_signed() for f in fields):
            return
        shapes = [f.as_tuple() for f in fields]
        low = min(int(t.exponent) for t in shapes)
        if not -_EXPONENTS < low < _EXPONENTS:
            return  # far from any real price: left to the plain arithmetic
        # Integer coefficients by hand: exact whatever decimal context is current.
        self._input, self._cached, self._write, self._output = (
            int("".join(map(str, t.digits))) * 10 ** (int(t.exponent) - low) for t in shapes)
        self._unit = Decimal((0, (1,), low))

    def cost(self, usage: Usage, *, reasoning_in_output: bool = True) -> Decimal | None:
        inp, output = usage.input_tokens, usage.output_tokens
        if inp is None or output is None:
            return None
        if self._unit is None:
            return price_usage(usage, self.price, reasoning_in_output=reasoning_in_output)
        cached = usage.cache_read_tokens or 0
        written = usage.cache_write_tokens or 0
        uncached = inp
        if usage.input_includes_cached is not False:
            uncached = inp - cached - written
            if not uncached > 0:
                uncached = 0  # max(0, ...) of price_usage, without the builtin's call
        if not reasoning_in_output and usage.reasoning_tokens:
            output += usage.reasoning_tokens
        total = (uncached * self._input + cached * self._cached + written * self._write
                 + output * self._output)
        # An int total means every count was one (a float or Decimal count spreads to
        # the sum); `|` of ints is negative exactly when one of them is.
        if (type(total) is not int or (uncached | cached | written | output) < 0
                or total >= _EXACT_BELOW or getcontext().prec < _DIGITS):
            return price_usage(usage, self.price, reasoning_in_output=reasoning_in_output)
        return total * self._unit / _MILLION


def _or(value: Decimal | None, default: Decimal) -> Decimal:
    return value if value is not None else default


_DIGITS = 28
"""The default context's precision; a context at least as precise prices totals below
10**28 exactly (a narrower one is left to `price_usage`, whose rounding it then decides)."""
_EXACT_BELOW = 10**_DIGITS
_EXPONENTS = 900


__all__ = ["Price", "PriceTable", "Rates", "cost", "price_usage"]
