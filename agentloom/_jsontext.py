"""JSON text from outside: a model's tool arguments and replies, a provider's body, a
tool's output, the files a run is handed (recordings, mock responses, batch inputs).

`loads(text)` gives what `json.loads(text)` gives, values and errors alike, for any text
nested up to `MAX_DEPTH` arrays and objects deep. Deeper text is a `json.JSONDecodeError`,
"nested too deeply", like any other text that isn't JSON. Every reader of such text
turns a JSONDecodeError into its own answer (a tool error the model can read, a
provider's body error, the text kept as text, an error naming the file and line); a
RecursionError got past all of them and ended the run. It came from the parser itself
(100 KB of `[`), or later from the code that walks a parsed value (redaction, schema
checks, the stall detector's digest), which recurses once per level: a bound well below
the interpreter's recursion limit keeps them all safe.

pydantic_core's parser reads first: it is about twice as fast as json's, its values are
json's to the bit (tests/providers/test_json_codec.py holds it to that), and it stops at
its own depth limit, `MAX_DEPTH`. What it refuses otherwise (lone surrogates, a BOM,
UTF-16 and UTF-32, every malformed text) goes to `json.loads`, which reads it or raises
its own error word for word; a value it reads is then held to the same depth.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic_core import from_json as _from_json

MAX_DEPTH = 200
"""Arrays and objects inside each other: pydantic_core's own limit."""
TOO_DEEP = "JSON nested too deeply to parse"
_ITS_LIMIT = "recursion limit exceeded"
"""How pydantic_core words a text deeper than its limit."""


def loads(text: str | bytes | bytearray) -> Any:
    try:
        return _from_json(text)
    except ValueError as exc:
        if str(exc).startswith(_ITS_LIMIT):
            raise _too_deep(text) from None
    except TypeError:
        pass  # not text at all: json.loads says so in its own words
    try:
        value = json.loads(text)
    except RecursionError:
        raise _too_deep(text) from None
    if _deeper_than(value, MAX_DEPTH):
        raise _too_deep(text)
    return value


def _too_deep(text: str | bytes | bytearray) -> json.JSONDecodeError:
    doc = text if isinstance(text, str) else bytes(text).decode("utf-8", "replace")
    return json.JSONDecodeError(TOO_DEEP, doc, 0)


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether `value` holds containers more than `limit` deep; a loop, not recursion."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children
                     if isinstance(child, dict | list))
    return False


__all__ = ["MAX_DEPTH", "TOO_DEEP", "loads"]
