"""What an exchange in a recording must look like, checked when the file is loaded.

A recording may come from anywhere (a colleague, a bug report, a file a model wrote), so
each exchange is checked field by field before a call is answered from it. Without this a
reply stored as a list, headers stored as a list, a chunk that is no object or a base64
body that doesn't decode failed the step later with Python's own words ("list indices
must be integers or slices, not str"), a status of 999 or "200" was replayed as if a server
had sent it, and a negative, endless or NaN time made a latency replay wait for ever.
"""

from __future__ import annotations

import base64
import binascii
import math
from typing import Any

_OPTIONAL_TEXT = ("step_id", "redacted_hash")
_COUNTS = ("turn", "attempt")


class ShapeError(ValueError):
    """One field of one exchange that no recording writes: `field` says which."""

    def __init__(self, field: str, expected: str) -> None:
        super().__init__(f"{field} must be {expected}")
        self.field = field


def check_exchange(exchange: dict[str, Any]) -> None:
    """Raise `ShapeError` for the first field of `exchange` that can't be replayed."""
    for key in _OPTIONAL_TEXT:
        if exchange.get(key) is not None and not isinstance(exchange[key], str):
            raise ShapeError(key, "a string")
    for key in _COUNTS:
        value = exchange.get(key)
        if value is not None and not _whole(value, least=0, most=1_000_000):
            raise ShapeError(key, "a whole number from 0 to 1000000")
    if not isinstance(exchange["request_hash"], str):
        raise ShapeError("request_hash", "a string")
    if not isinstance(exchange["request"], dict):
        raise ShapeError("request", "an object")
    _seconds(exchange, "elapsed", "elapsed")
    if exchange.get("error") is not None:
        _error(exchange["error"], "error")
        return
    response = exchange.get("response")
    if not isinstance(response, dict):
        raise ShapeError("response", "an object")
    if not _whole(response.get("status"), least=100, most=599):
        raise ShapeError("response.status", "an HTTP status, a whole number from 100 to 599")
    headers = response.get("headers")
    if headers is not None and not (isinstance(headers, dict) and all(
            isinstance(v, str) for v in headers.values())):
        raise ShapeError("response.headers", "an object of strings")
    if "chunks" in response:
        chunks = response["chunks"]
        if not isinstance(chunks, list):
            raise ShapeError("response.chunks", "a list")
        for n, chunk in enumerate(chunks):
            where = f"response.chunks[{n}]"
            if not isinstance(chunk, dict):
                raise ShapeError(where, "an object")
            _seconds(chunk, "t", f"{where}.t")
            _bytes(chunk, where)
        if response.get("stream_error") is not None:
            _error(response["stream_error"], "response.stream_error")
    else:
        _bytes(response, "response")


def _whole(value: Any, *, least: int, most: int) -> bool:
    return type(value) is int and least <= value <= most


def _seconds(holder: dict[str, Any], key: str, field: str) -> None:
    value = holder.get(key)
    if value is None:
        return
    if type(value) not in (int, float) or not (0 <= value < math.inf):
        raise ShapeError(field, "a finite number of seconds, 0 or more")


def _bytes(holder: dict[str, Any], where: str) -> None:
    """A body or chunk: `text` (UTF-8) or `b64`, as `encode_bytes` writes it."""
    if "b64" in holder:
        value = holder["b64"]
        try:
            if not isinstance(value, str):
                raise TypeError
            base64.b64decode(value, validate=True)
        except (TypeError, binascii.Error):
            raise ShapeError(f"{where}.b64", "base64 text") from None
    elif not isinstance(holder.get("text", ""), str):
        raise ShapeError(f"{where}.text", "a string")


def _error(error: Any, field: str) -> None:
    if not isinstance(error, dict):
        raise ShapeError(field, "an object")
    for key in ("message", "phase"):
        if error.get(key) is not None and not isinstance(error[key], str):
            raise ShapeError(f"{field}.{key}", "a string")
    if error.get("request_sent") is not None and not isinstance(error["request_sent"], bool):
        raise ShapeError(f"{field}.request_sent", "true or false")
    if "max_bytes" in error and not _whole(error["max_bytes"], least=0, most=2**62):
        raise ShapeError(f"{field}.max_bytes", "a whole number, 0 or more")
    _seconds(error, "t", f"{field}.t")
