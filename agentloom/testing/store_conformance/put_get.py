"""put/get: a run and its checkpoints go in and come back out unchanged."""

from __future__ import annotations

import dataclasses
from decimal import Decimal

from agentloom.messages import Message, ToolCallPart
from agentloom.store import (
    Checkpoint,
    PauseInfo,
    RunExists,
    RunNotFound,
    StoreError,
    ToolLoopProgress,
)
from agentloom.testing.store_conformance._initializer import CheckContext, CheckFn


def _rich_checkpoint() -> Checkpoint:
    call = ToolCallPart(id="c1", name="lookup", arguments='{"q": "x"}')
    return Checkpoint(
        state={"topic": "ünïcode ✓", "n": 3, "ratio": 0.5, "flags": [True, None],
               "blob": b"\x00\x01\xff", "price": Decimal("0.000123"),
               "nested": {"a": {"b": [1, {"c": "d"}]}}},
        status="paused",
        step_results={"s1": {"output": "hi", "cost_usd": Decimal("0.01"), "tokens": 12}},
        conversations={"chat": {"messages": [Message.system("be brief"), Message.user("hi")]}},
        tool_loops=[ToolLoopProgress(
            step_id="s2", turn=2,
            messages=[Message.user("q"), Message(role="assistant", parts=(call,))],
            pending_calls=[{"id": "c1", "name": "lookup", "arguments": '{"q": "x"}'}],
            results={"c0": "earlier result"},
        )],
        paused=PauseInfo(step_id="s2", waiting_for="answer", prompt="Which one?", call_id="c1"),
        cost_usd=Decimal("0.0421"),
        extra={"router": {"r1": "branch_a"}},
    )


async def check_create_then_load(ctx: CheckContext) -> None:
    store = await ctx.open()
    run = await store.create_run("run-1", "flow", "sha256:abc", {"topic": "x"}, {"user": "u1"})
    assert run.run_id == "run-1" and run.workflow_name == "flow"
    assert run.workflow_hash == "sha256:abc" and run.status == "running"
    assert run.latest_seq == 0 and run.cost_usd is None and run.meta == {"user": "u1"}
    cp = await store.load_latest("run-1")
    assert cp is not None and cp.seq == 0 and cp.state == {"topic": "x"}
    got = await store.get_run("run-1")
    assert got is not None and got.run_id == "run-1" and got.started_at == run.started_at
    assert await store.get_run("nope") is None
    assert await store.load_latest("nope") is None


async def check_create_twice_is_refused(ctx: CheckContext) -> None:
    store = await ctx.open()
    await store.create_run("run-1", "flow", "h1", {"v": 1})
    try:
        await store.create_run("run-1", "other", "h2", {"v": 2})
    except RunExists:
        pass
    else:
        raise AssertionError("create_run on an existing id must raise RunExists")
    run = await store.get_run("run-1")
    cp = await store.load_latest("run-1")
    assert run is not None and run.workflow_name == "flow" and run.workflow_hash == "h1"
    assert cp is not None and cp.state == {"v": 1}


async def check_round_trip_of_every_field(ctx: CheckContext) -> None:
    store = await ctx.open()
    await store.create_run("run-1", "flow", "h", {})
    original = _rich_checkpoint()
    seq = await store.save_checkpoint("run-1", original)
    assert seq == 1
    loaded = await store.load_latest("run-1")
    assert loaded is not None and loaded.seq == 1 and loaded.created_at is not None
    for f in dataclasses.fields(Checkpoint):
        if f.name in ("seq", "created_at"):
            continue
        assert getattr(loaded, f.name) == getattr(original, f.name), f.name


async def check_seq_is_monotonic(ctx: CheckContext) -> None:
    store = await ctx.open()
    await store.create_run("run-1", "flow", "h", {})
    seqs = [await store.save_checkpoint("run-1", Checkpoint(state={"i": i})) for i in range(5)]
    assert seqs == [1, 2, 3, 4, 5], seqs
    cp = await store.load_latest("run-1")
    assert cp is not None and cp.seq == 5 and cp.state == {"i": 4}
    run = await store.get_run("run-1")
    assert run is not None and run.latest_seq == 5


async def check_save_to_unknown_run(ctx: CheckContext) -> None:
    store = await ctx.open()
    try:
        await store.save_checkpoint("ghost", Checkpoint(state={}))
    except RunNotFound:
        pass
    else:
        raise AssertionError("save_checkpoint on an unknown run must raise RunNotFound")
    assert await store.get_run("ghost") is None
    assert await store.load_latest("ghost") is None


async def check_status_and_cost(ctx: CheckContext) -> None:
    store = await ctx.open()
    await store.create_run("run-1", "flow", "h", {})
    await store.save_checkpoint("run-1", Checkpoint(state={}, status="paused",
                                                    cost_usd=Decimal("0.5")))
    run = await store.get_run("run-1")
    assert run is not None and run.status == "paused" and run.cost_usd == Decimal("0.5")
    # None means "unknown in this write": the stored cost stays.
    await store.save_checkpoint("run-1", Checkpoint(state={}, status="running"))
    run = await store.get_run("run-1")
    assert run is not None and run.cost_usd == Decimal("0.5") and run.status == "running"
    before = run.updated_at
    await store.set_status("run-1", "failed")
    run = await store.get_run("run-1")
    assert run is not None and run.status == "failed" and run.updated_at > before
    for bad in ("finished", ""):
        try:
            await store.set_status("run-1", bad)
        except StoreError:
            pass
        else:
            raise AssertionError(f"set_status({bad!r}) must raise StoreError")
    try:
        await store.set_status("ghost", "failed")
    except RunNotFound:
        pass
    else:
        raise AssertionError("set_status on an unknown run must raise RunNotFound")


async def check_saved_state_is_a_copy(ctx: CheckContext) -> None:
    store = await ctx.open()
    state = {"items": [1, 2]}
    await store.create_run("run-1", "flow", "h", state)
    state["items"].append(3)
    cp = await store.load_latest("run-1")
    assert cp is not None and cp.state == {"items": [1, 2]}
    cp.state["items"].append(99)
    again = await store.load_latest("run-1")
    assert again is not None and again.state == {"items": [1, 2]}


async def check_pydantic_model_is_stored_as_dict(ctx: CheckContext) -> None:
    from pydantic import BaseModel

    class Classification(BaseModel):
        label: str
        score: float

    store = await ctx.open()
    await store.create_run("run-1", "flow", "h", {})
    await store.save_checkpoint(
        "run-1", Checkpoint(state={"c": Classification(label="spam", score=0.9)})
    )
    cp = await store.load_latest("run-1")
    assert cp is not None and cp.state == {"c": {"label": "spam", "score": 0.9}}


CHECKS: list[CheckFn] = [
    check_create_then_load,
    check_create_twice_is_refused,
    check_round_trip_of_every_field,
    check_seq_is_monotonic,
    check_save_to_unknown_run,
    check_status_and_cost,
    check_saved_state_is_a_copy,
    check_pydantic_model_is_stored_as_dict,
]
