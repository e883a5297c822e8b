"""The shipped examples as a user runs them: `agentloom run examples/...` from the repo
root, against the fake OpenAI server on loopback (in-process CLI)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentloom.cli import main
from agentloom.testing._server import FakeReply
from agentloom.testing.fake_openai import FakeOpenAIServer

ROOT = Path(__file__).parents[2]


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    fake = FakeOpenAIServer()
    fake.start_in_thread()
    for name in ("ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "OLLAMA_HOST",
                 "AGENTLOOM_PROVIDER", "AGENTLOOM_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_BASE_URL", fake.openai_base_url)
    monkeypatch.chdir(ROOT)
    try:
        yield fake
    finally:
        fake.stop_thread()


def test_agents_review_runs_with_its_shipped_tools(
        server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    improved = "Our release ships on Friday 5 December."
    server.script(
        FakeReply(tool_calls=[("lookup_date", {"event": "release"})]),
        FakeReply(text=improved),
        FakeReply(tool_calls=[("word_count", {"text": improved})]),
        FakeReply(text='{"approved": true, "reason": "Dated and short."}'),
        FakeReply(text="We ship Friday!"),
    )
    code = main(["run", "examples/agents_review.yaml", "--tools",
                 "examples/agents_review_tools.py", "--json",
                 "--store", str(tmp_path / "runs.db")])
    out: Any = json.loads(capsys.readouterr().out)
    assert code == 0, out
    assert out["state"]["verdict"] == {"approved": True, "reason": "Dated and short."}
    # The shipped tools really ran: their results went back to the model.
    tool_results = [m["content"] for r in server.requests for m in r.json["messages"]
                    if m["role"] == "tool"]
    assert tool_results == ["Friday 5 December", "7"]


def test_a_failed_step_says_so_once(server: FakeOpenAIServer, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    from agentloom.testing._server import FakeError

    flow = tmp_path / "two.yaml"
    flow.write_text("""
name: two
config: {model: gpt-4o-mini}
steps:
  - {id: first, type: llm_call, prompt: "one", retry: {max_retries: 0}}
  - {id: second, type: llm_call, depends_on: [first], prompt: "two"}
""", encoding="utf-8")
    server.script(FakeError(status=400))
    assert main(["run", str(flow), "--no-checkpoint"]) == 1
    err = capsys.readouterr().err
    assert err.count("returned HTTP 400") == 1, err
    assert err.startswith("step 'first' failed: openai returned HTTP 400")
