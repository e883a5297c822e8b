"""A conformance suite for checkpoint stores: run it against your backend.

    from agentloom.testing.store_conformance import store_factory, validate

    @store_factory("sqlite")
    async def storage():
        with tempfile.TemporaryDirectory() as d:
            yield lambda now: SqliteStore(f"{d}/runs.db", now=now)

    report = await validate(storage)
    assert report.ok, report.render()

One module per capability (`put_get`, `list_runs`, `pending_tool_calls`, `atomic_write`,
`resume_after_crash`, `prune`, `claim`); required ones must pass, optional ones are
checked when the store has their methods.
"""

from __future__ import annotations

from agentloom.testing.store_conformance._capabilities import (
    OPTIONAL_CAPABILITIES as OPTIONAL_CAPABILITIES,
)
from agentloom.testing.store_conformance._capabilities import (
    REQUIRED_CAPABILITIES as REQUIRED_CAPABILITIES,
)
from agentloom.testing.store_conformance._capabilities import (
    Capability as Capability,
)
from agentloom.testing.store_conformance._capabilities import (
    detect_capabilities as detect_capabilities,
)
from agentloom.testing.store_conformance._initializer import (
    CheckContext as CheckContext,
)
from agentloom.testing.store_conformance._initializer import (
    FakeNow as FakeNow,
)
from agentloom.testing.store_conformance._initializer import (
    StoreFactory as StoreFactory,
)
from agentloom.testing.store_conformance._initializer import (
    store_factory as store_factory,
)
from agentloom.testing.store_conformance._validate import (
    CapabilityMissing as CapabilityMissing,
)
from agentloom.testing.store_conformance._validate import (
    CapabilityReport as CapabilityReport,
)
from agentloom.testing.store_conformance._validate import (
    CheckResult as CheckResult,
)
from agentloom.testing.store_conformance._validate import (
    check_id as check_id,
)
from agentloom.testing.store_conformance._validate import (
    iter_checks as iter_checks,
)
from agentloom.testing.store_conformance._validate import (
    run_check as run_check,
)
from agentloom.testing.store_conformance._validate import (
    validate as validate,
)
