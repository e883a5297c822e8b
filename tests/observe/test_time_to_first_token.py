"""Spec 000, "Streaming": a streaming step records its time to first token in its result
and its metrics. Through `agentloom run --stream --json --trace FILE --otel` against the
fake OpenAI server: the JSONL trace's response event, the chat span's
`gen_ai.response.time_to_first_chunk` and the `gen_ai.client.operation.time_to_first_chunk`
histogram carry it; a call that doesn't stream reports none."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from agentloom.cli import main
from agentloom.testing import FakeOpenAIServer, FakeReply

FLOW = """\
name: ttft
config: {provider: openai, model: gpt-4o-mini}
steps:
  - {id: streamed, type: llm_call, prompt: "Tell a story.", stream: true}
  - {id: plain, type: llm_call, prompt: "Say no.", stream: false}
"""


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeOpenAIServer]:
    s = FakeOpenAIServer(responder=lambda _b: FakeReply(text="Once upon a time, the end."))
    s.start_in_thread()
    monkeypatch.chdir(tmp_path)
    for name in [k for k in os.environ if k.startswith(("OTEL_", "ANTHROPIC_", "GEMINI_",
                                                         "GOOGLE_", "OLLAMA_", "AGENTLOOM_"))]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_BASE_URL", s.openai_base_url)
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "console")
    Path("flow.yaml").write_text(FLOW, encoding="utf-8")
    try:
        yield s
    finally:
        s.stop_thread()


def _json_objects(text: str) -> list[Any]:
    """The JSON documents the console exporters wrote, one after another."""
    decoder = json.JSONDecoder()
    found, at = [], 0
    while (at := text.find("{", at)) != -1:
        try:
            value, end = decoder.raw_decode(text, at)
        except ValueError:
            at += 1
            continue
        found.append(value)
        at = end
    return found


def test_a_streaming_steps_time_to_first_token_reaches_trace_span_and_metric(
        server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "flow.yaml", "--json", "--no-checkpoint", "--trace", "run.jsonl",
                 "--otel"])
    out = capsys.readouterr()
    assert code == 0, out.err
    steps = json.loads(out.out)["steps"]
    ttft = steps["streamed"]["time_to_first_token"]
    assert ttft is not None and ttft >= 0 and steps["plain"]["time_to_first_token"] is None

    events = [json.loads(line) for line in Path("run.jsonl").read_text().splitlines()]
    responses = {e["step_id"]: e for e in events if e["event"] == "response"}
    assert responses["streamed"]["time_to_first_token"] == pytest.approx(ttft, abs=1e-5)
    assert "time_to_first_token" not in responses["plain"]

    exported = _json_objects(out.err)
    chats = [s for s in exported
             if isinstance(s, dict) and str(s.get("name", "")).startswith("chat")]
    with_ttft = [s for s in chats if "gen_ai.response.time_to_first_chunk" in s["attributes"]]
    assert len(chats) == 2 and len(with_ttft) == 1  # the streamed call's span only
    assert with_ttft[0]["attributes"]["gen_ai.response.time_to_first_chunk"] == \
        pytest.approx(ttft, abs=1e-5)

    points = [p for doc in exported if isinstance(doc, dict) and "resource_metrics" in doc
              for rm in doc["resource_metrics"] for sm in rm["scope_metrics"]
              for m in sm["metrics"]
              if m["name"] == "gen_ai.client.operation.time_to_first_chunk"
              for p in m["data"]["data_points"]]
    assert len(points) == 1 and points[0]["count"] == 1  # the streamed call only
    assert points[0]["sum"] == pytest.approx(ttft, abs=1e-5)
    assert points[0]["attributes"]["gen_ai.provider.name"] == "openai"
