"""A claim's lease that is no span of time (NaN, infinity, 1e300, 0, -5, a year) is
refused with one `StoreError` saying what a lease may be, on every backend, and the run's
row is left unclaimed; before, 1e300 escaped as an OverflowError and NaN as a ValueError
from the date arithmetic, and -5 "took" a claim that had already lapsed."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentloom.store import MemoryStore, SqliteStore, StoreError


@pytest.mark.parametrize("lease", [float("nan"), float("inf"), 1e300, 0, -5.0,
                                   366 * 86400.0], ids=str)
@pytest.mark.parametrize("backend", ["sqlite", "memory"])
async def test_an_absurd_lease_is_refused_and_claims_nothing(tmp_path: Path, lease: float,
                                                              backend: str) -> None:
    store = SqliteStore(tmp_path / "runs.db") if backend == "sqlite" else MemoryStore()
    async with store:
        await store.create_run("r", "flow", "h", {})
        with pytest.raises(StoreError, match=r"a claim's lease must be more than 0 and at "
                                             r"most 2592000 seconds \(30 days\), got"):
            await store.claim_run("r", "w1", lease)
        run = await store.get_run("r")
        assert run is not None and run.claimed_by is None and run.lease_until is None
        assert await store.claim_run("r", "w1", 60) is True  # a sane one still works
