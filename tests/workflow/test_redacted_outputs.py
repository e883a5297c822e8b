"""Spec 000, "Reasoning": `reasoning_content` is redacted when the step's output is. A
step whose `output` is a redacted state key keeps its reply out of everything the run
writes: `--json` (state, `output`, `text`, `reasoning_content`), the JSONL trace with
content, OpenTelemetry spans, the recording and the checkpoint store, and a later step
that quotes it still replays in strict mode. `state_schema` keys written as dotted paths
(`x.date`, `creds.*`) redact as plain keys do."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentloom.cli import main
from agentloom.testing import FakeAnthropicServer, FakeReply

PLAN = "SECRET-PLAN move the queue on Friday\nthen drain the old one"
THOUGHT = "SECRET-THOUGHT weighing the two queues"

FLOW = """\
name: secret
config: {provider: anthropic, model: claude-sonnet-4-5}
state_schema: {plan: {redact: true}}
steps:
  - id: draft
    type: llm_call
    prompt: "Plan the migration."
    max_tokens: 8000
    thinking: {enabled: true, budget_tokens: 4000}
    stream: true
    output: plan
  - id: review
    type: llm_call
    depends_on: [draft]
    prompt: "Review this plan: {state.plan}"
    output: review
"""


def _reply(body: dict[str, Any]) -> FakeReply:
    if "Review" in json.dumps(body["messages"]):
        return FakeReply(text="Looks fine.")
    return FakeReply(text=PLAN, reasoning=THOUGHT)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeAnthropicServer]:
    s = FakeAnthropicServer(responder=_reply)
    s.start_in_thread()
    monkeypatch.chdir(tmp_path)
    for name in [k for k in os.environ if k.startswith(("OPENAI_", "GEMINI_", "GOOGLE_",
                                                         "OLLAMA_", "AGENTLOOM_", "OTEL_"))]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-anthropic-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", s.base_url)
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    try:
        yield s
    finally:
        s.stop_thread()


def _store_text(path: Path) -> str:
    with sqlite3.connect(path) as db:
        return "\n".join(db.iterdump())


def test_a_redacted_output_is_redacted_everywhere_it_appears(
        server: FakeAnthropicServer, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    Path("flow.yaml").write_text(FLOW, encoding="utf-8")
    store = tmp_path / "runs.db"
    code = main(["run", "flow.yaml", "--json", "--record", "rec.json", "--trace", "t.jsonl",
                 "--trace-content", "--otel", "--store", f"sqlite:///{store}"])
    out = capsys.readouterr()
    assert code == 0, out.err
    # The model did write the plan, and the next step did get it.
    assert PLAN in server.requests[1].json["messages"][0]["content"][0]["text"]
    data = json.loads(out.out)
    draft = data["steps"]["draft"]
    assert data["state"]["plan"] == "[REDACTED]"
    assert draft["output"] == draft["text"] == draft["reasoning_content"] == "[REDACTED]"
    assert data["steps"]["review"]["output"] == "Looks fine."  # other steps stay readable
    artefacts = {"stdout": out.out, "spans": out.err,
                 "trace": Path("t.jsonl").read_text(encoding="utf-8"),
                 "recording": Path("rec.json").read_text(encoding="utf-8"),
                 "store": _store_text(store)}
    assert "Looks fine." in artefacts["trace"] and "invoke_workflow" in artefacts["spans"]
    for name, text in artefacts.items():
        for secret in ("SECRET-PLAN", "SECRET-THOUGHT", "drain the old one"):
            assert secret not in text, (name, secret)

    # Replayed offline in strict mode, the review step's prompt quotes `[REDACTED]` where
    # the recorded one quoted the plan, and still finds its record.
    server.stop_thread()
    code = main(["run", "flow.yaml", "--json", "--no-checkpoint", "--replay", "rec.json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    replayed = json.loads(out.out)
    assert replayed["state"] == {"plan": "[REDACTED]", "review": "Looks fine."}


DOTTED = """\
name: dotted
config: {provider: anthropic, model: claude-sonnet-4-5}
state_schema:
  x.date: {redact: true}
  creds.*: {redact: true}
state:
  x: {place: Oslo}
steps:
  - {id: when, type: llm_call, prompt: "When?", output: x.date}
  - {id: key, type: llm_call, prompt: "Key?", output: creds.token}
  - {id: where, type: llm_call, prompt: "Where?", output: x.city}
"""


def test_dotted_state_schema_keys_redact_like_plain_ones(
        server: FakeAnthropicServer, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    replies = {"When?": "2026-12-24 at noon", "Key?": "tok-4242-private", "Where?": "Bergen"}
    server.responder = lambda body: FakeReply(
        text=replies[body["messages"][-1]["content"][0]["text"]])
    Path("flow.yaml").write_text(DOTTED, encoding="utf-8")
    code = main(["run", "flow.yaml", "--json", "--no-checkpoint", "--trace", "t.jsonl",
                 "--trace-content", "--record", "rec.json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    data = json.loads(out.out)
    assert data["state"] == {"x": {"place": "Oslo", "date": "[REDACTED]",
                                   "city": "Bergen"},
                             "creds": {"token": "[REDACTED]"}}
    assert data["steps"]["when"]["output"] == data["steps"]["key"]["text"] == "[REDACTED]"
    assert data["steps"]["where"]["output"] == "Bergen"
    for text in (out.out, Path("t.jsonl").read_text(), Path("rec.json").read_text()):
        assert "2026-12-24" not in text and "tok-4242" not in text
