"""The subworkflow files one load reads, shared by every file that load reaches.

A workflow may name the same file from many steps, and that file others, so a tree of
small files can stand for an exponential number of nested runs: ten steps naming a file
that has ten steps naming the next, six files deep, is a million. Within one top-level
load each file is loaded once per depth (its result, or its problems, reused), and the
steps the files expand to are counted as they load, so such a tree is refused in
milliseconds with a message of bounded length instead of taking minutes and gigabytes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

MAX_EXPANDED_STEPS = 10_000
"""Steps a workflow may stand for through the files its subworkflow steps name, each
counted as often as it is named (a map body once, whatever its items)."""


@dataclass(slots=True)
class Includes:
    loaded: dict[tuple[str, int], tuple[Any, int]] = field(default_factory=dict)
    """(resolved path, depth) -> (the loaded workflow or the error it raised, the steps
    it expands to)."""
    counts: list[int] = field(default_factory=lambda: [0])
    """For each file on the load's stack (the top-level one first): the steps its
    subworkflow files expand to so far."""


_CURRENT: ContextVar[Includes | None] = ContextVar("agentloom_includes", default=None)


@contextmanager
def include_scope() -> Iterator[Includes]:
    """The includes of the load under way, or new ones for a top-level load (dropped
    when it ends: a later load reads the files again, as they are then)."""
    current = _CURRENT.get()
    if current is not None:
        yield current
        return
    includes = Includes()
    token = _CURRENT.set(includes)
    try:
        yield includes
    finally:
        _CURRENT.reset(token)
