"""JSON for the wire modules: request bodies to bytes, reply bodies back to values.

`dump_body(obj)` is `json.dumps(obj, ensure_ascii=False, separators=(",", ":"))` encoded
as UTF-8, and `load_body(data)` is `json.loads(data)`: the same bytes, the same values,
the same errors. They exist because every call pays for the Python around the C codec
(`JSONEncoder.encode`/`iterencode` build a closure and an encoder per call, `json.loads`
sniffs the encoding and matches whitespace twice with a regex), and at a few hundred bytes
that wrapping costs more than the encoding itself. No I/O.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json import encoder as _encoder
from typing import Any

_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
# Neither is in typeshed: the C encoder's maker (None without the C codec) and the
# decoder's scanner (C when the codec is there).
_MAKE_ENCODER: Callable[..., Callable[[Any, int], list[str]]] | None = getattr(
    _encoder, "c_make_encoder", None)
_ESCAPE = _encoder.encode_basestring  # the C escaper when the C codec is there
_SCAN: Callable[[str, int], tuple[Any, int]] = (
    json.JSONDecoder().scan_once)  # type: ignore[attr-defined]
# A body that starts with either is UTF-8 by json's own sniffing (`detect_encoding`): the
# UTF-16/32 forms it also reads have a zero byte first or second, which the scanner
# refuses, so those still reach `json.loads`.
_OPEN_BYTES = (b"{", b"[")
_OPEN_TEXT = ("{", "[")
_WHITESPACE = " \t\n\r"  # JSON's whitespace, which json.loads allows after the value


def dump_body(obj: Any) -> bytes:
    """A request body, compact and UTF-8, byte for byte what `json.dumps` writes."""
    if _MAKE_ENCODER is None:  # pragma: no cover - a Python without the C codec
        return _COMPACT.encode(obj).encode("utf-8")
    # What `JSONEncoder.iterencode(obj, _one_shot=True)` builds, minus its Python frames:
    # a fresh marker dict per call keeps the circular-reference check (and thread safety).
    chunks = _MAKE_ENCODER({}, _COMPACT.default, _ESCAPE, None, ":", ",", False, False,
                           True)(obj, 0)
    return "".join(chunks).encode("utf-8")


def load_body(data: bytes | str) -> Any:
    """`json.loads(data)`. A UTF-8 object or array (every reply we get) goes straight to
    the scanner; anything else, and every error, takes `json.loads` itself, so results
    and messages are unchanged."""
    if isinstance(data, bytes):
        if not data.startswith(_OPEN_BYTES):
            return json.loads(data)
        try:
            text = data.decode("utf-8", "surrogatepass")
        except ValueError:
            return json.loads(data)
    elif isinstance(data, str) and data.startswith(_OPEN_TEXT):
        text = data
    else:
        return json.loads(data)
    try:
        value, end = _SCAN(text, 0)
    except (StopIteration, ValueError):
        return json.loads(data)  # raises, in json's own words
    if end != len(text) and text[end:].strip(_WHITESPACE):
        return json.loads(data)  # "Extra data"
    return value


__all__ = ["dump_body", "load_body"]
