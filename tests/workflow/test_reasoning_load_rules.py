"""Spec 000, "Reasoning", through `agentloom run`: budget_tokens is ignored for OpenAI and
Ollama (the max_tokens-above-the-budget rule is Claude's alone), and the load-time checks
see the model `--model` gives, so a Claude step without a budget fails at load."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from spec_servers import Fakes, run_cli, serve_fakes


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Fakes]:
    yield from serve_fakes(monkeypatch, tmp_path)

_FLOW = """\
name: reason
config: {{provider: {provider}, model: {model}}}
steps:
  - id: plan
    type: llm_call
    prompt: "Plan the migration."
    max_tokens: 1000
    thinking: {{enabled: true, budget_tokens: 4000{level}}}
    output: plan
"""


@pytest.mark.parametrize(("provider", "model", "level"), [
    ("openai", "o3-mini", ", level: low"), ("openai", "gpt-4o", ""),
    ("ollama", "llama3.2", ""),
])
def test_budget_tokens_is_ignored_off_claude_so_a_small_max_tokens_loads(
        fakes: Fakes, capsys: pytest.CaptureFixture[str], provider: str, model: str,
        level: str) -> None:
    code, data, err = run_cli(capsys, _FLOW.format(provider=provider, model=model,
                                                   level=level))
    assert code == 0, err
    assert data["steps"]["plan"]["status"] == "success"
    server = fakes.openai if provider == "openai" else fakes.ollama
    (request,) = server.requests
    assert "4000" not in str(request.json)  # the budget is not sent anywhere


def test_claude_keeps_the_rule_max_tokens_must_be_above_the_budget(
        fakes: Fakes, capsys: pytest.CaptureFixture[str]) -> None:
    code, data, _ = run_cli(capsys, _FLOW.format(provider="anthropic",
                                                   model="claude-sonnet-4-5", level=""))
    assert code == 1 and data["status"] == "invalid"
    (problem,) = data["problems"]
    assert problem["file"] == "flow.yaml" and problem["line"] == 8
    assert "must be above thinking.budget_tokens" in problem["message"]
    assert fakes.anthropic.requests == []


_OVERRIDDEN = """\
name: over
config: {provider: anthropic, model: gpt-4o}
steps:
  - {id: first, type: llm_call, prompt: "hello", output: a}
  - id: plan
    type: llm_call
    prompt: "Plan it."
    thinking: {enabled: true}
    output: plan
"""


def test_load_checks_see_the_model_that_dash_dash_model_gives(
        fakes: Fakes, capsys: pytest.CaptureFixture[str]) -> None:
    code, data, _ = run_cli(capsys, _OVERRIDDEN, "--model", "claude-sonnet-4-5")
    assert code == 1 and data["status"] == "invalid"
    (problem,) = data["problems"]
    assert problem["file"] == "flow.yaml" and problem["line"] == 8
    assert "needs thinking.budget_tokens" in problem["message"]
    assert fakes.anthropic.requests == []  # not even the independent step ran


def test_without_dash_dash_model_the_same_file_loads(
        fakes: Fakes, capsys: pytest.CaptureFixture[str]) -> None:
    code, data, err = run_cli(capsys, _OVERRIDDEN.replace("provider: anthropic",
                                                          "provider: openai"))
    assert code == 0, err
    assert data["steps"]["plan"]["model"] == "gpt-4o"


def test_batch_load_checks_see_dash_dash_model_too(
        fakes: Fakes, capsys: pytest.CaptureFixture[str]) -> None:
    from agentloom.cli import main

    Path("flow.yaml").write_text(_OVERRIDDEN, encoding="utf-8")
    Path("inputs.jsonl").write_text('{"n": 1}\n', encoding="utf-8")
    code = main(["batch", "flow.yaml", "inputs.jsonl", "--model", "claude-sonnet-4-5"])
    err = capsys.readouterr().err
    assert code == 1 and "needs thinking.budget_tokens" in err
    assert fakes.anthropic.requests == []
