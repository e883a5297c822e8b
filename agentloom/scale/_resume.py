"""What an earlier attempt at a batch already finished, read back from its output file.

An input is finished when its last line in the output says `success`, or a failure that
running it again would repeat (the workflow failed, ran out of time or budget, or the
runner raised): those are skipped on resume. `retry_failed=True` runs every failure
again. Inputs that were in flight when the batch stopped have no line and run again;
`invalid_input` lines are never "finished", so a fixed input runs on the next resume.
A torn last line (the process was killed mid-write) is ignored: that input runs again.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from agentloom import _jsontext
from agentloom.scale._types import INVALID_INPUT, SUCCESS, BatchItemResult


@dataclass(slots=True, kw_only=True)
class ResumeState:
    finished: dict[str, BatchItemResult] = field(default_factory=dict)
    """Id to the result that makes it finished; these inputs are skipped."""
    retrying: set[str] = field(default_factory=set)
    """Failed ids that run again (`retry_failed`)."""
    unreadable_lines: list[int] = field(default_factory=list)


def read_finished(output: str | os.PathLike[str], *, retry_failed: bool = False,
                  recheck: frozenset[str] = frozenset()) -> ResumeState:
    """The inputs of `output` that a resumed batch skips (an absent file: none). Lines
    whose status is in `recheck` are not finished: the batch asks the store again (a
    paused run may have been resumed since)."""
    state = ResumeState()
    path = Path(output)
    if not path.exists():
        return state
    last: dict[str, BatchItemResult] = {}
    with path.open(encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                item = BatchItemResult.from_dict(_jsontext.loads(line))
            except (ValueError, KeyError, TypeError):
                state.unreadable_lines.append(lineno)
                continue
            last[item.id] = item
    for ident, item in last.items():
        if item.status == INVALID_INPUT or item.status in recheck:
            continue
        if item.status != SUCCESS and retry_failed:
            state.retrying.add(ident)
            continue
        state.finished[ident] = item
    return state
