"""What a checkpoint store can do, as a closed list the suite checks against.

Required capabilities are what the engine needs to resume a run after `kill -9`; optional
ones are detected from the methods a store has, and are checked only when present.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class Capability(StrEnum):
    PUT_GET = "put_get"
    LIST = "list"
    PENDING_TOOL_CALLS = "pending_tool_calls"
    ATOMIC_WRITE = "atomic_write"
    RESUME_AFTER_CRASH = "resume_after_crash"
    PRUNE = "prune"
    CLAIM = "claim"
    DELTAS = "deltas"
    QUERY = "query"
    WRITES = "writes"
    QUEUED_EXCHANGES = "queued_exchanges"


REQUIRED_CAPABILITIES: frozenset[Capability] = frozenset({
    Capability.PUT_GET, Capability.LIST, Capability.PENDING_TOOL_CALLS,
    Capability.ATOMIC_WRITE, Capability.RESUME_AFTER_CRASH, Capability.DELTAS,
})
OPTIONAL_CAPABILITIES: frozenset[Capability] = frozenset({
    Capability.PRUNE, Capability.CLAIM, Capability.QUERY, Capability.WRITES,
    Capability.QUEUED_EXCHANGES})

_OPTIONAL_METHODS: dict[Capability, tuple[str, ...]] = {
    Capability.PRUNE: ("prune",),
    Capability.CLAIM: ("claim_run", "release_claim"),
    Capability.QUERY: ("find_runs",),
    Capability.WRITES: ("load_writes", "load_latest_many"),
    Capability.QUEUED_EXCHANGES: ("queue_model_exchange", "flush_model_exchanges"),
}


def detect_capabilities(store: Any) -> frozenset[Capability]:
    """Required ones always (their absence is a failure to report), plus the optional
    ones whose methods the store has."""
    found = set(REQUIRED_CAPABILITIES)
    for cap, methods in _OPTIONAL_METHODS.items():
        if all(callable(getattr(store, m, None)) for m in methods):
            found.add(cap)
    return frozenset(found)
