"""A decision taken in the UI runs `agentloom resume` in a child process of its own
session: the run goes on, and finishes, after the UI has stopped."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentloom.store import FINISHED_STATUSES, SqliteStore
from tests.cli.test_resume_cli import SECRET_ASK
from tests.ui.harness import cli_env, fake_openai, run_cli, ui_process
from tests.webhook_receiver import threaded_webhook_receiver

GATE_FIRST = """\
name: gate-first
config: {model: gpt-4o-mini, provider: openai}
steps:
  - {id: approve, type: approval_gate, message: "go?", output: decision}
  - {id: publish, type: llm_call, depends_on: [approve], prompt: "say {state.decision}",
     output: said}
"""


async def _status(db: Path, run_id: str) -> str:
    async with SqliteStore(db) as store:
        record = await store.get_run(run_id)
        assert record is not None
        return record.status


@dataclass
class _Answer:
    status: int
    body: Any


def _approve(base: str, run_id: str) -> _Answer:
    """POST the UI's approve decision for `run_id`, as the run page's button does."""
    request = urllib.request.Request(
        f"{base}/api/runs/{run_id}/decision", data=json.dumps({"action": "approve"}).encode(),
        headers={"Content-Type": "application/json", "X-AgentLoom-Request": "1"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        return _Answer(answer.status, json.load(answer))


def test_the_run_goes_on_after_the_ui_stops(tmp_path: Path) -> None:
    (tmp_path / "flow.yaml").write_text(GATE_FIRST)
    db = tmp_path / ".agentloom" / "runs.db"
    with fake_openai(latency=1.5) as server:  # the model answers after the UI is gone
        env = cli_env(server)
        done = run_cli(env, tmp_path, "run", "flow.yaml", "--run-id", "g1")
        assert done.returncode == 3 and "paused" in done.stderr, done.stderr
        with ui_process(env, tmp_path) as ui:
            answer = _approve(ui.base, "g1")
            assert answer.status == 202
            assert answer.body["accepted"] is True
        # The UI is gone; the resume it started holds the run and is still at work (the
        # model takes 1.5 s to answer).
        deadline = time.monotonic() + 60  # a bound on the wait, not a sleep
        while asyncio.run(_status(db, "g1")) not in FINISHED_STATUSES \
                and time.monotonic() < deadline:
            time.sleep(0.1)
        assert asyncio.run(_status(db, "g1")) == "succeeded"
        assert len(server.requests) == 1


def _refusal(base: str, run_id: str) -> tuple[int, str]:
    try:
        _approve(base, run_id)
    except urllib.error.HTTPError as refused:
        return refused.code, json.load(refused)["error"]
    raise AssertionError("the decision was accepted")


def test_a_resume_that_cant_start_is_refused_with_its_reason_and_holds_nothing(
        tmp_path: Path) -> None:
    """The UI's environment lacks the provider's key: its child stops before the run
    goes on. The decision is refused with the child's own message (not "accepted" with
    the run left paused), and the run isn't left claimed by a process that is gone: a
    terminal with the key approves it at once."""
    # The model named, its provider not: without the key the run would be refused.
    flow = GATE_FIRST.replace("{model: gpt-4o-mini, provider: openai}", "{model: gpt-4o-mini}")
    (tmp_path / "flow.yaml").write_text(flow)
    db = tmp_path / ".agentloom" / "runs.db"
    with fake_openai() as server:
        env = cli_env(server)
        done = run_cli(env, tmp_path, "run", "flow.yaml", "--run-id", "g4")
        assert done.returncode == 3, done.stderr
        keyless = {k: v for k, v in env.items() if k != "OPENAI_API_KEY"}
        with ui_process(keyless, tmp_path) as ui:
            status, error = _refusal(ui.base, "g4")
            assert status == 409
            assert "no provider is configured for gpt-4o-mini" in error, error
            assert "set OPENAI_API_KEY" in error
            assert asyncio.run(_status(db, "g4")) == "paused"
            again = run_cli(env, tmp_path, "resume", "g4", "--approve")
            assert again.returncode == 0, again.stderr
        assert asyncio.run(_status(db, "g4")) == "succeeded"


def test_a_terminal_resume_is_refused_while_the_ui_resumes_the_run(tmp_path: Path) -> None:
    (tmp_path / "flow.yaml").write_text(GATE_FIRST)
    db = tmp_path / ".agentloom" / "runs.db"
    with fake_openai(latency=2.0) as server:  # the UI's resume holds the run meanwhile
        env = cli_env(server)
        done = run_cli(env, tmp_path, "run", "flow.yaml", "--run-id", "g2")
        assert done.returncode == 3 and "paused" in done.stderr, done.stderr
        with ui_process(env, tmp_path) as ui:
            answer = _approve(ui.base, "g2")
            assert answer.status == 202  # answered once the UI's child holds the run
            terminal = run_cli(env, tmp_path, "resume", "g2", "--approve")
            # Refused either way: held by the UI's resume, or (on a very slow machine)
            # already finished by it.
            assert terminal.returncode != 0
            assert ("being resumed by another process" in terminal.stderr
                    or "already finished" in terminal.stderr), terminal.stderr
            deadline = time.monotonic() + 60  # a bound on the wait, not a sleep
            while asyncio.run(_status(db, "g2")) not in FINISHED_STATUSES \
                    and time.monotonic() < deadline:
                time.sleep(0.1)
        assert asyncio.run(_status(db, "g2")) == "succeeded"
        assert len(server.requests) == 1, "the run was resumed once"


def test_an_answer_from_the_ui_goes_to_its_resume_on_stdin_not_its_command_line(
        tmp_path: Path) -> None:
    """Every user of the machine reads a process's command line (`ps`, /proc): the UI's
    child gets an answer, a secret above all, on its stdin."""
    from agentloom.ui._decide import resume_flags

    command = resume_flags({"action": "answer", "answer": "hunter2-XYZ"}, "answer")
    assert command.flags == ["--answer", "-"] and b"hunter2" in (command.stdin or b"")
    (tmp_path / "flow.yaml").write_text(SECRET_ASK)
    db = tmp_path / ".agentloom" / "runs.db"
    with fake_openai() as server:
        env = cli_env(server)
        done = run_cli(env, tmp_path, "run", "flow.yaml", "--run-id", "s1")
        assert done.returncode == 3 and "--answer -" in done.stderr, done.stderr
        with ui_process(env, tmp_path) as ui:
            request = urllib.request.Request(
                f"{ui.base}/api/runs/s1/decision",
                data=json.dumps({"action": "answer", "answer": "hunter2-XYZ"}).encode(),
                headers={"Content-Type": "application/json", "X-AgentLoom-Request": "1"})
            with urllib.request.urlopen(request, timeout=60) as answer:
                assert answer.status == 202
            deadline = time.monotonic() + 60  # a bound on the wait, not a sleep
            while asyncio.run(_status(db, "s1")) not in FINISHED_STATUSES \
                    and time.monotonic() < deadline:
                time.sleep(0.1)
        assert asyncio.run(_status(db, "s1")) == "succeeded"
        assert server.requests[-1].json["messages"][-1]["content"] == "deploy with hunter2-XYZ"
    assert b"hunter2" not in db.read_bytes()


TWO_GATES = """\
name: two-gates
config: {model: gpt-4o-mini, provider: openai,
         sandbox: {allow_internal_webhook_targets: true}}
