"""JSON for the wire modules: request bodies to bytes, reply bodies back to values.

`dump_body(obj)` is `json.dumps(obj, ensure_ascii=False, separators=(",", ":"),
allow_nan=False)` encoded as UTF-8, and `load_body(data)` is `json.loads(data)`: the same
bytes, the same values, the same errors (nesting bounded, see `agentloom._jsontext`). An
infinite or NaN number is refused by name (`NonFiniteNumber`), not sent as `Infinity`,
which no provider parses. They exist because every
call, and every event of a stream, pays for them: `JSONEncoder.encode`/`iterencode`
build a closure and an encoder per call, which at a few hundred bytes costs more than
the encoding itself, and pydantic_core (a dependency already) parses in half json's
time. No I/O.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json import encoder as _encoder
from math import isfinite
from typing import Any

from agentloom import _jsontext
from agentloom.errors import NonFiniteNumber

_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
# Not in typeshed: the C encoder's maker (None without the C codec).
_MAKE_ENCODER: Callable[..., Callable[[Any, int], list[str]]] | None = getattr(
    _encoder, "c_make_encoder", None)
_ESCAPE = _encoder.encode_basestring  # the C escaper when the C codec is there


def dump_body(obj: Any) -> bytes:
    """A request body, compact and UTF-8, byte for byte what `json.dumps` writes."""
    try:
        if _MAKE_ENCODER is None:  # pragma: no cover - a Python without the C codec
            return _COMPACT.encode(obj).encode("utf-8")
        # What `JSONEncoder.iterencode(obj, _one_shot=True)` builds, minus its Python
        # frames: a fresh marker dict per call keeps the circular-reference check (and
        # thread safety).
        chunks = _MAKE_ENCODER({}, _COMPACT.default, _ESCAPE, None, ":", ",", False, False,
                               False)(obj, 0)
    except ValueError as exc:
        # Walked in the encoder's order, so the number is met before any cycle after it.
        where = _non_finite(obj, "") if "Out of range float" in str(exc) else None
        if where is None:
            raise
        raise NonFiniteNumber(f"the request's {where[0] or 'body'} is {where[1]}: JSON "
                              "has no infinite or NaN numbers, so it can't be sent") from exc
    return "".join(chunks).encode("utf-8")


def _non_finite(value: Any, path: str) -> tuple[str, float] | None:
    """The path and value of the first infinite or NaN float in `value` (None: none)."""
    if isinstance(value, float):
        return None if isfinite(value) else (path, value)
    items: Any = (value.items() if isinstance(value, dict)
                  else enumerate(value) if isinstance(value, list | tuple) else ())
    for key, item in items:
        found = _non_finite(item, f"{path}.{key}" if path else str(key))
        if found is not None:
            return found
    return None


load_body = _jsontext.loads
"""A reply body's value: `agentloom._jsontext.loads` (json.loads's values and errors, read
by pydantic_core's parser, nesting bounded)."""


__all__ = ["dump_body", "load_body"]
