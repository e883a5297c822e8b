"""Finding the JSON in a model's reply.

Models asked for JSON often wrap it: in a fenced ```json block, or in a sentence ("Here
is the result: {...}"). We try, in order, the whole reply, each fenced block, then each
balanced `{...}` from the left. The brace matching is string-aware, so a `}` inside a
JSON string doesn't end the object. The first candidate that parses wins.
"""

from __future__ import annotations

import json
import re
from typing import Any

from agentloom import _jsontext

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\r?\n(.*?)```", re.DOTALL)


def extract_json(text: str) -> Any:
    """The JSON value in `text`.

    Raises:
        ValueError: nothing in the text parses as JSON; the message says what was tried
            and, when a candidate almost parsed, where it broke.
    """
    stripped = text.strip()
    if not stripped:
        raise ValueError("the reply is empty; expected a JSON object")
    first_error: json.JSONDecodeError | None = None
    try:
        return _jsontext.loads(stripped)
    except json.JSONDecodeError as exc:
        if stripped[0] in "{[":
            first_error = exc
    for match in _FENCE.finditer(text):
        lang, body = match.group(1).lower(), match.group(2).strip()
        if lang not in ("", "json", "jsonc", "json5") or not body:
            continue
        try:
            return _jsontext.loads(body)
        except json.JSONDecodeError as exc:
            first_error = first_error or exc
    start = text.find("{")
    while start != -1:
        end = _balanced_end(text, start)
        if end == -1:
            if first_error is None:
                first_error = json.JSONDecodeError("unclosed '{'", text, start)
            break
        try:
            return _jsontext.loads(text[start:end])
        except json.JSONDecodeError as exc:
            first_error = first_error or exc
        start = text.find("{", start + 1)
    if first_error is not None:
        raise ValueError(
            f"the reply holds no valid JSON: {first_error.msg} at line {first_error.lineno} "
            f"column {first_error.colno}"
        )
    raise ValueError(
        "the reply holds no JSON object: answer with the JSON itself, "
        "a ```json block, or one {...} object"
    )


def _balanced_end(text: str, start: int) -> int:
    """Index just past the `}` that closes the `{` at `start`, or -1 if it never closes."""
    depth = 0
    in_string = False
    escaped = False
    for i in range(start, len(text)):
        c = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
    return -1
