"""The store conformance suite on a real PostgreSQL server (see conftest.py)."""

from __future__ import annotations

import pytest
from _store_factories import postgres_factory

from agentloom.testing.store_conformance import (
    CapabilityMissing,
    check_id,
    iter_checks,
    run_check,
)

pytestmark = pytest.mark.postgres
CHECKS = iter_checks()


@pytest.mark.parametrize(("cap", "check"), CHECKS, ids=[check_id(c, f) for c, f in CHECKS])
async def test_conformance(pg_server, cap, check) -> None:  # type: ignore[no-untyped-def]
    try:
        await run_check(postgres_factory(pg_server.admin_dsn), cap, check)
    except CapabilityMissing as exc:
        pytest.skip(str(exc))


async def test_two_processes_worth_of_connections_claim_once(pg_server) -> None:  # type: ignore[no-untyped-def]
    """Many stores (separate connections) race for one run: exactly one wins."""
    import asyncio

    from agentloom.store import PostgresStore

    async with postgres_factory(pg_server.admin_dsn).storage() as opener:
        stores = [opener(now=None) for _ in range(6)]
        try:
            await stores[0].create_run("run-1", "flow", "h", {})
            wins = await asyncio.gather(
                *(s.claim_run("run-1", f"w{i}", 60) for i, s in enumerate(stores))
            )
            assert sum(wins) == 1, wins
            assert isinstance(stores[0], PostgresStore)
        finally:
            for s in stores:
                await s.close()
