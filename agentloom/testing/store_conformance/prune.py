"""prune: finished runs older than a limit go, with everything they own; others stay."""

from __future__ import annotations

from datetime import timedelta

from agentloom.store import CheckpointDelta
from agentloom.testing.store_conformance._initializer import CheckContext, CheckFn


async def check_prune_old_finished_runs(ctx: CheckContext) -> None:
    store = await ctx.open()
    for rid, status in [("old-ok", "succeeded"), ("old-bad", "failed"),
                        ("old-running", "running"), ("old-paused", "paused")]:
        await store.create_run(rid, "flow", "h", {})
        await store.record_tool_call(rid, "s", 1, "c", status="done", result=1)
        await store.record_model_exchange(rid, "s", 1, "h", {"t": 1})
        await store.save_delta(rid, CheckpointDelta(state={"step": 1}))
        if status != "running":
            await store.set_status(rid, status)
    ctx.now.advance(timedelta(days=31))
    await store.create_run("new-ok", "flow", "h", {})
    await store.set_status("new-ok", "succeeded")
    removed = await store.prune(timedelta(days=30))
    assert removed == 2, removed
    left = {r.run_id for r in await store.list_runs(limit=None)}
    assert left == {"old-running", "old-paused", "new-ok"}, left
    for rid in ("old-ok", "old-bad"):
        assert await store.get_run(rid) is None
        assert await store.load_latest(rid) is None
        assert await store.get_tool_calls(rid) == []
        assert await store.get_model_exchanges(rid) == []
    assert len(await store.get_tool_calls("old-paused")) == 1
    kept = await store.load_latest("old-paused")
    assert kept is not None and kept.state == {"step": 1}
    # An explicit status set reaches non-finished runs too.
    assert await store.prune(timedelta(days=30), statuses=frozenset({"paused"})) == 1
    assert await store.prune(timedelta(days=30)) == 0


CHECKS: list[CheckFn] = [check_prune_old_finished_runs]
