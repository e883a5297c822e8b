"""Queued model replies (`queue_model_exchange`): the window they allow and how their
failures surface, on a real SQLite file. The conformance suite checks the ordering on
every backend; these check what only a deferred write has: the timer that writes a reply
no later write carried, a failed reply failing the write that carried it (atomically),
a failure the timer met raised by the run's next call, a real SIGKILL on either side of
the window, and through the engine: a reply stored before the run's next model call,
and a run whose replies can't be stored failing.
"""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentloom.store import CheckpointDelta, SqliteStore
from agentloom.store._pending import PendingWrites
from agentloom.testing.scripted import FunctionModel
from agentloom.workflow import arun_workflow, load_workflow_text
from agentloom.workflow.durable.run import DurableRun

REFUSE_REPLIES = ("CREATE TRIGGER refuse BEFORE INSERT ON model_exchanges "
                  "BEGIN SELECT RAISE(ABORT, 'no room for replies'); END")


def _stored(path: Path, run_id: str) -> list[tuple[str, int]]:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT step_id, turn FROM model_exchanges WHERE run_id = ? "
                          "ORDER BY step_id", (run_id,)).fetchall()


def _refuse_replies(path: Path) -> None:
    with sqlite3.connect(path) as db:
        db.execute(REFUSE_REPLIES)


async def _store_with_run(path: Path) -> SqliteStore:
    store = SqliteStore(path)
    await store.create_run("r", "flow", "h", {})
    return store


