"""An approval gate with `notify` POSTs the request to a receiver when it pauses; a
receiver that is down doesn't cost the pause."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

import pytest

from agentloom.redact import Redactor
from agentloom.store import MemoryStore
from agentloom.testing.clock import FakeClock
from agentloom.testing.scripted import ScriptedModel
from agentloom.workflow import RunStatus, arun_workflow, load_workflow_text
from agentloom.workflow.durable.run import Decision, DurableRun
from tests.http.test_hostile_rebinding import NAME, PUBLIC, RebindingDNS
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


SIGNED = """\
name: signed
config: {sandbox: {allow_internal_webhook_targets: true}}
steps:
  - id: approve
    type: approval_gate
    message: "ship it?"
    notify:
      url: "URL"
      headers_env: {Authorization: HOOK_AUTH}
      secret_env: HOOK_SECRET
"""


def test_a_notification_signed_with_a_secret_from_the_environment(tmp_path: Path) -> None:
    """The receiver's credential and the signing key come from variables, not the file;
    the receiver checks the body with the recipe docs/durable.md gives; neither value
    reaches the store; a variable not set sends nothing rather than an unsigned event."""
    import hashlib
    import hmac
    import time

    from tests.cli.test_commands import agentloom
    from tests.webhook_receiver import threaded_webhook_receiver

    key, auth = "whsec-0123456789abcdef", "Bearer hook-cred-0123456789"
    with threaded_webhook_receiver() as receiver:
        (tmp_path / "flow.yaml").write_text(SIGNED.replace("URL", receiver.url))
        done = agentloom("run", "flow.yaml", "--run-id", "s1", cwd=tmp_path,
                         env={"HOOK_SECRET": key, "HOOK_AUTH": auth})
        assert done.returncode == 3, done.stderr
        [(headers, body)] = receiver.posts
        assert headers["Authorization"] == auth
        is_ours = _documented_check()
        assert is_ours(key.encode(), headers, body)
        assert not is_ours(b"another-key", headers, body)
        assert not is_ours(key.encode(), headers, body.replace(b"ship", b"drop"))
        stamp = headers["X-AgentLoom-Timestamp"]
        old = hmac.new(key.encode(), b"1000." + body, hashlib.sha256).hexdigest()
        assert not is_ours(key.encode(), {"X-AgentLoom-Timestamp": "1000",
                                          "X-AgentLoom-Signature": "sha256=" + old}, body)
        assert abs(time.time() - int(stamp)) < 300
        stored = (tmp_path / ".agentloom" / "runs.db").read_bytes()
        assert key.encode() not in stored and b"hook-cred" not in stored

        unset = agentloom("run", "flow.yaml", "--run-id", "s2", cwd=tmp_path,
                          env={"HOOK_AUTH": auth})
        assert unset.returncode == 3, unset.stderr
        assert "notify not sent: HOOK_SECRET not set" in unset.stderr
        assert len(receiver.posts) == 1


def test_a_notify_env_name_that_is_no_variable_name_is_a_load_error() -> None:
    import pytest

    from agentloom.workflow import WorkflowProblems

    with pytest.raises(WorkflowProblems) as info:
        load_workflow_text(SIGNED.replace("HOOK_SECRET", "$(whoami)"))
    assert "notify.secret_env" in str(info.value)


def _documented_check() -> Any:
    """The receiver's check as docs/durable.md prints it (the block after its `is_ours`
    mark), run as it is."""
    text = (Path(__file__).parents[2] / "docs" / "durable.md").read_text()
    block = text.split("def is_ours", 1)[0].rsplit("```python", 1)[1] + "def is_ours" + \
        text.split("def is_ours", 1)[1].split("```", 1)[0]
    namespace: dict[str, Any] = {}
    exec(block, namespace)  # our own documentation, as it is printed
    return namespace["is_ours"]


def test_a_batch_worker_signs_with_the_variable_too(tmp_path: Path) -> None:
    # The runs of a batch are given the variables the file names (as they are given
    # a provider's api_key_env), nested steps' included.
    from agentloom.scale._workflow_adapter import key_names
    from tests.cli.test_commands import agentloom
    from tests.webhook_receiver import threaded_webhook_receiver

    nested = ("functions:\n  f:\n    steps:\n      - id: g\n        type: approval_gate\n"
              "        notify: {url: 'http://x', secret_env: DEEP_KEY, "
              "headers_env: {X-A: DEEP_AUTH}}\n")
    assert sorted(key_names(SIGNED + nested)) == ["DEEP_AUTH", "DEEP_KEY", "HOOK_AUTH",
                                                  "HOOK_SECRET"]
    key = "whsec-batch-0123456789"
    with threaded_webhook_receiver() as receiver:
        (tmp_path / "flow.yaml").write_text(SIGNED.replace("URL", receiver.url))
        (tmp_path / "in.jsonl").write_text('{"n": 1}\n')
        done = agentloom("batch", "flow.yaml", "in.jsonl", "-o", "out.jsonl",
                         "--store", "runs.db", cwd=tmp_path,
                         env={"HOOK_SECRET": key, "HOOK_AUTH": "Bearer batch-cred-0123"})
        assert done.returncode == 3, done.stderr  # the run waits for its approval
        [(headers, body)] = receiver.posts
    assert _documented_check()(key.encode(), headers, body)
    assert headers["Authorization"] == "Bearer batch-cred-0123"
    assert key.encode() not in (tmp_path / "runs.db").read_bytes()


def test_a_credential_written_in_the_file_is_warned_of_by_line() -> None:
    flow = ("name: lit\n"
            "providers:\n"
            "  mine: {type: openai, base_url: 'http://x/v1', api_key: written-key-0123}\n"
            "config: {provider: mine, model: gpt-4o-mini}\n"
            "steps:\n"
            "  - id: approve\n"
            "    type: approval_gate\n"
            "    notify:\n"
            "      url: http://x\n"
            "      headers: {X-Team: ops, Authorization: 'Bearer written-0123'}\n")
    wf = load_workflow_text(flow, filename="lit.yaml")
    assert wf.warnings == [
        "lit.yaml:10: warning: step 'approve', notify.headers.Authorization: a key written "
        "in the file goes wherever the file goes (git, a batch's workers); name the "
        "variable that holds it with notify.headers_env: {Authorization: VARIABLE}",
        "lit.yaml:3: warning: providers.mine.api_key: a key written in the file goes "
        "wherever the file goes (git, a batch's workers); name the variable that holds it "
        "with api_key_env"]
    assert load_workflow_text(SIGNED, filename="signed.yaml").warnings == []


def test_a_webhook_whose_url_is_its_secret_comes_from_a_variable(tmp_path: Path) -> None:
    # A Slack-style URL carries its credential in the path: `url_env` keeps it out of
    # the file, the store and the log, which names the host alone.
    from tests.cli.test_commands import agentloom
    from tests.webhook_receiver import threaded_webhook_receiver

    flow = SIGNED.replace('url: "URL"', "url_env: HOOK_URL").replace(
        "      headers_env: {Authorization: HOOK_AUTH}\n      secret_env: HOOK_SECRET\n", "")
    (tmp_path / "flow.yaml").write_text(flow)
    secret_path = "/services/T0/B0/hunter2PathToken"
    with threaded_webhook_receiver() as receiver:
        done = agentloom("run", "flow.yaml", "--run-id", "u1", cwd=tmp_path,
                         env={"HOOK_URL": receiver.url + secret_path})
        assert done.returncode == 3, done.stderr
        assert len(receiver.posts) == 1
    with threaded_webhook_receiver(status=403) as refusing:  # refused: no retry, no wait
        down = agentloom("run", "flow.yaml", "--run-id", "u2", cwd=tmp_path,
                         env={"HOOK_URL": refusing.url + secret_path})
    assert down.returncode == 3, down.stderr
    host = refusing.url.removesuffix("/hook")
    assert f"notify to {host}/... answered 403" in down.stderr
    assert "hunter2" not in down.stderr + done.stderr
    assert b"hunter2" not in (tmp_path / ".agentloom" / "runs.db").read_bytes()

    import pytest

    from agentloom.workflow import WorkflowProblems

    with pytest.raises(WorkflowProblems) as info:
        load_workflow_text(flow.replace("url_env: HOOK_URL", "url_env: HOOK_URL\n"
                                        "      url: http://x"))
    assert "notify needs exactly one of url, url_env" in str(info.value)


async def test_a_target_that_rebinds_to_loopback_after_the_check_gets_nothing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A zero-TTL name: public to the address check, 127.0.0.1 to the connection. The gate
    # POSTed its request to the loopback receiver (a service the workflow's author never
    # named); now the connection goes only where the check's rule allows.
    async with webhook_receiver() as receiver:
        dns = RebindingDNS(PUBLIC, "127.0.0.1")
        monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", dns.getaddrinfo)
        url = receiver.url.replace("127.0.0.1", NAME)
        store = MemoryStore()
        clock = FakeClock()
        result = await arun_workflow(
            load_workflow_text(gate(url, internal=False)),
            clients=Factory(ScriptedModel(["the draft"])),
            durable=DurableRun(store=store, run_id="n4", workflow_hash="h"), clock=clock)
        assert result.status is RunStatus.PAUSED
        assert receiver.posts == []
        assert dns.lookups == [(PUBLIC,), ("127.0.0.1",)]  # the check's, the connection's
        assert clock.sleeps == []  # refused once, not retried
        cp = await store.load_latest("n4")
        assert cp is not None and cp.paused is not None and cp.paused.data["notified"] is False
