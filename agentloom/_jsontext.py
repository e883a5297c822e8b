"""JSON text from outside: a model's tool arguments and replies, a provider's body, a
tool's output, the files a run is handed (recordings, mock responses, batch inputs).

`loads(text)` is `json.loads(text)`, the same values and the same errors, except one:
text nested deeper than the parser can recurse (a hundred kilobytes of `[` will do) is a
`json.JSONDecodeError`, "nested too deeply", like any other text that isn't JSON,
rather than a RecursionError. Every place that reads such text already turns a
JSONDecodeError into its own answer (a tool error the model can read, a provider's body
error, the text kept as text, an error naming the file and line); a RecursionError got
past all of them and ended the run.
"""

from __future__ import annotations

import json
from typing import Any

TOO_DEEP = "JSON nested too deeply to parse"


def loads(text: str | bytes | bytearray) -> Any:
    try:
        return json.loads(text)
    except RecursionError:
        doc = text if isinstance(text, str) else bytes(text).decode("utf-8", "replace")
        raise json.JSONDecodeError(TOO_DEEP, doc, 0) from None


__all__ = ["TOO_DEEP", "loads"]
