"""The tool names of a summary, bounded and redacted.

The model chooses the names it calls, of any length and as many as it likes (128 new ones
a turn, every turn), and may name one after a secret it was shown: a summary counts them
under names cut to `MAX_NAME`, at most `MAX_NAMES` of them (the rest under `OTHER`), and
redacts them with the run's redactor when it has one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from agentloom.redact import Redactor

if TYPE_CHECKING:
    from agentloom.loop.summary import ConversationSummary

MAX_NAME = 128
"""Characters of a tool name a summary keeps of a name the run's tools don't declare
(the model chooses the names it calls, of any length; a provider's own hold at most 64).
A longer one is cut to this, a note of how much was left out included, as a trace cuts it
(`observe._bounds`)."""

MAX_NAMES = 128
"""Distinct tool names a summary counts by name; past them a name the run's tools declare
is still counted by its own, any other under `OTHER` (the model may make up 128 new
names a turn, every turn)."""

OTHER = "[other]"
"""The per-tool count (`tool_calls`, `tool_errors`) that sums the names past `MAX_NAMES`."""

_CUT = re.compile(r"(.*)\.\.\.\[(\d+) more chars\]", re.DOTALL)


def bounded_name(name: str) -> str:
    """`name` as a summary (or the loop's own reply) may hold it: at most `MAX_NAME`
    characters, a note of how many more there were included."""
    if len(name) <= MAX_NAME:
        return name
    more = len(name) - (MAX_NAME - len(f"...[{len(name)} more chars]"))
    kept = MAX_NAME - len(f"...[{more} more chars]")
    return f"{name[:kept]}...[{len(name) - kept} more chars]"


def declared_names(tools: object) -> frozenset[str]:
    """The names a ToolBox declares, as the model sees them (`specs`) and as the loop
    reports them (`registered_name`, the name a step declared)."""
    names = [s.name for s in getattr(tools, "specs", None) or ()]
    registered = getattr(tools, "registered_name", None)
    if callable(registered):
        names += [registered(n) for n in names]
    return frozenset(n for n in names if type(n) is str)


def redacted_name(name: str, redactor: Redactor) -> str:
    """`name` redacted; a name cut at `MAX_NAME` also loses the end that begins one of
    the run's secrets (the cut may have left half a secret, which no longer reads as
    one), counted among the characters left out."""
    if type(name) is not str:
        return name
    cut = _CUT.fullmatch(name)
    if cut is None:
        return redactor.redact_text(name)
    kept, more = cut.group(1), int(cut.group(2))
    held = redactor.open_prefix(kept)
    if held:
        kept, more = kept[:len(kept) - held], more + held
    return f"{redactor.redact_text(kept)}...[{more} more chars]"


def redacted_counts(counts: Mapping[str, int], redactor: Redactor) -> dict[str, int]:
    """Per-tool counts with each name redacted (names that redact alike are summed)."""
    out: dict[str, int] = {}
    for name, count in counts.items():
        shown = redacted_name(name, redactor)
        out[shown] = out.get(shown, 0) + count
    return out


def redacted_names(names: Iterable[str], redactor: Redactor) -> tuple[str, ...]:
    return tuple(redacted_name(n, redactor) for n in names)


def redacted_summary(summary: ConversationSummary, redactor: Redactor) -> ConversationSummary:
    """`summary` with its tool names (counts and timeline) redacted by `redactor`: the
    model names the tools it calls, and may name one after a secret it was shown."""
    update: dict[str, Any] = {}
    for key in ("tool_calls", "tool_errors"):
        counts = getattr(summary, key)
        redacted = redacted_counts(counts, redactor)
        if redacted != counts:
            update[key] = redacted
    if summary.timeline:
        turns = tuple(t.model_copy(update={
            "tools": redacted_names(t.tools, redactor),
            "tool_errors": redacted_names(t.tool_errors, redactor)}) for t in summary.timeline)
        if turns != summary.timeline:
            update["timeline"] = turns
    return summary.model_copy(update=update) if update else summary
