"""What `agentloom run` tells a person, as a subprocess against the fake OpenAI server:
the summary line names who answered, --json's summary carries it, a run without model
calls has no token line, a named model without its key is refused before any call, and
--stream prints each step's text whole (tool steps and agent turns included)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentloom.testing._server import FakeReply
from agentloom.testing.fake_openai import FakeOpenAIServer
from tests.cli.test_commands import agentloom


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    fake = FakeOpenAIServer()
    fake.start_in_thread()
    try:
        yield fake
    finally:
        fake.stop_thread()


def _env(server: FakeOpenAIServer) -> dict[str, str]:
    return {"OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": server.openai_base_url}


def _flow(tmp_path: Path, text: str, name: str = "flow.yaml") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


TWO_MODELS = """\
name: two
steps:
  - {id: a, type: llm_call, model: gpt-4o-mini, prompt: "one"}
  - {id: b, type: llm_call, model: gpt-4o, prompt: "two"}
"""


TOOLS = '''\
from agentloom import tool


@tool
def lookup(city: str) -> str:
    """Look a city up.

    Args:
        city: The city.
    """
    return f"{city}: sunny"
'''


def test_summary_line_names_the_model_and_provider(server: FakeOpenAIServer) -> None:
    out = agentloom("run", "examples/hello.yaml", "--model", "gpt-4o-mini", "--no-checkpoint",
                    env=_env(server))
    assert out.returncode == 0, out.stderr
    summary = out.stdout.strip().splitlines()[-1]
    assert summary.startswith("success · 1 step (1 success) · gpt-4o-mini via openai · "
                              "19 tokens · $")


def test_several_models_are_listed_then_counted(server: FakeOpenAIServer,
                                                tmp_path: Path) -> None:
    out = agentloom("run", _flow(tmp_path, TWO_MODELS), "--no-checkpoint", env=_env(server))
    assert out.returncode == 0, out.stderr
    assert " · gpt-4o-mini via openai, gpt-4o via openai · 38 tokens · " in out.stdout
    three = TWO_MODELS + '  - {id: c, type: llm_call, model: gpt-4.1, prompt: "three"}\n'
    out = agentloom("run", _flow(tmp_path, three), "--no-checkpoint", env=_env(server))
    assert " · 3 models · 57 tokens · " in out.stdout


def test_json_summary_carries_who_answered(server: FakeOpenAIServer, tmp_path: Path) -> None:
    out = agentloom("run", _flow(tmp_path, TWO_MODELS), "--json", "--no-checkpoint",
                    env=_env(server))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["summary"]["models"] == [
        {"model": "gpt-4o-mini", "provider": "openai"},
        {"model": "gpt-4o", "provider": "openai"}]


def test_a_run_without_model_calls_has_no_tokens_or_cost(tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text(TOOLS, encoding="utf-8")
    flow = _flow(tmp_path, "name: calc\nsteps:\n  - {id: w, type: tool, tool_name: lookup, "
                 "tool_args: {city: Oslo}, output: weather}\n")
    out = agentloom("run", flow, "--tools", str(tmp_path / "tools.py"), "--no-checkpoint")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == "Oslo: sunny"
    summary = out.stdout.strip().splitlines()[-1]
    assert summary.startswith("success · 1 step (1 success) · ") and summary.endswith("s")
    assert "tokens" not in summary and "cost" not in summary, summary


def test_a_named_model_without_its_key_fails_before_any_call(tmp_path: Path) -> None:
    out = agentloom("run", "examples/hello.yaml", "--model", "gpt-4o")
    assert out.returncode == 1
    assert out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert lines == [
        "agentloom: error: no provider is configured for gpt-4o (step 'greet'): set "
        "OPENAI_API_KEY",
        "hint: to run it on the embedded model smollm2 instead, pass --provider local "
        "(or set config.provider: local)"]
    claude = _flow(tmp_path, "name: c\nsteps:\n  - {id: x, type: llm_call, model: "
                   "claude-haiku-4-5, prompt: p}\n  - {id: y, type: llm_call, model: gpt-4o, "
                   "prompt: q}\n")
    out = agentloom("run", claude, "--json", cwd=tmp_path)
    data = json.loads(out.stdout)
    assert data["status"] == "error"
    assert "set ANTHROPIC_API_KEY and OPENAI_API_KEY" in data["error"]
    assert not (tmp_path / ".agentloom").exists()  # refused before the store was opened


def _streaming(server: FakeOpenAIServer) -> None:
    def reply(body: dict[str, Any]) -> FakeReply:
        word = str(body["messages"][-1]["content"])
        return FakeReply(text=" ".join(f"{word}{i}" for i in range(8)) + ".")

    server.responder = reply
    server.chunk_delay = 0.005


def test_stream_keeps_each_parallel_step_whole(server: FakeOpenAIServer,
                                              tmp_path: Path) -> None:
    _streaming(server)
    flow = _flow(tmp_path, "name: par\nconfig: {model: gpt-4o-mini}\nsteps:\n"
                 "  - {id: a, type: llm_call, prompt: alpha}\n"
                 "  - {id: b, type: llm_call, prompt: beta}\n"
                 "  - {id: c, type: llm_call, prompt: gamma}\n")
    out = agentloom("run", flow, "--stream", "--no-checkpoint", env=_env(server))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    expected = {" ".join(f"{w}{i}" for i in range(8)) + "." for w in ("alpha", "beta", "gamma")}
    assert set(lines[:-1]) == expected, out.stdout
    assert lines[-1].startswith("success · 3 steps (3 success) · gpt-4o-mini via openai")




def test_stream_prints_a_tool_steps_answer_and_an_agent_turn(server: FakeOpenAIServer,
                                                            tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text(TOOLS, encoding="utf-8")
    flow = _flow(tmp_path, "name: tools\nconfig: {model: gpt-4o-mini}\n"
                 "agents:\n  helper: {model: gpt-4o-mini, instructions: Be brief.}\n"
                 "steps:\n  - {id: t, type: llm_call, prompt: weather?, tools: [lookup]}\n"
                 "  - {id: g, type: agent, agent: helper, depends_on: [t], prompt: hi}\n")
    server.script(FakeReply(tool_calls=[("lookup", {"city": "Oslo"})]),
                  FakeReply(text="Oslo is sunny today."),
                  FakeReply(text="Hello from the agent."))
    out = agentloom("run", flow, "--stream", "--tools", str(tmp_path / "tools.py"),
                    "--no-checkpoint", env=_env(server))
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[:2] == ["Oslo is sunny today.", "Hello from the agent."]


def test_stream_printer_holds_a_second_step_until_the_first_is_done() -> None:
    import io

    from agentloom.cli._stream import StreamPrinter
    from agentloom.messages import FinishEvent, TextDelta

    out = io.StringIO()
    printer = StreamPrinter(out)
    for step, text in [("a", "Ch"), ("b", "Here's"), ("a", "ess is"), ("b", " the"),
                       ("c", "third"), ("a", " fun.")]:
        printer(step, TextDelta(text=text))
    assert out.getvalue() == "Chess is fun."  # only the step holding the terminal so far
    printer("b", FinishEvent(finish_reason="stop"))  # b is whole, still kept aside
    printer("a", FinishEvent(finish_reason="stop"))  # a done: b, then c goes live
    printer("c", TextDelta(text=" one"))
    assert out.getvalue() == "Chess is fun.\nHere's the\nthird one"
    printer.close()
    assert out.getvalue().endswith("third one\n")


def test_stream_printer_redacts_a_secret_cut_anywhere_by_the_stream() -> None:
    # --json redacts a state secret the model echoes; --stream and the plain output
    # printed it. Every way of cutting the text into three pieces must print the same.
    import io

    from agentloom.cli._stream import StreamPrinter
    from agentloom.messages import FinishEvent, TextDelta
    from agentloom.redact import Redactor

    redactor = Redactor(secrets=["tok-SECRET-123", "tok-SEC"])
    text = "use tok-SECRET-123 or tok-SECRET-12 then tok-SEC."
    want = "use [REDACTED] or [REDACTED]RET-12 then [REDACTED]."
    assert redactor.redact_text(text) == want
    for i in range(len(text) + 1):
        for j in range(i, len(text) + 1):
            out = io.StringIO()
            printer = StreamPrinter(out, redactor)
            for piece in (text[:i], text[i:j], text[j:]):
                printer("a", TextDelta(text=piece))
            printer("a", FinishEvent(finish_reason="stop"))
            printer.close()
            assert out.getvalue() == want + "\n", (i, j)
    # Held back only while it could be a secret's start: plain text goes out at once.
    out = io.StringIO()
    printer = StreamPrinter(out, redactor)
    printer("a", TextDelta(text="hello to"))
    assert out.getvalue() == "hello "
    printer("a", TextDelta(text="day"))
    assert out.getvalue() == "hello today"


def test_run_output_and_stream_redact_a_state_secret_the_model_echoes(
        server: FakeOpenAIServer, tmp_path: Path) -> None:
    flow = _flow(tmp_path, "name: echo\nconfig: {model: gpt-4o-mini}\n"
                 "state_schema: {token: {redact: true}}\n"
                 "steps:\n  - {id: a, type: llm_call, prompt: \"say {state.token}\", "
                 "output: said}\n")
    for flags in ([], ["--stream"]):
        server.script(FakeReply(text="your token is s3cr3t-t0ken-42, keep it", chunks=9))
        out = agentloom("run", flow, "-s", "token=s3cr3t-t0ken-42", "--no-checkpoint",
                        *flags, env=_env(server))
        assert out.returncode == 0, out.stderr
        assert out.stdout.splitlines()[0] == "your token is [REDACTED], keep it", flags


def _run_on_a_terminal(server: FakeOpenAIServer, *args: str,
                       wait_for_line: bool = True) -> tuple[int, str]:
    """Run with stderr on a pty; returns the exit code and what the terminal got. With
    `wait_for_line`, the model answers only once the progress line is on the terminal."""
    import os
    import pty
    import subprocess
    import sys
    import threading

    from tests.cli.test_commands import ROOT

    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "ANTHROPIC_", "GEMINI_", "AGENTLOOM_"))}
    env.update(_env(server), TERM="xterm", NO_COLOR="1")
    leader, follower = pty.openpty()
    seen = threading.Event()
    got: list[bytes] = []

    def read() -> None:
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                return
            if not chunk:
                return
            got.append(chunk)
            if b"running greet" in b"".join(got):
                seen.set()

    def reply(body: dict[str, Any]) -> FakeReply:
        seen.wait(timeout=60)  # answer once the line is up (or give up: the test fails)
        return FakeReply(text="Hi.")

    if wait_for_line:
        server.responder = reply
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        proc = subprocess.run([sys.executable, "-m", "agentloom.cli", *args], cwd=ROOT,
                              env=env, stdout=subprocess.DEVNULL, stderr=follower,
                              timeout=120, check=False)
    finally:
        os.close(follower)
        seen.set()
        reader.join(timeout=10)
        os.close(leader)
    return proc.returncode, b"".join(got).decode("utf-8", "replace")


def test_a_terminal_sees_a_sign_of_life_while_the_run_works(server: FakeOpenAIServer) -> None:
    code, terminal = _run_on_a_terminal(server, "run", "examples/hello.yaml", "--model",
                                        "gpt-4o-mini", "--no-checkpoint")
    assert code == 0
    assert "running greet" in terminal and "s · running greet" in terminal
    assert terminal.endswith("\r\x1b[2K")  # erased before the results


def test_no_sign_of_life_with_json_or_off_a_terminal(server: FakeOpenAIServer) -> None:
    code, terminal = _run_on_a_terminal(server, "run", "examples/hello.yaml", "--model",
                                        "gpt-4o-mini", "--no-checkpoint", "--json",
                                        wait_for_line=False)
    assert code == 0 and terminal == ""
    piped = agentloom("run", "examples/hello.yaml", "--model", "gpt-4o-mini",
                      "--no-checkpoint", env=_env(server))
    assert "running" not in piped.stderr and "\x1b" not in piped.stderr


def test_the_sign_of_life_is_for_a_person_at_a_terminal(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    from types import SimpleNamespace

    from agentloom.cli._progress import wanted

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("TERM", raising=False)
    plain = SimpleNamespace(json=False, stream=False)
    assert wanted(Terminal(), plain)
    assert not wanted(io.StringIO(), plain)
    assert not wanted(Terminal(), SimpleNamespace(json=True, stream=False))
    assert not wanted(Terminal(), SimpleNamespace(json=False, stream=True))
    monkeypatch.setenv("TERM", "dumb")
    assert not wanted(Terminal(), plain)


def test_batch_refuses_a_named_model_without_its_key_too(tmp_path: Path) -> None:
    inputs = tmp_path / "in.jsonl"
    inputs.write_text('{"id": "1", "name": "Ada"}\n', encoding="utf-8")
    out = agentloom("batch", "examples/hello.yaml", str(inputs), "--model", "gpt-4o",
                    "--output", str(tmp_path / "out.jsonl"))
    assert out.returncode == 1
    assert "no provider is configured for gpt-4o (step 'greet'): set OPENAI_API_KEY" \
        in out.stderr
    assert not (tmp_path / "out.jsonl").exists()
