"""The state after each step: replayed from the run's stored writes (a delta per step, a
whole checkpoint on a resume), served per step by the API when the step is opened,
redacted as stored, and printed by `agentloom runs show`."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from agentloom.store import Checkpoint, CheckpointDelta, SqliteStore
from agentloom.testing.scripted import ScriptedModel
from agentloom.ui import UiSettings, create_app
from agentloom.workflow import arun_workflow, load_workflow_text
from agentloom.workflow.durable.run import DurableRun
from tests.ui.harness import cli_env, fake_openai, run_cli
from tests.workflow.wf_helpers import Factory

CHAIN = """\
name: chain
steps:
  - {id: a, type: llm_call, prompt: "one", output: first}
  - {id: b, type: llm_call, depends_on: [a], prompt: "two {state.first}", output: second}
  - {id: c, type: llm_call, depends_on: [b], prompt: "three", output: third}
"""


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    s = SqliteStore(tmp_path / "runs.db")
    async with s:
        yield s


async def _client(store: Any) -> TestClient[Any, Any]:
    app = create_app(UiSettings(store=store, store_url="unused", poll_seconds=0.01))
    client: TestClient[Any, Any] = TestClient(TestServer(app, host="127.0.0.1"))
    await client.start_server()
    return client


async def _get(client: TestClient[Any, Any], path: str) -> Any:
    response = await client.get(path)
    assert response.status == 200, (path, response.status, await response.text())
    return await response.json()


async def test_each_step_shows_the_state_right_after_it(store: SqliteStore) -> None:
    wf = load_workflow_text(CHAIN)
    durable = DurableRun(store=store, run_id="r1", workflow_hash="h")
    await arun_workflow(wf, clients=Factory(ScriptedModel(["A", "B", "C"])), durable=durable)
    client = await _client(store)
    try:
        detail = await _get(client, "/api/runs/r1")
        seqs = {s["id"]: s["state_seq"] for s in detail["steps"]}
        assert seqs["a"] < seqs["b"] < seqs["c"], seqs
        assert "output" not in detail["steps"][0], "details wait until the step is opened"
        b = await _get(client, "/api/runs/r1/steps/b")
        assert b["output"] == "B"
        assert b["state_after"]["seq"] == seqs["b"]
        assert b["state_after"]["state"] == {"first": "A", "second": "B"}
        assert b["state_after"]["changed"] == ["second"]
        assert len(b["exchanges"]) == 1 and b["tool_calls"] == []
        c = await _get(client, "/api/runs/r1/steps/c")
        assert c["state_after"]["state"] == {"first": "A", "second": "B", "third": "C"}
        assert detail["state"] == c["state_after"]["state"]
        missing = await client.get("/api/runs/r1/steps/ghost")
        assert missing.status == 404 and "ghost" in (await missing.json())["error"]
        assert (await client.get("/api/runs/nope/steps/a")).status == 404
    finally:
        await client.close()


async def test_a_whole_checkpoint_keeps_each_steps_own_write(store: SqliteStore) -> None:
    """A resume writes the whole run again: a step finished before keeps the delta that
    recorded it, and the state after it is the state then, not at the resume."""
    raw = {"id": "a", "type": "llm_call", "status": "success", "output": "x"}
    await store.create_run("r", "f", "h", {"topic": "t"})
    one = await store.save_delta("r", CheckpointDelta(state={"first": "x"},
                                                      step_results={"a": raw}))
    await store.save_checkpoint("r", Checkpoint(state={"topic": "t", "first": "x", "gate": 1},
                                                step_results={"a": raw}, status="running"))
    three = await store.save_delta("r", CheckpointDelta(
        state={"second": "y"}, state_removed=["gate"],
        step_results={"b": {**raw, "id": "b", "output": "y"}}, status="succeeded",
        cost_usd=Decimal("0.1")))
    client = await _client(store)
    try:
        seqs = {s["id"]: s["state_seq"] for s in (await _get(client, "/api/runs/r"))["steps"]}
        assert seqs == {"a": one, "b": three}
        a = (await _get(client, "/api/runs/r/steps/a"))["state_after"]
        assert a["state"] == {"topic": "t", "first": "x"} and a["changed"] == ["first"]
        b = (await _get(client, "/api/runs/r/steps/b"))["state_after"]
        assert b["state"] == {"topic": "t", "first": "x", "second": "y"}
        assert b["removed"] == ["gate"]
    finally:
        await client.close()


async def test_a_step_a_resume_records_again_keeps_its_first_write(
        store: SqliteStore) -> None:
    """What `agentloom resume` writes: the run whole (without the finished steps'
    results), then each restored step's result again, unchanged. A step that is run
    again and ends differently is a new write."""
    raw = {"id": "a", "type": "llm_call", "status": "success", "attempts": 2}
    await store.create_run("r", "f", "h", {})
    first = await store.save_delta("r", CheckpointDelta(state={"x": 1},
                                                        step_results={"a": raw}))
    await store.save_delta("r", CheckpointDelta(status="paused"))
    await store.save_checkpoint("r", Checkpoint(state={"x": 1, "y": 2}))
    await store.save_delta("r", CheckpointDelta(step_results={"a": dict(raw)}))
    client = await _client(store)
    try:
        steps = (await _get(client, "/api/runs/r"))["steps"]
        assert steps[0]["state_seq"] == first
        after = (await _get(client, "/api/runs/r/steps/a"))["state_after"]
        assert after["state"] == {"x": 1} and after["changed"] == ["x"]
        again = await store.save_delta("r", CheckpointDelta(
            state={"x": 5}, step_results={"a": {**raw, "attempts": 3}}))
        steps = (await _get(client, "/api/runs/r"))["steps"]
        assert steps[0]["state_seq"] == again
        after = (await _get(client, "/api/runs/r/steps/a"))["state_after"]
        assert after["state"] == {"x": 5, "y": 2}
    finally:
        await client.close()


async def test_a_step_whose_write_was_pruned_says_so(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "runs.db", keep_checkpoints=1) as store:
        raw = {"id": "a", "type": "llm_call", "status": "success"}
        await store.create_run("r", "f", "h", {})
        await store.save_delta("r", CheckpointDelta(state={"first": 1}, step_results={"a": raw}))
        await store.save_checkpoint("r", Checkpoint(state={"first": 1}, step_results={"a": raw}))
        await store.save_delta("r", CheckpointDelta(state={"second": 2},
                                                    step_results={"b": {**raw, "id": "b"}}))
        client = await _client(store)
        try:
            steps = (await _get(client, "/api/runs/r"))["steps"]
            assert {s["id"]: s["state_seq"] for s in steps} == {"a": None, "b": 3}
            assert (await _get(client, "/api/runs/r/steps/a"))["state_after"] is None
            b = (await _get(client, "/api/runs/r/steps/b"))["state_after"]
            assert b["state"] == {"first": 1, "second": 2}
        finally:
            await client.close()


async def test_a_live_page_reads_only_the_new_writes(store: SqliteStore) -> None:
    raw = {"id": "s0", "type": "llm_call", "status": "success"}
    await store.create_run("live", "f", "h", {})
    await store.save_delta("live", CheckpointDelta(state={"o0": 0}, step_results={"s0": raw}))
    client = await _client(store)
    try:
        first = await _get(client, "/api/runs/live")
        assert [s["id"] for s in first["steps"]] == ["s0"]
        await store.save_delta("live", CheckpointDelta(
            state={"o1": 1}, step_results={"s1": {**raw, "id": "s1"}}))
        second = await _get(client, "/api/runs/live")
        assert [s["state_seq"] for s in second["steps"]] == [1, 2]
        assert second["state"] == {"o0": 0, "o1": 1}
        s1 = await _get(client, "/api/runs/live/steps/s1")
        assert s1["state_after"]["state"] == {"o0": 0, "o1": 1}
    finally:
        await client.close()


async def test_a_nested_steps_details_are_found_by_its_path(store: SqliteStore) -> None:
    raw = {"type": "llm_call", "status": "success", "output": "inner"}
    await store.create_run("n", "f", "h", {})
    await store.save_delta("n", CheckpointDelta(
        state={"items": ["inner"]}, step_results={"each": {**raw, "id": "each"},
                                                  "each/0/x": {**raw, "id": "x"}}))
    client = await _client(store)
    try:
        assert (await _get(client, "/api/runs/n/steps/each/0/x"))["output"] == "inner"
        encoded = await _get(client, "/api/runs/n/steps/each%2F0%2Fx")
        assert encoded["state_after"]["state"] == {"items": ["inner"]}
    finally:
        await client.close()


SECRET_FLOW = """\
name: secretive
config: {model: gpt-4o-mini, provider: openai}
state: {password: "hunter2-correct-horse"}
state_schema: {password: {redact: true}}
steps:
  - {id: echo, type: llm_call, prompt: "{state.password}", output: echoed}
"""


def test_the_state_after_a_step_is_redacted_as_stored(tmp_path: Path) -> None:
    (tmp_path / "flow.yaml").write_text(SECRET_FLOW)
    with fake_openai(latency=0.0) as server:
        env = cli_env(server)
        done = run_cli(env, tmp_path, "run", "flow.yaml", "--run-id", "s1")
        assert done.returncode == 0, done.stderr
        shown = run_cli(env, tmp_path, "runs", "show", "s1")
        assert shown.returncode == 0, shown.stderr
        dumped = run_cli(env, tmp_path, "runs", "show", "s1", "--json")
    assert "hunter2" not in shown.stdout and "hunter2" not in dumped.stdout
    assert "state after (write 1): set echoed" in shown.stdout
    step = json.loads(dumped.stdout)["steps"][0]
    after = step["details"]["state_after"]
    assert after["changed"] == ["echoed"] and "[REDACTED]" in after["state"]["echoed"]
    assert step["details"]["exchanges"], "the model exchange is in the details"
