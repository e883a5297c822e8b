"""atomic_write: a write lands whole or not at all, and concurrent writers never collide."""

from __future__ import annotations

import asyncio
from decimal import Decimal

from agentloom.store import Checkpoint, StoreError
from agentloom.testing.store_conformance._initializer import CheckContext, CheckFn


class _NotStorable:
    pass


async def check_failed_write_changes_nothing(ctx: CheckContext) -> None:
    store = await ctx.open()
    await store.create_run("run-1", "flow", "h", {"v": 1})
    await store.save_checkpoint("run-1", Checkpoint(state={"v": 2}, cost_usd=Decimal("1")))
    before = await store.get_run("run-1")
    bad = Checkpoint(state={"v": 3, "oops": _NotStorable()}, status="succeeded",
                     cost_usd=Decimal("9"))
    try:
        await store.save_checkpoint("run-1", bad)
    except StoreError:
        pass
    else:
        raise AssertionError("an unstorable value must raise StoreError")
    after = await store.get_run("run-1")
    cp = await store.load_latest("run-1")
    assert cp is not None and cp.state == {"v": 2} and cp.seq == 1
    assert before is not None and after is not None
    assert (after.status, after.latest_seq, after.cost_usd) == ("running", 1, Decimal("1"))
    assert await store.save_checkpoint("run-1", Checkpoint(state={"v": 4})) == 2


async def check_concurrent_saves_get_distinct_seqs(ctx: CheckContext) -> None:
    store = await ctx.open()
    await store.create_run("run-1", "flow", "h", {})
    seqs = await asyncio.gather(
        *(store.save_checkpoint("run-1", Checkpoint(state={"i": i})) for i in range(20))
    )
    assert sorted(seqs) == list(range(1, 21)), sorted(seqs)
    cp = await store.load_latest("run-1")
    assert cp is not None and cp.seq == 20


async def check_two_stores_on_one_storage(ctx: CheckContext) -> None:
    a, b = await ctx.open(), await ctx.open()
    await a.create_run("run-1", "flow", "h", {})
    seqs = await asyncio.gather(
        *(s.save_checkpoint("run-1", Checkpoint(state={"by": n}))
          for n, s in enumerate([a, b] * 5))
    )
    assert sorted(seqs) == list(range(1, 11)), sorted(seqs)
    latest_a, latest_b = await a.load_latest("run-1"), await b.load_latest("run-1")
    assert latest_a is not None and latest_b is not None and latest_a.seq == latest_b.seq == 10


CHECKS: list[CheckFn] = [
    check_failed_write_changes_nothing,
    check_concurrent_saves_get_distinct_seqs,
    check_two_stores_on_one_storage,
]
