"""What a call cost, from its usage and a price table.

Job: the price table as data and `cost(usage, model)`. May import: the types layer
(tests/test_layers.py holds the rule).

`cost(usage, provider=..., model=...)` is exact `Decimal` USD, or None when the model has
no price or the usage is incomplete: None means unknown, never zero, so a cost budget can
fail closed instead of silently letting an unpriced model through.

How tokens are billed:

- input: when `usage.input_includes_cached` (OpenAI, Gemini), cached prompt tokens are
  inside `input_tokens`, so they are taken out and billed at `cached_input`; otherwise
  (Anthropic) `input_tokens` is the uncached part and cached tokens are added apart.
- cache writes at `cache_write` (Anthropic); missing cache prices fall back to `input`.
- output at `output`, reasoning included: reasoning is billed at the output price. In
  our `Usage`, `output_tokens` always counts reasoning (OpenAI's completion_tokens already
  do; the Gemini decoder adds `thoughtsTokenCount`, which Gemini reports apart, to
  `candidatesTokenCount`), and `reasoning_tokens` says how many of them were reasoning, so
  reasoning is never added twice. For counts taken elsewhere, where reasoning sits beside
  the output, pass `reasoning_in_output=False`.
"""

from __future__ import annotations

from decimal import Decimal

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


__all__ = ["Price", "PriceTable", "cost", "price_usage"]
