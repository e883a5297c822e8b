"""Where behaviour and the docs had to agree, through `agentloom run`: the finish reason
at the tool-loop limit (llm_call.md), MCP tools named as declared (`calc.add`) in
summaries (tools.md), and an unpriced model under a cost budget ending
`budget_exceeded` (workflows.md)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from spec_servers import Fakes, run_cli, serve_fakes

from agentloom.testing import FakeReply


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Fakes]:
    yield from serve_fakes(monkeypatch, tmp_path)


_LOOP = """\
name: limit
config: {provider: openai, model: gpt-4o, sandbox: {readable_paths: ["."]}}
steps:
  - id: look
    type: llm_call
    prompt: "What do the notes say?"
    tools: [file_read]
    max_tool_iterations: 2
    output: answer
"""


@pytest.mark.parametrize(("text", "finish"), [
    ("Still reading.", "max_tool_iterations"), ("", "max_tool_iterations_no_answer")])
def test_the_finish_reason_at_the_loop_limit_depends_on_the_last_replys_text(
        fakes: Fakes, capsys: pytest.CaptureFixture[str], text: str, finish: str) -> None:
    Path("notes.txt").write_text("deploy friday", encoding="utf-8")
    fakes.openai.responder = lambda _b: FakeReply(
        text=text, tool_calls=[("file_read", {"path": "notes.txt"})])
    code, data, err = run_cli(capsys, _LOOP)
    assert code == 0, err
    step = data["steps"]["look"]
    assert step["status"] == "success" and step["finish_reason"] == finish
    assert step["text"] == text and step["iterations"] == 2
    # The last reply's call doesn't run: no later call would read its result.
    assert step["summary"]["tool_calls"] == {"file_read": 1}


_MCP = f"""\
name: mcp
config: {{provider: openai, model: gpt-4o}}
mcp_servers:
  calc:
    command: {sys.executable}
    args: [-m, agentloom.testing.mcp_server]
steps:
  - id: sum
    type: llm_call
    prompt: "Add 2 and 3."
    mcp: [calc.add]
    output: total
"""


def test_mcp_calls_are_counted_under_the_declared_name(
        fakes: Fakes, capsys: pytest.CaptureFixture[str]) -> None:
    def reply(body: dict[str, Any]) -> FakeReply:
        if any(m.get("role") == "tool" for m in body["messages"]):
            return FakeReply(text="5")
        return FakeReply(tool_calls=[("calc_add", {"a": 2, "b": 3})])

    fakes.openai.responder = reply
    code, data, err = run_cli(capsys, _MCP)
    assert code == 0, err
    # The model is shown the wire-safe name ...
    assert [t["function"]["name"] for t in fakes.openai.requests[0].json["tools"]] == [
        "calc_add"]
    # ... and the summary names the tool as the step declared it.
    summary = data["steps"]["sum"]["summary"]
    assert summary["tool_calls"] == {"calc.add": 1} and summary["tool_errors"] == {}


def test_an_unpriced_model_under_a_budget_ends_budget_exceeded(
        fakes: Fakes, capsys: pytest.CaptureFixture[str]) -> None:
    flow = ("name: unpriced\nconfig: {provider: openai, model: my-fine-tune}\nsteps:\n"
            "  - {id: a, type: llm_call, prompt: hi}\n  - {id: b, type: llm_call, prompt: ho}\n")
    code, data, _err = run_cli(capsys, flow, "--budget", "1")
    assert code == 1
    assert data["status"] == "budget_exceeded"
    assert data["summary"]["status"] == "budget_exceeded"
    assert "'my-fine-tune'" in data["error"] and "no price" in data["error"]
    assert fakes.openai.requests == []  # fails closed: nothing is sent
