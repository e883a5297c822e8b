"""The Agent's numeric settings, checked when they are given (at construction, and when
one is set on an Agent later): a bad one is refused with its name before any call is
made, instead of going to the provider (`max_tokens=-3`), being dropped as falsy
(`max_tokens=0`), being found out only after a call was paid for (`token_budget=0`),
or turning a limit off without a word (`deadline_seconds=nan` compares false with
every time, so the run never ran out of it). A `temperature` that JSON can't carry is
refused by the request's encoder, before it is sent, with the run's summary."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from agentloom.errors import ConfigError


def _count(least: int) -> Callable[[str, Any], None]:
    def check(name: str, value: Any) -> None:
        if type(value) is not int or value < least:  # a bool or a float is no count
            raise ConfigError(f"Agent {name} must be a whole number of at least {least}, "
                              f"got {value!r}")
    return check


def _optional_count(name: str, value: Any) -> None:
    if value is not None:
        _count(1)(name, value)


def _seconds(name: str, value: Any) -> None:
    if value is not None and not (isinstance(value, int | float)
                                  and not isinstance(value, bool) and 0 < value < math.inf):
        raise ConfigError(f"Agent {name} must be a positive, finite number of seconds (None: "
                          f"no deadline), got {value!r}")


CHECKS: dict[str, Callable[[str, Any], None]] = {
    "max_iterations": _count(1),
    "deadline_seconds": _seconds,
    "token_budget": _optional_count,
    "max_tokens": _optional_count,
    "max_reasks": _count(0),
    "tool_concurrency": _count(1),
}
"""Each checked setting's check: called with its name and the value given."""
