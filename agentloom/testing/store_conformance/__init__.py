"""A conformance suite for checkpoint stores: run it against your backend.

    from agentloom.testing.store_conformance import store_factory, validate

    @store_factory("sqlite")
    async def storage():
        with tempfile.TemporaryDirectory() as d:
            yield lambda now: SqliteStore(f"{d}/runs.db", now=now)

    report = await validate(storage)
    assert report.ok, report.render()

One module per capability (`put_get`, `list_runs`, `pending_tool_calls`, `atomic_write`,
`resume_after_crash`, `deltas`, `prune`, `claim`, `query_runs`, `writes`,
`queued_exchanges`); required ones
must pass, optional ones are checked when the store has their methods.
"""

from __future__ import annotations

from agentloom.testing.store_conformance._capabilities import (
    OPTIONAL_CAPABILITIES,
    REQUIRED_CAPABILITIES,
    Capability,
    detect_capabilities,
)
from agentloom.testing.store_conformance._initializer import (
    CheckContext,
    FakeNow,
    StoreFactory,
    store_factory,
)
from agentloom.testing.store_conformance._validate import (
    CapabilityMissing,
    CapabilityReport,
    CheckResult,
    check_id,
    iter_checks,
    run_check,
    validate,
)

__all__ = [
    "OPTIONAL_CAPABILITIES",
    "REQUIRED_CAPABILITIES",
    "Capability",
    "CapabilityMissing",
    "CapabilityReport",
    "CheckContext",
    "CheckResult",
    "FakeNow",
    "StoreFactory",
    "check_id",
    "detect_capabilities",
    "iter_checks",
    "run_check",
    "store_factory",
    "validate",
]
