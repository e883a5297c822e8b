"""`StateManager`: the public AgentLoom's state holder, a dict behind an asyncio lock.

Our engine keeps a run's state itself; this object only carries the initial state in
and, after `WorkflowEngine.run()`, the final state out, with the async accessors their
scripts call (`get`, `set`, `update`, `get_state_snapshot`) and dotted paths.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable, Mapping
from typing import Any


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


def _path(key: str) -> list[str | int]:
    return [int(piece) if piece.isdigit() else piece for piece in _segments(key)]


def _lookup(data: Any, key: str, default: Any) -> Any:
    node = data
    for part in _path(key):
        if isinstance(part, int) and isinstance(node, list) and -len(node) <= part < len(node):
            node = node[part]
        elif isinstance(node, dict) and str(part) in node:
            node = node[str(part)]
        else:
            return default
    return node


def _assign(data: dict[str, Any], key: str, value: Any) -> None:
    parts = _segments(key)
    node: Any = data
    for part in parts[:-1]:
        nxt = node.get(part) if isinstance(node, dict) else None
        if nxt is None:
            nxt = node[part] = {}
        elif not isinstance(nxt, dict):
            raise TypeError(f"cannot set {key!r}: {part!r} holds a {type(nxt).__name__}")
        node = nxt
    node[parts[-1]] = value


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
        async with self._lock:
            return copy.deepcopy(_lookup(self._state, key, default))

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
