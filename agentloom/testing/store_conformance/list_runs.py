"""list: `list_runs` gives summary rows, newest first, filtered by status, limited."""

from __future__ import annotations

from decimal import Decimal

from agentloom.store import Checkpoint
from agentloom.testing.store_conformance._initializer import CheckContext, CheckFn


async def check_newest_first_with_summary_fields(ctx: CheckContext) -> None:
    store = await ctx.open()
    for i in range(3):
        await store.create_run(f"run-{i}", f"flow-{i}", "h", {})
    await store.save_checkpoint("run-0", Checkpoint(state={}, status="succeeded",
                                                    cost_usd=Decimal("1.25")))
    runs = await store.list_runs()
    assert [r.run_id for r in runs] == ["run-0", "run-2", "run-1"], [r.run_id for r in runs]
    top = runs[0]
    assert top.workflow_name == "flow-0" and top.status == "succeeded"
    assert top.cost_usd == Decimal("1.25") and top.updated_at > top.started_at
    assert runs[1].cost_usd is None


async def check_filter_and_limit(ctx: CheckContext) -> None:
    store = await ctx.open()
    for i in range(5):
        await store.create_run(f"run-{i}", "flow", "h", {})
    await store.set_status("run-1", "paused")
    await store.set_status("run-3", "paused")
    paused = await store.list_runs(status="paused")
    assert {r.run_id for r in paused} == {"run-1", "run-3"}
    assert [r.run_id for r in await store.list_runs(limit=2)] == ["run-3", "run-1"]
    assert len(await store.list_runs(limit=None)) == 5
    assert await store.list_runs(status="cancelled") == []


CHECKS: list[CheckFn] = [check_newest_first_with_summary_fields, check_filter_and_limit]
