"""`StateManager`: the public AgentLoom's state holder, a dict behind an asyncio lock.

Our engine keeps a run's state itself; this object only carries the initial state in
and, after `WorkflowEngine.run()`, the final state out, with the async accessors their
scripts call (`get`, `set`, `update`, `get_state_snapshot`). Their keys are the engine's
state paths (`user.name`, `items[0].name`, `items[-1]`), read by the same parser.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable, Mapping
from typing import Any

from agentloom.workflow.lang.paths import MISSING, Path, PathError, assign, lookup, parse_path


def _segments(key: Any) -> list[str]:
    """A dotted state path's segments. As theirs, an empty path or an empty segment
    (`"a..b"`, `".a"`) is a ValueError; a key that is no text is a TypeError."""
    if not isinstance(key, str):
        raise TypeError(f"state key must be text (a dotted path such as 'user.name'), "
                        f"got {type(key).__name__}")
    if not key:
        raise ValueError("state path must not be empty")
    pieces = key.split(".")
    if not all(pieces):
        raise ValueError(f"empty segment in state path {key!r}")
    return pieces


def _path(key: Any) -> Path:
    """`key` as the workflow engine reads a state path (`items[0].name` -> items, 0,
    name), so a script and a workflow name the same places. A segment our grammar has no
    words for (`"my key"`, `"0"`, `"café"`) is, as in theirs, a mapping's key as written."""
    segments = _segments(key)
    try:
        return parse_path(key)
    except PathError:
        pass
    out: list[str | int] = []
    for segment in segments:
        try:
            out.extend(parse_path(segment))
        except PathError:
            out.append(segment)
    return tuple(out)


def _lookup(data: Any, key: str, default: Any) -> Any:
    """The value at `key`, or `default` (a missing key, a list index out of range)."""
    value = lookup(data, _path(key))
    return default if value is MISSING else value


def _assign(data: dict[str, Any], key: str, value: Any) -> None:
    """Set `value` at `key`, changing nothing when the state can't hold it. As theirs, an
    index with no list item there is an IndexError (lists never grow); a name below a
    text, a number or a list is a TypeError. Both say the path and why."""
    path = _path(key)
    try:
        assign(data, path, value)
    except PathError as exc:
        kind = IndexError if _refused_at_index(data, path) else TypeError
        raise kind(str(exc)) from None


def _refused_at_index(data: Any, path: Path) -> bool:
    """Whether the first step of `path` that `assign` cannot take is a list index (rather
    than a name below something that is no mapping)."""
    node: Any = data
    for i, part in enumerate(path):
        if isinstance(part, int):
            if not (isinstance(node, list) and -len(node) <= part < len(node)):
                return True
            node = node[part]
        elif not isinstance(node, dict) or i == len(path) - 1:
            return False
        else:
            node = node.get(part)
            if node is None:  # assign makes it, as a mapping
                node = {}
            elif not isinstance(node, dict | list):
                return False
    return False


class StateManager:
    """The run's state: `initial_state` in, the final state out after a run."""

    def __init__(self, initial_state: Mapping[str, Any] | None = None) -> None:
        if initial_state is not None and not isinstance(initial_state, Mapping):
            raise TypeError(f"initial_state must be a mapping of state keys to values "
                            f"(a dict), got {type(initial_state).__name__}")
        self._state: dict[str, Any] = copy.deepcopy(dict(initial_state or {}))
        self._lock = asyncio.Lock()

    @property
    def state(self) -> dict[str, Any]:
        """A copy of the current state."""
        return copy.deepcopy(self._state)

    async def get(self, key: str, default: Any = None) -> Any:
        """A copy of the value at `key`; `default` itself (as theirs) when there is none."""
        async with self._lock:
            value = _lookup(self._state, key, MISSING)
            return default if value is MISSING else copy.deepcopy(value)

    async def set(self, key: str, value: Any) -> None:
        async with self._lock:
            _assign(self._state, key, value)

    async def update(self, key: str, fn: Callable[[Any], Any]) -> Any:
        """Read-modify-write under the lock; `fn` gets None for a missing key."""
        async with self._lock:
            value = fn(_lookup(self._state, key, None))
            _assign(self._state, key, value)
            return value

    async def get_state_snapshot(self) -> dict[str, Any]:
        async with self._lock:
            return copy.deepcopy(self._state)

    def replace(self, state: dict[str, Any]) -> None:
        """Take a finished run's state (the engine adapter calls this)."""
        self._state = copy.deepcopy(state)
