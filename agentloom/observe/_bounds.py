"""Bounds on what a reporter writes of text it did not choose (names as the loop's
summary bounds them: `agentloom.loop.tool_names`).

The model names the tools it calls (any name, of any length: an unknown tool is still
reported), the provider's reply names its model and its id, and a reply or a tool result
may be megabytes. None of that may reach a trace line, a span name or a span attribute
unbounded, and a name the model chose is redacted like content is: a model that echoes a
secret it was shown as a tool's name must not put it in a span name, with or without
content capture. OpenTelemetry's own `OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT` is unset by
default (no limit), so the bound is ours.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from agentloom.loop.tool_names import MAX_NAME as MAX_NAME
from agentloom.loop.tool_names import MAX_NAMES as MAX_NAMES
from agentloom.loop.tool_names import OTHER as OTHER
from agentloom.loop.tool_names import bounded_name

Redact = Callable[[str], str]


def bounded(text: str, limit: int, redact: Redact | None = None) -> str:
    """`text` redacted (first: a cut secret would no longer be recognised), then cut to
    `limit` characters with a note of how many more there were."""
    if redact is not None:
        text = redact(text)
    if len(text) > limit:
        text = text[:limit] + f"...[{len(text) - limit} more chars]"
    return text


def name(text: str, redact: Redact | None = None) -> str:
    """A name from outside (model-chosen or provider-sent), as it may be written: redacted
    (first: a cut secret would no longer be recognised), then cut as a summary cuts it
    (`loop.tool_names`), so a name reads the same in a summary, a trace and a span."""
    return bounded_name(redact(text) if redact is not None else text)


def counts(by_name: Mapping[str, int], redact: Redact | None = None) -> dict[str, int]:
    """Per-name counts with every name bounded and at most `MAX_NAMES` names; the rest
    summed under `OTHER`."""
    out: dict[str, int] = {}
    other = 0
    for key, count in by_name.items():
        shown = name(key, redact)
        if shown in out or len(out) < MAX_NAMES:
            out[shown] = out.get(shown, 0) + count
        else:
            other += count
    if other:
        out[OTHER] = out.get(OTHER, 0) + other
    return out
