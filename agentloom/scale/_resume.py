"""What an earlier attempt at a batch already finished, read back from its output file.

An input is finished when its last line in the output says `success`, or a failure that
running it again would repeat (the workflow failed, ran out of time or budget, or the
runner raised): those are skipped on resume. `retry_failed=True` runs every failure
again. Inputs that were in flight when the batch stopped have no line and run again;
`invalid_input` lines are never "finished", so a fixed input runs on the next resume.
A torn last line (the process was killed mid-write) is ignored: that input runs again.

The file is read as any file from outside is: a FIFO, socket or device is refused rather
than waited on, a line is read at most `MAX_RESULT_LINE_BYTES` at a time (a longer one
counts as unreadable, so its input runs again), and a result is kept without its
outputs: a resume needs to know which inputs finished, not what they gave, so a results
file of any size takes memory by its count of inputs.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path

from agentloom import _jsontext
from agentloom._files import NotRegularFile, open_regular
from agentloom.errors import ConfigError
from agentloom.scale._input_files import bounded_lines
from agentloom.scale._types import INVALID_INPUT, SUCCESS, BatchItemResult

MAX_RESULT_LINE_BYTES = 64 * 1024 * 1024
"""The longest results line read back, in bytes: twice a reply's default bound (32 MB)
and more than any run's outputs are in practice."""


@dataclass(slots=True, kw_only=True)
class ResumeState:
    finished: dict[str, BatchItemResult] = field(default_factory=dict)
    """Id to the result that makes it finished (its outputs left out); these inputs are
    skipped."""
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
    try:
        handle = open_regular(path)
    except FileNotFoundError:
        return state
    except NotRegularFile:
        raise ConfigError(f"{path}: not a regular file, so no results to resume") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    last: dict[str, BatchItemResult] = {}
    with handle:
        for lineno, line in bounded_lines(handle, MAX_RESULT_LINE_BYTES):
            if line is not None and not line.strip():
                continue
            try:
                if line is None:
                    raise ValueError("too long")
                item = BatchItemResult.from_dict(
                    _jsontext.loads(line.decode("utf-8", "replace")))
            except (ValueError, KeyError, TypeError):
                state.unreadable_lines.append(lineno)
                continue
            last[item.id] = dataclasses.replace(item, outputs={}) if item.outputs else item
    for ident, item in last.items():
        if item.status == INVALID_INPUT or item.status in recheck:
            continue
        if item.status != SUCCESS and retry_failed:
            state.retrying.add(ident)
            continue
        state.finished[ident] = item
    return state
