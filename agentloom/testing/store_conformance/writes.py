"""writes: `load_writes` lists a run's kept writes, whole checkpoints and deltas, in seq
order, from after a given seq (the run page replays them for the state after a step)."""

from __future__ import annotations

from agentloom.store import Checkpoint, CheckpointDelta
from agentloom.testing.store_conformance._initializer import CheckContext, CheckFn


async def check_writes_in_seq_order(ctx: CheckContext) -> None:
    store = await ctx.open()
    await store.create_run("run-1", "flow", "h", {"a": 0})
    await store.save_delta("run-1", CheckpointDelta(state={"a": 1}, step_results={"s": {"x": 1}}))
    await store.save_checkpoint("run-1", Checkpoint(state={"a": 2}))
    await store.save_delta("run-1", CheckpointDelta(state={"b": 3}, status="succeeded"))
    writes = await store.load_writes("run-1")  # type: ignore[attr-defined]
    assert [w.seq for w in writes] == [0, 1, 2, 3], [w.seq for w in writes]
    assert [w.checkpoint is not None for w in writes] == [True, False, True, False]
    assert all((w.checkpoint is None) != (w.delta is None) for w in writes)
    assert writes[0].checkpoint.state == {"a": 0}
    assert writes[1].delta.state == {"a": 1} and writes[1].delta.step_results == {"s": {"x": 1}}
    assert writes[2].checkpoint.state == {"a": 2}
    assert writes[3].delta.status == "succeeded"
    later = await store.load_writes("run-1", after_seq=1)  # type: ignore[attr-defined]
    assert [w.seq for w in later] == [2, 3]


async def check_unknown_run_has_no_writes(ctx: CheckContext) -> None:
    store = await ctx.open()
    assert await store.load_writes("ghost") == []  # type: ignore[attr-defined]


CHECKS: list[CheckFn] = [check_writes_in_seq_order, check_unknown_run_has_no_writes]
