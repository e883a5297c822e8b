"""The store conformance suite on the sqlite backend, one test per check."""

from __future__ import annotations

import pytest
from _store_factories import sqlite_storage

from agentloom.testing.store_conformance import (
    CapabilityMissing,
    check_id,
    iter_checks,
    run_check,
)

CHECKS = iter_checks()


@pytest.mark.parametrize(("cap", "check"), CHECKS, ids=[check_id(c, f) for c, f in CHECKS])
async def test_conformance(cap, check) -> None:  # type: ignore[no-untyped-def]
    try:
        await run_check(sqlite_storage, cap, check)
    except CapabilityMissing as exc:
        pytest.skip(str(exc))
