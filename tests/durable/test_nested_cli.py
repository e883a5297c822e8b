"""Through the CLI: an `ask` step inside a workflow function the model called mid tool
loop pauses `agentloom run`; `agentloom resume --answer` continues inside the loop with
no model call repeated (the fake server counts them). And one resume at a time: a
second `agentloom resume` of a run another live process holds is refused."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agentloom.cli import main
from agentloom.testing._server import FakeReply
from agentloom.testing.fake_openai import FakeOpenAIServer

FLOW = """\
name: fn-cli
config: {model: gpt-4o-mini, provider: openai}
functions:
  deploy:
    description: Deploy once a person confirms.
    args: {target: {type: str, description: Where to deploy.}}
    steps:
      - {id: plan, type: llm_call, prompt: "plan {args.target}"}
      - id: confirm
        type: ask
        question: "deploy to {args.target}?"
        answer_type: choose_one
        choices: ["yes", "no"]
        depends_on: [plan]
    return: "{steps.plan.output}; {steps.confirm.output}"
steps:
  - {id: agent, type: llm_call, prompt: "deploy it", functions: [deploy], output: b}
"""


def _reply(body: dict[str, Any]) -> FakeReply:
    msgs = body["messages"]
    if body.get("tools"):
        results = [m["content"] for m in msgs if m["role"] == "tool"]
        if not results:
            return FakeReply(tool_calls=[("deploy", {"target": "prod"})])
        return FakeReply(text="done: " + results[-1])
    return FakeReply(text="the plan")


class HoldingServer(FakeOpenAIServer):
    """`hold` set: every request waits until the test clears it."""

    hold = False

    async def record(self, request: Any) -> Any:
        body = await super().record(request)
        while self.hold:
            await asyncio.sleep(0.01)
        return body


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    srv = HoldingServer(responder=_reply)
    srv.start_in_thread()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
    (tmp_path / "flow.yaml").write_text(FLOW)
    try:
        yield srv
    finally:
        srv.hold = False
        srv.stop_thread()


def _paused_run(server: Any, capsys: Any) -> None:
    assert main(["run", "flow.yaml", "--run-id", "r1"]) == 3
    err = capsys.readouterr().err
    assert "run r1 paused at step 'agent/1:call_0/confirm'" in err or \
        "paused at step 'agent/" in err, err
    assert "agentloom resume r1 --answer VALUE" in err and "choices: yes, no" in err
    assert len(server.requests) == 2  # the loop's first turn and the body's `plan`


def test_ask_in_a_function_pauses_the_cli_run_and_resumes_mid_loop(
        server: Any, capsys: Any) -> None:
    _paused_run(server, capsys)
    assert main(["resume", "r1", "--answer", "maybe"]) != 0
    assert "not one of the choices: yes, no" in capsys.readouterr().err
    assert main(["resume", "r1", "--answer", "yes", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["status"] == "success", data["error"]
    assert data["state"]["b"] == "done: the plan; yes"
    # One request more: the loop's answering turn. Neither the turn that called the
    # function nor the body's `plan` was asked again.
    assert len(server.requests) == 3
    last = server.requests[-1].json["messages"]
    assert last[-1]["role"] == "tool" and last[-1]["content"] == "the plan; yes"
    assert main(["resume", "r1"]) != 0
    assert "already finished" in capsys.readouterr().err


def _claim(holder: str) -> None:
    from agentloom.store import open_store

    async def go() -> bool:
        store = open_store(".agentloom/runs.db")
        try:
            return bool(await store.claim_run("r1", holder, 60))
        finally:
            await store.close()

    assert asyncio.run(go())


def test_a_run_held_by_another_live_process_is_refused(server: Any, capsys: Any) -> None:
    _paused_run(server, capsys)
    _claim("another-host:4242:abcd")
    assert main(["resume", "r1", "--answer", "yes"]) != 0
    err = capsys.readouterr().err
    assert "run r1 is being resumed by another process (another-host:4242:abcd)" in err
    assert len(server.requests) == 2  # nothing ran


def test_a_claim_left_by_a_dead_process_is_taken_over(server: Any, capsys: Any) -> None:
    _paused_run(server, capsys)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    _claim(f"{socket.gethostname()}:{gone.pid}:dead")
    assert main(["resume", "r1", "--answer", "yes", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "success"


def test_two_resumes_at_once_the_second_is_refused(server: Any, capsys: Any,
                                                   tmp_path: Path) -> None:
    _paused_run(server, capsys)
    server.hold = True
    first = subprocess.Popen(
        [sys.executable, "-m", "agentloom.cli", "resume", "r1", "--answer", "yes", "--json"],
        cwd=tmp_path, env=dict(os.environ), text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while len(server.requests) < 3:  # the first resume is inside its model call
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline, "the first resume never called the model"
            time.sleep(0.01)
        assert main(["resume", "r1", "--answer", "yes"]) != 0
        assert "run r1 is being resumed by another process" in capsys.readouterr().err
    finally:
        server.hold = False
    out, err = first.communicate(timeout=60)
    assert first.returncode == 0, err
    assert json.loads(out)["status"] == "success"
    assert len(server.requests) == 3


def _holder() -> str | None:
    from agentloom.store import open_store

    async def go() -> str | None:
        store = open_store(".agentloom/runs.db")
        try:
            record = await store.get_run("r1")
            assert record is not None
            return record.claimed_by
        finally:
            await store.close()

    return asyncio.run(go())


@pytest.mark.parametrize("failure", ["no key", "bad trace", "workflow broken"])
def test_a_resume_that_fails_before_the_run_goes_on_lets_go_of_it(
        server: Any, capsys: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        failure: str) -> None:
    """The claim is taken before the run's own checks (a key, the trace file, the
    workflow): one failing there gives the run back at once, on any host, so the
    corrected command goes on without waiting out the lease (120 s on another host)."""
    _paused_run(server, capsys)
    argv = ["resume", "r1", "--answer", "yes"]
    if failure == "no key":
        monkeypatch.delenv("OPENAI_API_KEY")
    elif failure == "bad trace":
        argv += ["--trace", str(tmp_path / "no-such-dir" / "t.jsonl")]
    else:
        flow = tmp_path / "flow.yaml"
        flow.write_text(flow.read_text().replace("type: llm_call, prompt: \"deploy it\"",
                                                 "type: llm_call"))
        argv.append("--force")
    assert main(argv) != 0
    err = capsys.readouterr().err
    assert {"no key": "set OPENAI_API_KEY", "bad trace": "--trace",
            "workflow broken": "prompt"}[failure] in err, err
    assert _holder() is None
    assert len(server.requests) == 2  # nothing ran
