"""writes: `load_writes` lists a run's kept writes, whole checkpoints and deltas, in seq
order, from after a given seq (the run page replays them for the state after a step);
`load_latest_many` is `load_latest` of several runs at once (the run list's page)."""

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


async def check_latest_of_many_runs(ctx: CheckContext) -> None:
    store = await ctx.open()
    for i in range(3):
        await store.create_run(f"run-{i}", "flow", "h", {"i": i})
    await store.save_delta("run-0", CheckpointDelta(state={"a": 1}, status="paused"))
    await store.save_checkpoint("run-1", Checkpoint(state={"b": 2}, status="running"))
    await store.save_delta("run-1", CheckpointDelta(state={"c": 3}, step_results={"s": 1}))
    many = await store.load_latest_many(  # type: ignore[attr-defined]
        ["run-0", "run-1", "run-2", "ghost", "run-0"])
    assert sorted(many) == ["run-0", "run-1", "run-2"], sorted(many)
    for run_id, cp in many.items():
        one = await store.load_latest(run_id)
        assert one is not None
        assert (cp.seq, cp.status, cp.state, cp.step_results) == (
            one.seq, one.status, one.state, one.step_results), run_id
    assert many["run-1"].state == {"b": 2, "c": 3} and many["run-0"].status == "paused"
    assert await store.load_latest_many([]) == {}  # type: ignore[attr-defined]


CHECKS: list[CheckFn] = [check_writes_in_seq_order, check_unknown_run_has_no_writes,
                         check_latest_of_many_runs]
