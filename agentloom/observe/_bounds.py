"""Bounds on what a reporter writes of text it did not choose.

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

MAX_NAME = 128
"""Characters of a name (a tool, a model, a response id) written; a provider's tool
names hold at most 64."""

MAX_NAMES = 128
"""Names listed per record (one reply's tool calls, a summary's per-tool counts); one
more entry says how many were left out."""

OTHER = "[other]"
"""The per-tool count that sums the names past `MAX_NAMES`."""

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
    """A name from outside (model-chosen or provider-sent), as it may be written."""
    return bounded(text, MAX_NAME, redact)


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
