"""JSON for the wire modules: request bodies to bytes, reply bodies back to values.

`dump_body(obj)` is `json.dumps(obj, ensure_ascii=False, separators=(",", ":"))` encoded
as UTF-8, and `load_body(data)` is `json.loads(data)`: the same bytes, the same values,
the same errors (nesting bounded, see `agentloom._jsontext`). They exist because every
call, and every event of a stream, pays for them: `JSONEncoder.encode`/`iterencode`
build a closure and an encoder per call, which at a few hundred bytes costs more than
the encoding itself, and pydantic_core (a dependency already) parses in half json's
time. No I/O.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json import encoder as _encoder
from typing import Any

from agentloom import _jsontext

_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
# Not in typeshed: the C encoder's maker (None without the C codec).
_MAKE_ENCODER: Callable[..., Callable[[Any, int], list[str]]] | None = getattr(
    _encoder, "c_make_encoder", None)
_ESCAPE = _encoder.encode_basestring  # the C escaper when the C codec is there


def dump_body(obj: Any) -> bytes:
    """A request body, compact and UTF-8, byte for byte what `json.dumps` writes."""
    if _MAKE_ENCODER is None:  # pragma: no cover - a Python without the C codec
        return _COMPACT.encode(obj).encode("utf-8")
    # What `JSONEncoder.iterencode(obj, _one_shot=True)` builds, minus its Python frames:
    # a fresh marker dict per call keeps the circular-reference check (and thread safety).
    chunks = _MAKE_ENCODER({}, _COMPACT.default, _ESCAPE, None, ":", ",", False, False,
                           True)(obj, 0)
    return "".join(chunks).encode("utf-8")


load_body = _jsontext.loads
"""A reply body's value: `agentloom._jsontext.loads` (json.loads's values and errors, read
by pydantic_core's parser, nesting bounded)."""


__all__ = ["dump_body", "load_body"]