steps:
  - {id: first, type: approval_gate, message: "start?"}
  - id: second
    type: approval_gate
    depends_on: [first]
    message: "publish?"
    notify: {url: "URL"}
"""


def test_a_run_the_ui_resumes_links_its_next_gate_to_the_ui(tmp_path: Path) -> None:
    """Started without AGENTLOOM_UI_URL, the run learns the UI's address from the
    resume the UI starts, so the next gate's notification links its page."""
    db = tmp_path / ".agentloom" / "runs.db"
    with fake_openai() as server, threaded_webhook_receiver() as receiver:
        (tmp_path / "flow.yaml").write_text(TWO_GATES.replace("URL", receiver.url))
        env = cli_env(server)
        env.pop("AGENTLOOM_UI_URL", None)
        done = run_cli(env, tmp_path, "run", "flow.yaml", "--run-id", "g3")
        assert done.returncode == 3 and "paused" in done.stderr, done.stderr
        with ui_process(env, tmp_path) as ui:
            answer = _approve(ui.base, "g3")
            assert answer.status == 202
            deadline = time.monotonic() + 60  # a bound on the wait, not a sleep
            while not receiver.posts and time.monotonic() < deadline:
                time.sleep(0.05)
        body = receiver.bodies()
        assert [b["step_id"] for b in body] == ["second"]
        assert body[0]["url"] == f"{ui.base}/runs/g3"
        assert "token" not in body[0]["url"]
        assert asyncio.run(_status(db, "g3")) == "paused"


def test_a_planted_log_folder_in_a_shared_tmp_is_refused_not_written_through(
        tmp_path: Path) -> None:
    import os
    import urllib.error

    (tmp_path / "flow.yaml").write_text(GATE_FIRST)
    shared_tmp = tmp_path / "tmp"
    theirs = tmp_path / "another-users-folder"
    shared_tmp.mkdir()
    theirs.mkdir()
    # Made first by somebody else: a link to a folder they can read.
    (shared_tmp / f"agentloom-ui-{os.getuid()}").symlink_to(theirs, target_is_directory=True)
    with fake_openai() as server:
        env = {**cli_env(server), "TMPDIR": str(shared_tmp)}
        done = run_cli(env, tmp_path, "run", "flow.yaml", "--run-id", "p1")
        assert done.returncode == 3, done.stderr
        with ui_process(env, tmp_path) as ui:
            try:
                _approve(ui.base, "p1")
                raise AssertionError("the decision was taken through a planted folder")
            except urllib.error.HTTPError as refused:
                assert refused.code == 500
                assert "is not a folder private to this user" in json.load(refused)["error"]
    assert list(theirs.iterdir()) == []  # no log of the run landed in their folder
    assert asyncio.run(_status(tmp_path / ".agentloom" / "runs.db", "p1")) == "paused"