async def test_queued_reply_no_write_carries_is_written_by_the_timer(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    store = await _store_with_run(path)
    store.queue_model_exchange("r", "s1", 1, "h1", {"text": "one"})
    # No later write and no close: the timer hands it to the store's thread. The bound
    # is generous; what is checked is that it happens, not how fast.
    for _ in range(1000):
        if _stored(path, "r"):
            break
        await asyncio.sleep(0.01)
    assert _stored(path, "r") == [("s1", 1)]
    await store.close()


async def test_failed_queued_reply_fails_the_write_that_carries_it(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    store = await _store_with_run(path)
    _refuse_replies(path)
    store.queue_model_exchange("r", "s1", 1, "h1", {"text": "one"})
    with pytest.raises(sqlite3.IntegrityError, match="no room for replies"):
        await store.save_delta("r", CheckpointDelta(state={"a": 1}))
    latest = await store.load_latest("r")
    assert latest is not None and latest.seq == 0 and latest.state == {}, "rolled back whole"
    assert await store.save_delta("r", CheckpointDelta(state={"a": 1})) == 1
    await store.close()


async def test_failed_queued_reply_is_raised_by_close(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    store = await _store_with_run(path)
    _refuse_replies(path)
    store.queue_model_exchange("r", "s1", 1, "h1", {"text": "one"})
    with pytest.raises(sqlite3.IntegrityError, match="no room for replies"):
        await store.close()


async def test_failure_the_timer_met_is_raised_by_the_runs_next_call() -> None:
    sent = asyncio.Event()

    async def send(statements: list[Any]) -> list[Any]:
        sent.set()
        raise OSError("disk full")

    pending = PendingWrites(send, delay=0.0)
    pending.add("r", ("INSERT ...", ()))
    pending.add("other", ("INSERT ...", ()))
    await sent.wait()  # the timer sent both, in one batch, and it failed
    with pytest.raises(OSError, match="disk full"):
        pending.take("r")
    assert pending.take("r") == [], "raised once"
    with pytest.raises(OSError, match="disk full"):
        await pending.settle("other")
    await pending.close()  # nothing left to report


class _Factory:
    default_model = "m"

    def __init__(self, model: Any) -> None:
        self.model = model

    def client(self, **_: Any) -> Any:
        return self.model


async def test_a_queued_reply_is_stored_before_the_runs_next_model_call(
        tmp_path: Path) -> None:
    # Two steps with no order between them: the first step's reply is queued (no write
    # of the run comes between the two calls), and the second call finds it stored.
    path = tmp_path / "runs.db"
    store = SqliteStore(path)
    seen: list[list[tuple[str, int]]] = []

    def reply(request: Any) -> str:
        seen.append(_stored(path, "r"))
        return "ok"

    wf = load_workflow_text("name: two\nsteps:\n"
                            "  - {id: a, type: llm_call, prompt: pa, output: x}\n"
                            "  - {id: b, type: llm_call, prompt: pb, output: y}\n")
    durable = DurableRun(store=store, run_id="r", workflow_hash="h")
    result = await arun_workflow(wf, clients=_Factory(FunctionModel(reply)), durable=durable)
    assert result.ok, result.error
    assert len(seen) == 2 and seen[0] == [] and len(seen[1]) == 1, seen
    assert _stored(path, "r") == [("a", 1), ("b", 1)]
    await store.close()


async def test_a_run_whose_replies_cannot_be_stored_fails_with_that_error(
        tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    store = SqliteStore(path)
    await store.list_runs(limit=1)  # the schema, for the trigger
    _refuse_replies(path)
    wf = load_workflow_text("name: one\nsteps:\n"
                            "  - {id: a, type: llm_call, prompt: pa, output: x}\n"
                            "  - {id: b, type: llm_call, prompt: pb, output: y, "
                            "depends_on: [a]}\n")
    durable = DurableRun(store=store, run_id="r", workflow_hash="h")
    calls: list[str] = []
    model = FunctionModel(lambda request: calls.append("call") or "ok")
    with pytest.raises(ExceptionGroup) as info:  # as any failed checkpoint write
        await arun_workflow(wf, clients=_Factory(model), durable=durable)
    (error,) = info.value.exceptions
    assert isinstance(error, sqlite3.IntegrityError) and "no room for replies" in str(error)
    assert calls == ["call"], "the dependent step never ran"
    await store.close()


_KILLED = r"""
import asyncio, sys, time
from agentloom.store import CheckpointDelta, SqliteStore

async def main():
    store = SqliteStore(sys.argv[1])
    await store.create_run("r", "flow", "h", {})
    store.queue_model_exchange("r", "s1", 1, "h1", {"text": "paid for"})
    if sys.argv[2] == "write":
        await store.save_delta("r", CheckpointDelta(state={"a": 1}))
    print("ready", flush=True)
    time.sleep(60)  # the event loop held: no timer, no other write; killed here

asyncio.run(main())
"""


@pytest.mark.parametrize(("then", "kept"), [("write", [("s1", 1)]), ("nothing", [])])
def test_sigkill_inside_and_after_the_window(tmp_path: Path, then: str,
                                             kept: list[tuple[str, int]]) -> None:
    # After the run's next write the reply is stored, whatever happens next; killed
    # before any write and before the timer could run, it is lost (the window: a resume
    # asks the model again), and nothing else of the run is damaged.
    path = tmp_path / "runs.db"
    proc = subprocess.Popen([sys.executable, "-c", _KILLED, str(path), then],
                            stdout=subprocess.PIPE, cwd=Path(__file__).parents[2])
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == b"ready"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert _stored(path, "r") == kept
    with sqlite3.connect(path) as db:
        (seq,) = db.execute("SELECT latest_seq FROM runs WHERE run_id = 'r'").fetchone()
    assert seq == (1 if then == "write" else 0)


def test_a_store_used_from_a_second_event_loop_still_writes_queued_replies(
        tmp_path: Path) -> None:
    # A timer armed on a loop that has ended never fires: the next loop arms its own.
    path = tmp_path / "runs.db"
    store = SqliteStore(path)

    async def first() -> None:
        await store.create_run("r", "flow", "h", {})
        store.queue_model_exchange("r", "s1", 1, "h1", {"text": "one"})
        await store.save_delta("r", CheckpointDelta(state={"a": 1}))
        store.queue_model_exchange("r", "s2", 1, "h2", {"text": "two"})  # loop ends first

    async def second() -> None:
        store.queue_model_exchange("r", "s3", 1, "h3", {"text": "three"})
        for _ in range(1000):
            if ("s3", 1) in _stored(path, "r"):
                break
            await asyncio.sleep(0.01)

    asyncio.run(first())
    assert _stored(path, "r") == [("s1", 1)]
    asyncio.run(second())
    assert _stored(path, "r") == [("s1", 1), ("s2", 1), ("s3", 1)]


async def test_settle_waits_for_a_write_still_carrying_the_runs_reply() -> None:
    # A step's checkpoint took the reply and is on its way when a sibling step asks the
    # model: the call waits until that write is done, not only for replies still queued.
    sent: list[Any] = []

    async def send(statements: list[Any]) -> list[list[tuple[Any, ...]]]:
        sent.extend(statements)
        return [[("r",)] for _ in statements]

    pending = PendingWrites(send, delay=60)
    pending.add("r", ("INSERT reply", ()))
    assert pending.take("r") == [("INSERT reply", ())]
    pending.carrying("r")
    waiter = asyncio.ensure_future(pending.settle("r"))
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert not waiter.done(), "settled while the carrying write was on its way"
    pending.carried("r")
    await asyncio.wait_for(waiter, 5)
    await pending.settle("r")  # nothing on its way any more: returns at once
    assert sent == []
    await pending.close()
