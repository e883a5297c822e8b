"""Spec 000, "What the step writes": tokens and cost cover every call the step made. A
first attempt whose answered call (100 in, 10 out) was followed by a 503 is counted in the
step's and the run's totals after the retry succeeds, and in a step that fails for good."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from spec_servers import Fakes, run_cli, serve_fakes

from agentloom.testing import FakeError, FakeReply

# gpt-4o: $2.50 in, $10 out per 1M tokens.
_IN, _OUT = 2.5e-6, 10e-6

_FLOW = """\
name: retried
config: {{provider: openai, model: gpt-4o, sandbox: {{readable_paths: ["."]}}}}
steps:
  - id: look
    type: llm_call
    prompt: "What do the notes say?"
    tools: [file_read]
    retry: {{max_retries: {retries}, backoff_max: 0, jitter: false}}
    output: answer
"""

_READ = FakeReply(tool_calls=[("file_read", {"path": "notes.txt"})], input_tokens=100,
                  output_tokens=10)


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Fakes]:
    yield from serve_fakes(monkeypatch, tmp_path)


def test_a_retried_attempts_answered_call_counts_in_step_and_run(
        fakes: Fakes, capsys: pytest.CaptureFixture[str]) -> None:
    Path("notes.txt").write_text("deploy friday", encoding="utf-8")
    fakes.openai.script(_READ, FakeError(status=503, body="overloaded"),
                        FakeReply(text="Friday.", input_tokens=30, output_tokens=5))
    code, data, err = run_cli(capsys, _FLOW.format(retries=1))
    assert code == 0, err
    step = data["steps"]["look"]
    assert step["status"] == "success" and step["attempts"] == 2
    assert step["tokens"]["input"] == 130 and step["tokens"]["output"] == 15
    assert step["tokens"]["total"] == 145
    assert step["cost_usd"] == pytest.approx(130 * _IN + 15 * _OUT)
    assert data["tokens"] == 145 and data["summary"]["tokens"] == 145
    assert data["cost_usd"] == pytest.approx(130 * _IN + 15 * _OUT)
    assert len(fakes.openai.requests) == 3


def test_a_step_that_fails_for_good_still_reports_what_its_calls_used(
        fakes: Fakes, capsys: pytest.CaptureFixture[str]) -> None:
    Path("notes.txt").write_text("deploy friday", encoding="utf-8")
    fakes.openai.script(_READ, FakeError(status=503, body="overloaded"),
                        _READ, FakeError(status=503, body="overloaded"))
    code, data, _err = run_cli(capsys, _FLOW.format(retries=1))
    assert code == 1
    step = data["steps"]["look"]
    assert step["status"] == "failed" and step["attempts"] == 2
    assert step["tokens"]["input"] == 200 and step["tokens"]["output"] == 20
    assert step["cost_usd"] == pytest.approx(200 * _IN + 20 * _OUT)
    assert data["tokens"] == 220
