"""queued_exchanges: `queue_model_exchange` stores a model reply no later than the run's
next write (a delta, a checkpoint, a tool call's record), in order before it, on
`flush_model_exchanges(run_id)` and on `close()`; a store may write it at once. A store
abandoned without `close()` after that next write (a `kill -9`) still has the reply, and
reads see a queued reply at once."""

from __future__ import annotations

from agentloom.store import CheckpointDelta, RunNotFound
from agentloom.testing.store_conformance._initializer import CheckContext, CheckFn


async def _exchanges(store: object, run_id: str) -> list[tuple[str, int, str, object]]:
    rows = await store.get_model_exchanges(run_id)  # type: ignore[attr-defined]
    return [(r.step_id, r.turn, r.request_hash, r.response) for r in rows]


async def check_queued_reply_rides_with_next_delta(ctx: CheckContext) -> None:
    first = await ctx.open()
    await first.create_run("run-1", "flow", "h", {})
    first.queue_model_exchange("run-1", "s1", 1, "h1", {"text": "one"})
    first.queue_model_exchange("run-1", "s1", 2, "h2", {"text": "two"})
    assert await first.save_delta("run-1", CheckpointDelta(state={"a": 1})) == 1
    # "kill -9": `first` is never closed; what its delta committed is all there is.
    second = await ctx.open()
    assert await _exchanges(second, "run-1") == [("s1", 1, "h1", {"text": "one"}),
                                                 ("s1", 2, "h2", {"text": "two"})]
    latest = await second.load_latest("run-1")
    assert latest is not None and latest.state == {"a": 1} and latest.seq == 1


async def check_queued_reply_stored_before_tool_call(ctx: CheckContext) -> None:
    first = await ctx.open()
    await first.create_run("run-1", "flow", "h", {})
    first.queue_model_exchange("run-1", "agent", 1, "h1", {"calls": ["c1"]})
    await first.record_tool_call("run-1", "agent", 1, "c1", status="in_flight", name="pay")
    second = await ctx.open()
    assert await _exchanges(second, "run-1") == [("agent", 1, "h1", {"calls": ["c1"]})]
    (call,) = await second.get_tool_calls("run-1")
    assert call.call_id == "c1" and call.status == "in_flight"


async def check_flushed_reply_is_stored(ctx: CheckContext) -> None:
    first = await ctx.open()
    await first.create_run("run-1", "flow", "h", {})
    await first.flush_model_exchanges("run-1")  # nothing queued: nothing to do
    first.queue_model_exchange("run-1", "s1", 1, "h1", {"text": "one"})
    await first.flush_model_exchanges("run-1")
    second = await ctx.open()
    assert await _exchanges(second, "run-1") == [("s1", 1, "h1", {"text": "one"})]


async def check_queued_reply_is_read_back(ctx: CheckContext) -> None:
    store = await ctx.open()
    await store.create_run("run-1", "flow", "h", {})
    store.queue_model_exchange("run-1", "s1", 1, "h1", {"text": "one"})
    assert await _exchanges(store, "run-1") == [("s1", 1, "h1", {"text": "one"})]


async def check_queued_reply_written_on_close(ctx: CheckContext) -> None:
    first = await ctx.open()
    await first.create_run("run-1", "flow", "h", {})
    first.queue_model_exchange("run-1", "s1", 1, "h1", {"text": "one"})
    await first.close()
    second = await ctx.open()
    assert await _exchanges(second, "run-1") == [("s1", 1, "h1", {"text": "one"})]


async def check_queued_reply_of_unknown_run(ctx: CheckContext) -> None:
    store = await ctx.open()
    await store.create_run("run-1", "flow", "h", {})
    try:
        store.queue_model_exchange("ghost", "s1", 1, "h1", {"text": "one"})
    except RunNotFound:
        pass  # refused at once: as good as at the next write
    else:
        try:
            await store.record_tool_call("ghost", "s1", 1, "c1", status="in_flight")
        except RunNotFound:
            pass
        else:
            raise AssertionError("the next write of an unknown run must raise RunNotFound")
    # Another run's writes are not held up or failed by it.
    store.queue_model_exchange("run-1", "s1", 1, "h1", {"text": "one"})
    assert await store.save_delta("run-1", CheckpointDelta(state={"a": 1})) == 1
    assert await _exchanges(store, "run-1") == [("s1", 1, "h1", {"text": "one"})]


CHECKS: list[CheckFn] = [
    check_queued_reply_rides_with_next_delta, check_queued_reply_stored_before_tool_call,
    check_flushed_reply_is_stored, check_queued_reply_is_read_back,
    check_queued_reply_written_on_close,
    check_queued_reply_of_unknown_run,
]
