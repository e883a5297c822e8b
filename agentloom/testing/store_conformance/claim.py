"""claim: one worker at a time may resume a run; a lapsed lease frees it."""

from __future__ import annotations

from datetime import timedelta

from agentloom.store import RunNotFound
from agentloom.testing.store_conformance._initializer import CheckContext, CheckFn


async def check_claim_and_lease(ctx: CheckContext) -> None:
    a, b = await ctx.open(), await ctx.open()
    await a.create_run("run-1", "flow", "h", {})
    assert await a.claim_run("run-1", "w1", 60) is True
    assert await b.claim_run("run-1", "w2", 60) is False
    assert await a.claim_run("run-1", "w1", 60) is True, "the holder may renew"
    run = await b.get_run("run-1")
    assert run is not None and run.claimed_by == "w1" and run.lease_until is not None
    ctx.now.advance(timedelta(seconds=61))
    assert await b.claim_run("run-1", "w2", 60) is True, "a lapsed lease is free"
    assert await a.claim_run("run-1", "w1", 60) is False
    await b.release_claim("run-1", "w2")
    assert await a.claim_run("run-1", "w1", 60) is True
    try:
        await a.claim_run("ghost", "w1", 60)
    except RunNotFound:
        pass
    else:
        raise AssertionError("claim_run on an unknown run must raise RunNotFound")


CHECKS: list[CheckFn] = [check_claim_and_lease]
