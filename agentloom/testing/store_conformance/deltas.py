"""deltas: a run written as a row per step reads back as the checkpoint those rows make.

`save_delta` stores what one step or tool-loop turn changed; `load_latest` must return
the newest whole checkpoint with every later delta applied in order: state keys set and
removed, step results added and dropped, a loop's conversation appended to, the status,
pause and cost of the last write. Deltas share the run's seq with whole checkpoints, a
failed delta changes nothing, and a store opened after a crash sees every committed one.
"""

from __future__ import annotations

import asyncio
from decimal import Decimal

from agentloom.messages import Message
from agentloom.store import (
    Checkpoint,
    CheckpointDelta,
    PauseInfo,
    RunNotFound,
    StoreError,
    ToolLoopProgress,
)
from agentloom.testing.store_conformance._initializer import CheckContext, CheckFn


class _NotStorable:
    pass


async def check_deltas_rebuild_the_checkpoint(ctx: CheckContext) -> None:
    store = await ctx.open()
    await store.create_run("run-1", "flow", "h", {"topic": "x", "gone": 1})
    first = ToolLoopProgress(step_id="agent", turn=1,
                             messages=[Message.user("q"), Message.assistant("a1")])
    assert await store.save_delta("run-1", CheckpointDelta(
        state={"o1": "one", "report": {"a": 1}}, step_results={"s1": {"text": "one"}},
        tool_loops=[first], extra={"not_taken": {"b": "r"}},
        cost_usd=Decimal("0.5"))) == 1
    more = ToolLoopProgress(step_id="agent", turn=2, messages=[Message.user("tool says")])
    assert await store.save_delta("run-1", CheckpointDelta(
        state={"report": {"a": 1, "b": 2}}, state_removed=["gone"],
        step_results={"sub/x": {"text": "nested"}}, tool_loops=[more],
        loop_messages_kept={"agent": 2}, cost_usd=Decimal("0.75"))) == 2
    paused = PauseInfo(step_id="gate", waiting_for="approval", prompt="ok?")
    assert await store.save_delta("run-1", CheckpointDelta(
        status="paused", state={"o2": "two"}, step_results={"s2": {"text": "two"}},
        step_results_removed=["sub/x"], tool_loops_removed=["agent"], paused=paused,
        extra_removed=["not_taken"])) == 3

    cp = await store.load_latest("run-1")
    assert cp is not None and cp.seq == 3 and cp.status == "paused", cp
    assert cp.state == {"topic": "x", "o1": "one", "report": {"a": 1, "b": 2}, "o2": "two"}
    assert cp.step_results == {"s1": {"text": "one"}, "s2": {"text": "two"}}
    assert cp.tool_loops == [] and cp.paused == paused and cp.extra == {}
    assert cp.cost_usd is None  # the last write did not know it
    assert cp.created_at is not None
    run = await store.get_run("run-1")
    assert run is not None and (run.status, run.latest_seq) == ("paused", 3)
    assert run.cost_usd == Decimal("0.75"), "an unknown cost keeps the one last known"


async def check_loop_messages_append(ctx: CheckContext) -> None:
    store = await ctx.open()
    await store.create_run("run-1", "flow", "h", {})
    msgs = [Message.user("q"), Message.assistant("call"), Message.user("result")]
    await store.save_delta("run-1", CheckpointDelta(tool_loops=[
        ToolLoopProgress(step_id="agent", turn=1, messages=msgs[:2])]))
    await store.save_delta("run-1", CheckpointDelta(
        tool_loops=[ToolLoopProgress(step_id="agent", turn=2, messages=msgs[2:],
                                     pending_calls=[{"id": "c1", "name": "t"}])],
        loop_messages_kept={"agent": 2}))
    cp = await store.load_latest("run-1")
    assert cp is not None
    (loop,) = cp.tool_loops
    assert (loop.turn, loop.messages, loop.pending_calls) == (2, msgs, [{"id": "c1", "name": "t"}])
    # Without `loop_messages_kept` a loop is replaced whole (a trimmed conversation).
    await store.save_delta("run-1", CheckpointDelta(tool_loops=[
        ToolLoopProgress(step_id="agent", turn=3, messages=msgs[1:2])]))
    cp = await store.load_latest("run-1")
    assert cp is not None and cp.tool_loops[0].messages == msgs[1:2]


