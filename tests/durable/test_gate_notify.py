"""An approval gate with `notify` POSTs the request to a receiver when it pauses; a
receiver that is down doesn't cost the pause."""

from __future__ import annotations

import socket

from agentloom.redact import Redactor
from agentloom.store import MemoryStore
from agentloom.testing.clock import FakeClock
from agentloom.testing.scripted import ScriptedModel
from agentloom.workflow import RunStatus, arun_workflow, load_workflow_text
from agentloom.workflow.durable.run import Decision, DurableRun
from tests.webhook_receiver import webhook_receiver
from tests.workflow.wf_helpers import Factory


def gate(url: str, body: str = "", internal: bool = True) -> str:
    sandbox = "config: {sandbox: {allow_internal_webhook_targets: true}}\n" if internal else ""
    return f"""\
name: notify
{sandbox}steps:
  - {{id: draft, type: llm_call, prompt: "draft", output: draft}}
  - id: approve
    type: approval_gate
    depends_on: [draft]
    message: "send {{state.draft}}?"
    notify:
      url: "{url}"
      headers: {{x-team: ops}}
{body}    output: decision
"""


async def test_the_gate_posts_its_request_and_still_pauses() -> None:
    async with webhook_receiver() as receiver:
        store = MemoryStore()
        wf = load_workflow_text(gate(receiver.url))
        durable = DurableRun(store=store, run_id="n1", workflow_hash="h")
        result = await arun_workflow(wf, clients=Factory(ScriptedModel(["the draft", "x"])),
                                     durable=durable)
        assert result.status is RunStatus.PAUSED
        [(headers, _)] = receiver.posts
        [body] = receiver.bodies()
        assert headers["x-team"] == "ops"
        assert body["event"] == "approval_requested" and body["run_id"] == "n1"
        assert body["step_id"] == "approve" and body["message"] == "send the draft?"
        cp = await store.load_latest("n1")
        assert cp is not None and cp.paused is not None and cp.paused.data["notified"] is True

        # Resuming with the decision doesn't notify again.
        resumed = DurableRun(store=store, run_id="n1", workflow_hash="h",
                             resumed=await store.load_latest("n1"),
                             decision=Decision(approve=True))
        result = await arun_workflow(wf, clients=Factory(ScriptedModel(["x"])),
                                     durable=resumed)
        assert result.status is RunStatus.SUCCESS, result.error
        assert result.state["decision"] == "approved" and len(receiver.posts) == 1


async def test_what_the_receiver_gets_is_redacted_as_the_store_is() -> None:
    key = "hostile-key-0123456789abcdef"
    body = '      body_template: \'{{"text": "approve {state.draft}"}}\'\n'
    async with webhook_receiver() as receiver:
        for n, flow in enumerate((gate(receiver.url), gate(receiver.url, body))):
            durable = DurableRun(store=MemoryStore(), run_id=f"r{n}", workflow_hash="h",
                                 redactor=Redactor(secrets=[key]))
            result = await arun_workflow(
                load_workflow_text(flow), clients=Factory(ScriptedModel([f"key {key}"])),
                durable=durable)
            assert result.status is RunStatus.PAUSED
        default, custom = receiver.bodies()
    assert default["message"] == "send key [REDACTED]?"
    assert custom == {"text": "approve key [REDACTED]"}


async def test_a_receiver_that_is_down_does_not_cost_the_pause() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    store = MemoryStore()
    body = '      body_template: \'{{"text": "approve {state.draft}"}}\'\n'
    wf = load_workflow_text(gate(f"http://127.0.0.1:{port}/hook", body))
    durable = DurableRun(store=store, run_id="n2", workflow_hash="h")
    clock = FakeClock()
    result = await arun_workflow(wf, clients=Factory(ScriptedModel(["the draft"])),
                                 durable=durable, clock=clock)
    assert result.status is RunStatus.PAUSED
    assert clock.sleeps == [0.5, 1.0]  # three tries, backing off through the run's clock
    cp = await store.load_latest("n2")
    assert cp is not None and cp.paused is not None and cp.paused.data["notified"] is False


async def test_a_loopback_target_is_refused_unless_allowed() -> None:
    async with webhook_receiver() as receiver:
        store = MemoryStore()
        wf = load_workflow_text(gate(receiver.url, internal=False))
        durable = DurableRun(store=store, run_id="n3", workflow_hash="h")
        result = await arun_workflow(wf, clients=Factory(ScriptedModel(["the draft"])),
                                     durable=durable)
        assert result.status is RunStatus.PAUSED
        assert receiver.posts == []  # never sent
        cp = await store.load_latest("n3")
        assert cp is not None and cp.paused is not None and cp.paused.data["notified"] is False
