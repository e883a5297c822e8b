"""resume_after_crash: what one store wrote, a store opened after a crash reads back.

The first store is abandoned without `close()`, as a process killed with SIGKILL would
leave it; a second store on the same storage must see every committed write: the latest
checkpoint (mid tool loop, paused), which tool calls are done (with results) or still in
flight, and the stored model exchanges. It then carries on from the next seq.
"""

from __future__ import annotations

from agentloom.messages import Message
from agentloom.store import Checkpoint, PauseInfo, ToolLoopProgress
from agentloom.testing.store_conformance._initializer import CheckContext, CheckFn


async def check_reopen_sees_committed_writes(ctx: CheckContext) -> None:
    first = await ctx.open()
    await first.create_run("run-1", "flow", "sha256:wf", {"q": "x"})
    loop = ToolLoopProgress(step_id="agent", turn=2, messages=[Message.user("x")],
                            pending_calls=[{"id": "c1", "name": "pay", "arguments": "{}"},
                                           {"id": "c2", "name": "read", "arguments": "{}"}],
                            results={"c1": "paid"})
    cp = Checkpoint(state={"q": "x", "done": ["s1"]}, status="paused",
                    step_results={"s1": {"output": "a"}}, tool_loops=[loop],
                    paused=PauseInfo(step_id="agent", waiting_for="answer", call_id="c3"))
    await first.save_checkpoint("run-1", cp)
    await first.record_model_exchange("run-1", "agent", 1, "h1", {"text": "call tools"})
    await first.record_tool_call("run-1", "agent", 1, "c1", status="in_flight", name="pay")
    await first.record_tool_call("run-1", "agent", 1, "c1", status="done", result="paid")
    await first.record_tool_call("run-1", "agent", 1, "c2", status="in_flight", name="read",
                                 idempotent=True)
    # "kill -9": `first` is never closed (the context closes it after the check).

    second = await ctx.open()
    latest = await second.load_latest("run-1")
    assert latest is not None and latest.seq == 1 and latest.status == "paused"
    assert latest.tool_loops == [loop] and latest.paused == cp.paused
    assert latest.state == {"q": "x", "done": ["s1"]}
    calls = {c.call_id: c for c in await second.get_tool_calls("run-1", "agent")}
    assert calls["c1"].status == "done" and calls["c1"].result == "paid"
    assert calls["c2"].status == "in_flight" and calls["c2"].idempotent is True
    (exchange,) = await second.get_model_exchanges("run-1", "agent")
    assert exchange.request_hash == "h1" and exchange.response == {"text": "call tools"}
    run = await second.get_run("run-1")
    assert run is not None and run.status == "paused" and run.workflow_hash == "sha256:wf"
    assert await second.save_checkpoint("run-1", Checkpoint(state={}, status="running")) == 2


async def check_close_then_reopen(ctx: CheckContext) -> None:
    first = await ctx.open()
    await first.create_run("run-1", "flow", "h", {"a": 1})
    await first.save_checkpoint("run-1", Checkpoint(state={"a": 2}, status="succeeded"))
    await first.close()
    second = await ctx.open()
    cp = await second.load_latest("run-1")
    assert cp is not None and cp.state == {"a": 2} and cp.status == "succeeded"


CHECKS: list[CheckFn] = [check_reopen_sees_committed_writes, check_close_then_reopen]
