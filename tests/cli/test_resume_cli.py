"""`agentloom run` pauses at approval_gate and ask; `runs` lists; `resume` continues;
bad resumes fail clearly and change nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openai_thread import cli_serving

from agentloom.cli import main
from agentloom.testing._server import FakeReply
from agentloom.testing.fake_openai import FakeOpenAIServer

GATE = """\
name: gate
config: {model: gpt-4o-mini, provider: openai}
steps:
  - {id: draft, type: llm_call, prompt: "draft about {state.topic}", output: draft}
  - id: approve
    type: approval_gate
    depends_on: [draft]
    message: "send it?"
    output: decision
  - {id: send, type: llm_call, depends_on: [approve], prompt: "decision {state.decision}",
     output: result}
state: {topic: tea}
"""

ASK = """\
name: asking
config: {model: gpt-4o-mini, provider: openai}
steps:
  - id: color
    type: ask
    question: "which color?"
    answer_type: choose_one
    choices: [red, blue]
    output: color
  - {id: paint, type: llm_call, depends_on: [color], prompt: "paint it {state.color}",
     output: result}
"""


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeOpenAIServer]:
    with cli_serving(monkeypatch, tmp_path, lambda body: FakeReply(
            text="re " + str(body["messages"][-1]["content"])[:30])) as server:
        yield server


def _run(capsys: Any, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_approval_gate_pauses_lists_and_resumes(env: Any, tmp_path: Path, capsys: Any) -> None:
    (tmp_path / "gate.yaml").write_text(GATE)
    code, out, err = _run(capsys, "run", "gate.yaml", "--run-id", "g1")
    assert code == 3, err
    assert "run g1 paused at step 'approve': send it?" in err
    assert "resume with: agentloom resume g1 --approve   (or --reject)" in err
    assert len(env.requests) == 1
    code, out, err = _run(capsys, "runs")
    assert code == 0 and "g1" in out and "paused" in out and "gate" in out
    code, out, _ = _run(capsys, "runs", "--json", "--status", "paused")
    assert [r["run_id"] for r in json.loads(out)] == ["g1"]
    # A resume without the decision it needs is refused, and nothing changes.
    code, out, err = _run(capsys, "resume", "g1")
    assert code == 1 and "pass --approve or --reject" in err
    code, out, err = _run(capsys, "resume", "g1", "--reject", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["status"] == "success" and data["state"]["decision"] == "rejected"
    assert len(env.requests) == 2  # the draft was not asked again
    code, out, err = _run(capsys, "resume", "g1", "--approve")
    assert code == 1 and "already finished (succeeded)" in err


def test_resume_says_which_secrets_the_store_did_not_keep(env: Any, tmp_path: Path,
                                                         capsys: Any) -> None:
    flow = GATE.replace("state: {topic: tea}",
                        "state: {topic: tea}\nstate_schema: {token: {redact: true}}")
    flow = flow.replace('prompt: "decision {state.decision}"',
                        'prompt: "decision {state.decision} with {state.token}"')
    (tmp_path / "gate.yaml").write_text(flow)
    code, _, err = _run(capsys, "run", "gate.yaml", "--run-id", "s1", "-s", "token=t0ps3cret")
    assert code == 3, err
    code, _, err = _run(capsys, "resume", "s1", "--approve", "--json")
    assert code == 0, err
    assert err.splitlines()[0] == (
        "agentloom resume: state 'token' held a secret, which the store did not keep: it "
        'goes on as "[REDACTED]" unless given back with --state token=VALUE or in a '
        "--state-file")
    assert env.requests[-1].json["messages"][-1]["content"].endswith("with [REDACTED]")
    # Given back, the secret is used and nothing is said.
    code, _, err = _run(capsys, "run", "gate.yaml", "--run-id", "s2", "-s", "token=t0ps3cret")
    assert code == 3, err
    code, _, err = _run(capsys, "resume", "s2", "--approve", "-s", "token=t0ps3cret")
    assert code == 0 and "held a secret" not in err
    assert env.requests[-1].json["messages"][-1]["content"].endswith("with t0ps3cret")
    # Or in a file, off the command line that every user's `ps` shows.
    code, _, err = _run(capsys, "run", "gate.yaml", "--run-id", "s3", "-s", "token=t0ps3cret")
    assert code == 3, err
    (tmp_path / "secrets.yaml").write_text("token: fr0mf1le\n")
    code, _, err = _run(capsys, "resume", "s3", "--approve", "--state-file", "secrets.yaml")
    assert code == 0 and "held a secret" not in err, err
    assert env.requests[-1].json["messages"][-1]["content"].endswith("with fr0mf1le")


def test_ask_pauses_and_checks_the_answer(env: Any, tmp_path: Path, capsys: Any) -> None:
    (tmp_path / "ask.yaml").write_text(ASK)
    code, out, err = _run(capsys, "run", "ask.yaml", "--run-id", "a1")
    assert code == 3, err
    assert "resume with: agentloom resume a1 --answer VALUE   (choices: red, blue)" in err
    code, out, err = _run(capsys, "resume", "a1", "--answer", "green")
    assert code == 1 and "'green' is not one of the choices: red, blue" in err
    code, out, err = _run(capsys, "resume", "a1", "--answer", "blue", "--json")
    assert code == 0, err
    assert json.loads(out)["state"]["color"] == "blue"
    assert "paint it blue" in json.dumps(env.requests[-1].json)


def test_resume_refuses_unknown_runs_and_changed_workflows(env: Any, tmp_path: Path,
                                                           capsys: Any) -> None:
    code, out, err = _run(capsys, "resume", "nope")
    assert code == 1 and "no run 'nope' in the store" in err
    (tmp_path / "gate.yaml").write_text(GATE)
    _run(capsys, "run", "gate.yaml", "--run-id", "g2")
    (tmp_path / "gate.yaml").write_text(GATE.replace("send it?", "ship it?"))
    code, out, err = _run(capsys, "resume", "g2", "--approve")
    assert code == 1 and "changed since run g2 started" in err and "--force" in err
    code, out, err = _run(capsys, "resume", "g2", "--approve", "--force", "--json")
    assert code == 0, err
    assert json.loads(out)["state"]["decision"] == "approved"


def test_a_refused_resume_answers_json_with_json(env: Any, tmp_path: Path,
                                                 capsys: Any) -> None:
    """`--json` keeps stdout machine-readable when the resume can't start, as `run
    --json` does: a script reads `status` instead of meeting an empty stdout."""
    code, out, err = _run(capsys, "resume", "nope", "--json")
    assert code == 1 and "no run 'nope' in the store" in err
    assert json.loads(out) == {"status": "error", "hint": None,
                               "error": "no run 'nope' in the store .agentloom/runs.db: "
                                        "there is no such file; pass --store if the run "
                                        "is elsewhere"}
    (tmp_path / "ask.yaml").write_text(ASK)
    _run(capsys, "run", "ask.yaml", "--run-id", "a2")
    code, out, err = _run(capsys, "resume", "a2", "--answer", "green", "--json")
    assert code == 1
    refused = json.loads(out)
    assert refused["status"] == "error"
    assert "'green' is not one of the choices: red, blue" in refused["error"]


def test_no_checkpoint_pause_says_it_cannot_resume(env: Any, tmp_path: Path,
                                                   capsys: Any) -> None:
    (tmp_path / "gate.yaml").write_text(GATE)
    code, _out, err = _run(capsys, "run", "gate.yaml", "--no-checkpoint")
    assert code == 3
    assert "can't be resumed: checkpoints are off" in err
    assert not (tmp_path / ".agentloom").exists()


def test_runs_prune(env: Any, tmp_path: Path, capsys: Any) -> None:
    (tmp_path / "ask.yaml").write_text(ASK)
    _run(capsys, "run", "ask.yaml", "--run-id", "p1")
    _run(capsys, "resume", "p1", "--answer", "red")
    _run(capsys, "run", "ask.yaml", "--run-id", "p2")  # paused: kept by prune
    code, out, _ = _run(capsys, "runs", "--prune", "--older-than", "0s")
    assert code == 0 and "pruned 1 finished run " in out
    code, out, _ = _run(capsys, "runs", "--json")
    assert [r["run_id"] for r in json.loads(out)] == ["p2"]
    assert main(["runs", "--prune", "--older-than", "soon"]) == 2


LOOP = """\
name: loop
config: {model: gpt-4o-mini, provider: openai}
steps:
  - id: deploy
    type: llm_call
    prompt: "deploy the app"
    tools: [confirm]
    output: result
"""

TOOLS = '''\
from agentloom.tools import tool
from agentloom.workflow import ask


@tool
def confirm(target: str) -> str:
    """Ask a person before deploying."""
    answer = ask(f"deploy to {target}?", kind="choose_one", choices=["yes", "no"])
    return f"person said {answer} for {target}"
'''


def test_ask_inside_a_tool_pauses_and_resumes_mid_loop(monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Path, capsys: Any) -> None:
    def reply(body: dict[str, Any]) -> FakeReply:
        tools = [m for m in body["messages"] if m["role"] == "tool"]
        if not tools:
            return FakeReply(tool_calls=[("confirm", {"target": "prod"})])
        return FakeReply(text="done: " + tools[-1]["content"])

    with cli_serving(monkeypatch, tmp_path, reply) as server:
        (tmp_path / "loop.yaml").write_text(LOOP)
        (tmp_path / "tools.py").write_text(TOOLS)
        code, _, err = _run(capsys, "run", "loop.yaml", "--tools", "tools.py", "--run-id", "t1")
        assert code == 3, err
        assert "run t1 paused at step 'deploy', tool call" in err
        assert "deploy to prod?" in err and "(choices: yes, no)" in err
        assert len(server.requests) == 1
        code, out, err = _run(capsys, "resume", "t1", "--answer", "yes", "--json")
        assert code == 0, err
        assert json.loads(out)["state"]["result"] == "done: person said yes for prod"
        assert len(server.requests) == 2  # the turn that asked for the tool was not re-sent


SECRET_TOOLS = '''\
from agentloom.tools import tool
from agentloom.workflow import ask


@tool
def confirm(target: str) -> str:
    """Deploy with a token a person gives."""
    token = ask(f"token for {target}?", kind="secret")
    return f"deployed {target} with {token}"


@tool
def pick(target: str) -> str:
    """Pick regions."""
    regions = ask(f"regions for {target}?", kind="choose_many", choices=["eu", "us"])
    return f"{type(regions).__name__} {regions}"
'''


def test_a_secret_answered_to_a_tools_ask_is_redacted_like_an_ask_steps(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: Any) -> None:
    # Before, only the `ask` step taught the redactor its secret answer: the same answer
    # to `ask(kind="secret")` in a tool was stored in the tool call's result, the model's
    # reply and the state. The answer is also typed as the step's is (choose_many: a list).
    def reply(body: dict[str, Any]) -> FakeReply:
        tools = [m for m in body["messages"] if m["role"] == "tool"]
        if not tools:
            name = "pick" if "pick" in body["messages"][-1]["content"] else "confirm"
            return FakeReply(tool_calls=[(name, {"target": "prod"})])
        return FakeReply(text="done: " + tools[-1]["content"])

    with cli_serving(monkeypatch, tmp_path, reply) as server:
        (tmp_path / "loop.yaml").write_text(LOOP.replace("[confirm]", "[confirm, pick]"))
        (tmp_path / "tools.py").write_text(SECRET_TOOLS)
        code, _, err = _run(capsys, "run", "loop.yaml", "--tools", "tools.py", "--run-id", "t2")
        assert code == 3 and "--answer -   (the answer on stdin)" in err, err
        code, out, err = _run(capsys, "resume", "t2", "--answer", "hunter2-XYZ", "--json")
        assert code == 0, err
        assert server.requests[-1].json["messages"][-1]["content"] == \
            "deployed prod with hunter2-XYZ"  # the model got it
        assert "hunter2" not in out
        assert b"hunter2" not in (tmp_path / ".agentloom" / "runs.db").read_bytes()

        (tmp_path / "pick.yaml").write_text(LOOP.replace("[confirm]", "[pick]").replace(
            "deploy the app", "pick the app"))
        assert _run(capsys, "run", "pick.yaml", "--tools", "tools.py", "--run-id", "t3")[0] == 3
        code, out, err = _run(capsys, "resume", "t3", "--answer", "eu,us", "--json")
        assert code == 0, err
        assert json.loads(out)["state"]["result"] == "done: list ['eu', 'us']"


def test_resume_writes_a_trace_of_the_continued_run(env: Any, tmp_path: Path,
                                                   capsys: Any) -> None:
    (tmp_path / "gate.yaml").write_text(GATE)
    code, _, err = _run(capsys, "run", "gate.yaml", "--run-id", "g2")
    assert code == 3, err
    code, _, err = _run(capsys, "resume", "g2", "--approve", "--trace", "resumed.jsonl")
    assert code == 0, err
    events = [json.loads(line) for line in (tmp_path / "resumed.jsonl").read_text().splitlines()]
    assert events[0]["event"] == "run_start" and events[-1]["event"] == "run_end"
    assert events[-1]["run_id"] == "g2"
    # Only the step that ran after the gate made a model call in this trace.
    assert {e.get("step_id") for e in events if e["event"] == "request"} == {"send"}


SECRET_ASK = """\
name: asking-secret
config: {model: gpt-4o-mini, provider: openai}
steps:
  - {id: token, type: ask, question: "deploy token?", answer_type: secret, output: token}
  - {id: use, type: llm_call, depends_on: [token], prompt: "deploy with {state.token}",
     output: result}
"""


def test_a_secret_answer_comes_from_stdin_and_stays_out_of_the_store(
        env: Any, tmp_path: Path) -> None:
    # On the command line, a secret shows in every user's `ps` and in the shell's
    # history: `--answer -` reads it from stdin, and the pause's hint says so.
    import subprocess
    import sys

    (tmp_path / "secret.yaml").write_text(SECRET_ASK)
    cli = [sys.executable, "-m", "agentloom"]
    first = subprocess.run([*cli, "run", "secret.yaml", "--run-id", "t1"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=60)
    assert first.returncode == 3, first.stderr
    assert "resume with: agentloom resume t1 --answer -   (the answer on stdin)" in first.stderr
    done = subprocess.run([*cli, "resume", "t1", "--answer", "-", "--json"], cwd=tmp_path,
                          input="hunter2-XYZ\n", capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert env.requests[-1].json["messages"][-1]["content"] == "deploy with hunter2-XYZ"
    assert "hunter2" not in done.stdout
    assert b"hunter2" not in (tmp_path / ".agentloom" / "runs.db").read_bytes()


def test_an_answer_on_stdin_is_bounded_and_its_line_end_dropped(
        env: Any, tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from agentloom.cli import resume

    (tmp_path / "ask.yaml").write_text(ASK)
    assert _run(capsys, "run", "ask.yaml", "--run-id", "b1")[0] == 3
    big = b"x" * (resume.MAX_ANSWER_BYTES + 1)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(big)))
    # A run that doesn't exist is said so before the answer is asked for (or read).
    code, _, err = _run(capsys, "resume", "b2", "--answer", "-")
    assert code == 1 and "no run 'b2' in the store" in err
    code, _, err = _run(capsys, "resume", "b1", "--answer", "-")
    assert code == 1 and "stdin holds over 1048576 bytes" in err
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"blue\r\n")))
    code, out, err = _run(capsys, "resume", "b1", "--answer", "-", "--json")
    assert code == 0, err
    assert json.loads(out)["state"]["color"] == "blue"


def test_answer_dash_on_a_terminal_asks_without_echo(env: Any, tmp_path: Path,
                                                     capsys: Any) -> None:
    # A person typing a secret at a terminal: asked for it, and it is not echoed.
    import os
    import pty
    import select
    import subprocess
    import sys
    import termios

    (tmp_path / "ask.yaml").write_text(ASK)
    assert _run(capsys, "run", "ask.yaml", "--run-id", "y1")[0] == 3
    leader, follower = pty.openpty()
    attrs = termios.tcgetattr(follower)

    # In a session of its own, the child takes the pty as its controlling terminal (so
    # getpass opens it as /dev/tty) before it becomes the command; no preexec_fn, which
    # is unsafe in this process's threads.
    own_terminal = ("import fcntl, os, sys, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
                    "os.execv(sys.executable, sys.argv[1:])")
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", own_terminal, sys.executable, "-m", "agentloom",
             "resume", "y1", "--answer", "-", "--json"],
            cwd=tmp_path, stdin=follower, stdout=subprocess.PIPE, stderr=follower,
            start_new_session=True, env=dict(os.environ))
        os.close(follower)
        seen = b""
        while b"answer (not shown): " not in seen:  # ends with the prompt, or EOF fails
            ready, _, _ = select.select([leader], [], [], 60)  # a bound, not a sleep
            assert ready, seen
            chunk = os.read(leader, 1024)
            assert chunk, seen
            seen += chunk
        echo_off = not termios.tcgetattr(leader)[3] & termios.ECHO
        os.write(leader, b"blue\n")
        out, _ = proc.communicate(timeout=60)
    finally:
        os.close(leader)
    assert attrs[3] & termios.ECHO and echo_off
    assert proc.returncode == 0
    assert json.loads(out)["state"]["color"] == "blue"
