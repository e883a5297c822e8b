"""pending tool calls: write-ahead records of tool calls and model exchanges.

A tool call is stored `in_flight` before it runs and `done` with its result after; a
resume repeats no `done` call, and re-runs an `in_flight` one only if it is idempotent.
A model exchange is stored as soon as the reply arrives, so a resume does not pay twice.
"""

from __future__ import annotations

from agentloom.store import RunNotFound, StoreError
from agentloom.testing.store_conformance._initializer import CheckContext, CheckFn


async def check_in_flight_then_done(ctx: CheckContext) -> None:
    store = await ctx.open()
    await store.create_run("run-1", "flow", "h", {})
    await store.record_tool_call("run-1", "s1", 1, "c1", status="in_flight", name="pay",
                                 arguments={"amount": 5}, idempotent=False)
    await store.record_tool_call("run-1", "s1", 1, "c2", status="in_flight", name="read",
                                 arguments={"path": "a"}, idempotent=True)
    await store.record_tool_call("run-1", "s2", 1, "c9", status="in_flight", name="x")
    calls = {c.call_id: c for c in await store.get_tool_calls("run-1", "s1")}
    assert set(calls) == {"c1", "c2"}
    assert calls["c1"].status == "in_flight" and calls["c1"].idempotent is False
    assert calls["c2"].idempotent is True and calls["c1"].arguments == {"amount": 5}
    await store.record_tool_call("run-1", "s1", 1, "c1", status="done",
                                 result={"receipt": "r-1"})
    c1 = next(c for c in await store.get_tool_calls("run-1", "s1") if c.call_id == "c1")
    assert c1.status == "done" and c1.result == {"receipt": "r-1"}
    assert c1.name == "pay" and c1.arguments == {"amount": 5}, "done keeps name/arguments"
    assert len(await store.get_tool_calls("run-1")) == 3


async def check_done_never_goes_back(ctx: CheckContext) -> None:
    store = await ctx.open()
    await store.create_run("run-1", "flow", "h", {})
    await store.record_tool_call("run-1", "s1", 1, "c1", status="done", result="ok")
    try:
        await store.record_tool_call("run-1", "s1", 1, "c1", status="in_flight")
    except StoreError:
        pass
    else:
        raise AssertionError("a done tool call must not go back to in_flight")
    (c1,) = await store.get_tool_calls("run-1", "s1")
    assert c1.status == "done" and c1.result == "ok"


async def check_unknown_run_and_bad_status(ctx: CheckContext) -> None:
    store = await ctx.open()
    try:
        await store.record_tool_call("ghost", "s1", 1, "c1", status="in_flight")
    except RunNotFound:
        pass
    else:
        raise AssertionError("record_tool_call on an unknown run must raise RunNotFound")
    await store.create_run("run-1", "flow", "h", {})
    try:
        await store.record_tool_call("run-1", "s1", 1, "c1", status="started")
    except StoreError:
        pass
    else:
        raise AssertionError("an unknown tool call status must raise StoreError")
    assert await store.get_tool_calls("run-1") == []


async def check_model_exchanges(ctx: CheckContext) -> None:
    store = await ctx.open()
    await store.create_run("run-1", "flow", "h", {})
    await store.record_model_exchange("run-1", "s1", 1, "hash-a", {"text": "first"})
    await store.record_model_exchange("run-1", "s1", 2, "hash-b", {"text": "second"})
    await store.record_model_exchange("run-1", "s2", 1, "hash-c", {"text": "other"})
    got = await store.get_model_exchanges("run-1", "s1")
    assert [(x.turn, x.request_hash, x.response) for x in got] == [
        (1, "hash-a", {"text": "first"}), (2, "hash-b", {"text": "second"})]
    # The same key again replaces (a retried write after a crash is harmless).
    await store.record_model_exchange("run-1", "s1", 1, "hash-a", {"text": "first!"})
    got = await store.get_model_exchanges("run-1", "s1")
    assert len(got) == 2 and got[0].response == {"text": "first!"}
    assert len(await store.get_model_exchanges("run-1")) == 3
    try:
        await store.record_model_exchange("ghost", "s1", 1, "h", {})
    except RunNotFound:
        pass
    else:
        raise AssertionError("record_model_exchange on an unknown run must raise RunNotFound")


CHECKS: list[CheckFn] = [
    check_in_flight_then_done,
    check_done_never_goes_back,
    check_unknown_run_and_bad_status,
    check_model_exchanges,
]