async def check_whole_checkpoint_and_deltas_share_one_seq(ctx: CheckContext) -> None:
    store = await ctx.open()
    await store.create_run("run-1", "flow", "h", {"a": 0})
    await store.save_delta("run-1", CheckpointDelta(state={"a": 1, "b": 1}))
    seq = await store.save_checkpoint("run-1", Checkpoint(state={"a": 2}, status="running"))
    assert seq == 2
    assert await store.save_delta("run-1", CheckpointDelta(state={"c": 3})) == 3
    cp = await store.load_latest("run-1")
    assert cp is not None and cp.seq == 3
    assert cp.state == {"a": 2, "c": 3}, "a whole checkpoint replaces what came before"
    seqs = await asyncio.gather(
        *(store.save_delta("run-1", CheckpointDelta(state={f"k{i}": i})) for i in range(10)),
        *(store.save_checkpoint("run-1", Checkpoint(state={"w": i})) for i in range(2)))
    assert sorted(seqs) == list(range(4, 16)), sorted(seqs)
    run = await store.get_run("run-1")
    assert run is not None and run.latest_seq == 15


async def check_failed_delta_changes_nothing(ctx: CheckContext) -> None:
    store = await ctx.open()
    await store.create_run("run-1", "flow", "h", {"v": 1})
    await store.save_delta("run-1", CheckpointDelta(state={"v": 2}, cost_usd=Decimal("1")))
    try:
        await store.save_delta("run-1", CheckpointDelta(
            status="succeeded", state={"oops": _NotStorable()}, cost_usd=Decimal("9")))
    except StoreError:
        pass
    else:
        raise AssertionError("an unstorable value in a delta must raise StoreError")
    run = await store.get_run("run-1")
    assert run is not None and (run.status, run.latest_seq, run.cost_usd) == (
        "running", 1, Decimal("1"))
    cp = await store.load_latest("run-1")
    assert cp is not None and cp.state == {"v": 2} and cp.seq == 1
    try:
        await store.save_delta("ghost", CheckpointDelta())
    except RunNotFound:
        pass
    else:
        raise AssertionError("save_delta on an unknown run must raise RunNotFound")


async def check_reopen_sees_committed_deltas(ctx: CheckContext) -> None:
    first = await ctx.open()
    await first.create_run("run-1", "flow", "h", {"q": "x"})
    for i in range(5):
        await first.save_delta("run-1", CheckpointDelta(
            state={f"o{i}": i}, step_results={f"s{i}": {"output": i}}))
    await first.record_model_exchange("run-1", "s5", 1, "h5", {"text": "paid"})
    # "kill -9": `first` is never closed (the context closes it after the check).
    second = await ctx.open()
    cp = await second.load_latest("run-1")
    assert cp is not None and cp.seq == 5
    assert cp.state == {"q": "x", **{f"o{i}": i for i in range(5)}}
    assert sorted(cp.step_results) == [f"s{i}" for i in range(5)]
    assert [e.request_hash for e in await second.get_model_exchanges("run-1")] == ["h5"]
    assert await second.save_delta("run-1", CheckpointDelta(state={"o5": 5})) == 6


CHECKS: list[CheckFn] = [
    check_deltas_rebuild_the_checkpoint,
    check_loop_messages_append,
    check_whole_checkpoint_and_deltas_share_one_seq,
    check_failed_delta_changes_nothing,
    check_reopen_sees_committed_deltas,
]
