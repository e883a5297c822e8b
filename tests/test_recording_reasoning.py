"""Spec 000, "Reasoning": the reasoning text reaches the step's result, but not the state
or a recording. `agentloom run --record` against the fake Anthropic server, with thinking
on, a tool loop (so the signed thinking block goes back in the next request) and a
streamed step: the recording holds no thinking text, in replies or in requests, and still
replays in strict mode offline."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentloom.cli import main
from agentloom.testing import FakeAnthropicServer, FakeReply

THOUGHT = "PRIVATE-THOUGHT the user's notes mention Friday"

FLOW = """\
name: think
config: {provider: anthropic, model: claude-sonnet-4-5, sandbox: {readable_paths: ["."]}}
steps:
  - id: look
    type: llm_call
    prompt: "When is the deploy? Read notes.txt."
    tools: [file_read]
    thinking: {enabled: true, budget_tokens: 2000}
    output: answer
  - id: plan
    type: llm_call
    depends_on: [look]
    prompt: "Plan around {state.answer}"
    stream: true
    thinking: {enabled: true, budget_tokens: 2000}
    output: plan
"""


def _reply(body: dict[str, Any]) -> FakeReply:
    tool_results = [b for m in body["messages"] if isinstance(m.get("content"), list)
                    for b in m["content"] if b.get("type") == "tool_result"]
    if body.get("tools") and not tool_results:
        return FakeReply(reasoning=THOUGHT + " (1)", reasoning_signature="sig-one",
                         tool_calls=[("file_read", {"path": "notes.txt"})])
    return FakeReply(text="Friday.", reasoning=THOUGHT + " (2)")


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeAnthropicServer]:
    s = FakeAnthropicServer(responder=_reply)
    s.start_in_thread()
    monkeypatch.chdir(tmp_path)
    for name in [k for k in os.environ if k.startswith(("OPENAI_", "GEMINI_", "GOOGLE_",
                                                         "OLLAMA_", "AGENTLOOM_"))]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-anthropic-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", s.base_url)
    Path("flow.yaml").write_text(FLOW, encoding="utf-8")
    Path("notes.txt").write_text("deploy on friday", encoding="utf-8")
    try:
        yield s
    finally:
        s.stop_thread()


def test_thinking_reaches_the_result_but_not_the_recording_which_still_replays(
        server: FakeAnthropicServer, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "flow.yaml", "--json", "--no-checkpoint", "--record", "rec.json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    live = json.loads(out.out)
    assert live["steps"]["look"]["reasoning_content"] == THOUGHT + " (2)"
    assert live["steps"]["plan"]["reasoning_content"] == THOUGHT + " (2)"
    assert THOUGHT not in json.dumps(live["state"])
    # The signed thinking block went back to Claude with its text in the second call.
    assert len(server.requests) == 3
    assert THOUGHT in json.dumps(server.requests[1].json)

    recording = Path("rec.json").read_text(encoding="utf-8")
    assert "PRIVATE-THOUGHT" not in recording
    assert "sig-one" in recording  # the signature stays: replay sends the block back
    exchanges = json.loads(recording)["exchanges"]
    assert [e["request"]["stream"] for e in exchanges] == [False, False, True]

    server.stop_thread()  # replay needs no network
    code = main(["run", "flow.yaml", "--json", "--no-checkpoint", "--replay", "rec.json",
                 "--replay-mode", "strict"])
    out = capsys.readouterr()
    assert code == 0, out.err
    replayed = json.loads(out.out)
    assert replayed["state"] == live["state"]
    assert replayed["steps"]["look"]["iterations"] == 2
    assert not replayed["steps"]["plan"]["reasoning_content"]


@pytest.mark.parametrize(("body", "kept"), [
    ({"content": [{"type": "thinking", "thinking": "T", "signature": "s"},
                  {"type": "text", "text": "ok"}]}, "s"),
    ({"type": "content_block_delta", "delta": {"type": "thinking_delta", "thinking": "T"}},
     "thinking_delta"),
    ({"candidates": [{"content": {"parts": [{"text": "T", "thought": True},
                                            {"text": "ok"}]}}]}, "ok"),
    ({"message": {"role": "assistant", "content": "ok", "thinking": "T"}}, "ok"),
    ({"choices": [{"delta": {"reasoning_content": "T", "content": "ok"}}]}, "ok"),
    ({"type": "response.reasoning_summary_text.delta", "delta": "T"}, "reasoning"),
    ({"output": [{"type": "reasoning", "encrypted_content": "E",
                  "summary": [{"type": "summary_text", "text": "T"}]}]}, "E"),
], ids=["anthropic", "anthropic-stream", "gemini", "ollama", "openai-compatible",
        "responses-stream", "responses"])
def test_each_protocols_reasoning_text_is_emptied_and_opaque_payloads_kept(
        body: dict[str, Any], kept: str) -> None:
    from agentloom.recording._reasoning import strip_reasoning

    assert strip_reasoning(body) is True
    text = json.dumps(body)
    assert '"T"' not in text and kept in text


def test_a_tool_argument_named_reasoning_is_the_users_and_stays() -> None:
    from agentloom.recording._reasoning import strip_reasoning

    body = {"content": [{"type": "tool_use", "name": "note", "input": {"reasoning": "mine"}}]}
    assert strip_reasoning(body) is False and "mine" in json.dumps(body)
