"""A reply with its cost set: the router prices every call, so the copy is made field by
field on fresh objects rather than by `dataclasses.replace`.
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from typing import Any

from agentloom._record import thaw
from agentloom.messages import ModelResponse, Usage

_RESPONSE_FIELDS = ("parts", "usage", "finish_reason", "model", "provider", "response_id",
                    "time_to_first_token")
_USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
                 "reasoning_tokens", "cost_usd", "input_includes_cached", "cost_estimated")
# Built field by field on a fresh object (what their `__init__`s do, without the keyword
# calls that cost ~9 k instructions each, on every priced call) only while these are all
# of the classes' fields; a new field falls back to replace.
_DIRECT = (tuple(f.name for f in dataclasses.fields(ModelResponse)) == _RESPONSE_FIELDS
           and tuple(f.name for f in dataclasses.fields(Usage)) == _USAGE_FIELDS)
_new = object.__new__
_set_class = vars(object)["__class__"].__set__
_TWINS: list[type] = []
"""The mutable twins of Usage and ModelResponse (see `agentloom._record`), taken on the
first priced call: making one costs more than a process that never prices should pay."""


def with_cost(response: ModelResponse, cost: Decimal | None) -> ModelResponse:
    """The response with its usage's cost set (and marked estimated when known)."""
    usage = response.usage
    if not _DIRECT:
        return dataclasses.replace(response, usage=usage.with_cost(cost))
    if not _TWINS:
        _TWINS.extend(type(thaw(_new(cls))) for cls in (Usage, ModelResponse))
    # Made as the twin and frozen by a class swap: a third of thaw(new) + freeze.
    priced: Any = _new(_TWINS[0])
    priced.input_tokens = usage.input_tokens
    priced.output_tokens = usage.output_tokens
    priced.cache_read_tokens = usage.cache_read_tokens
    priced.cache_write_tokens = usage.cache_write_tokens
    priced.reasoning_tokens = usage.reasoning_tokens
    priced.cost_usd = cost
    priced.input_includes_cached = usage.input_includes_cached
    priced.cost_estimated = cost is not None
    _set_class(priced, Usage)
    copy: Any = _new(_TWINS[1])
    copy.parts = response.parts
    copy.usage = priced
    copy.finish_reason = response.finish_reason
    copy.model = response.model
    copy.provider = response.provider
    copy.response_id = response.response_id
    copy.time_to_first_token = response.time_to_first_token
    _set_class(copy, ModelResponse)
    return copy  # type: ignore[no-any-return]
