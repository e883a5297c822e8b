"""A resumed run spends what is left of its caps, not the whole cap again: the steps that
finished before it stopped count, and so do the model replies it is served from the store
instead of asking again (`resume --retry-failed` re-runs a map whose other items' replies
were stored).

Every reply reports 19 tokens (12 in, 7 out); a call reserves its prompt's estimate plus
`max_tokens` (10) first: 17 tokens for the short prompts here, 29 for the long one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openai_thread import Flaky, cli_serving

from agentloom.cli import main

LONG = "Tell me one short fact about the first thing, in a few words only."

GATED = f"""\
name: gated
config: {{model: gpt-4o-mini, max_tokens_per_run: 40}}
steps:
  - {{id: a, type: llm_call, max_tokens: 10, prompt: "{LONG}"}}
  - {{id: ok, type: approval_gate, depends_on: [a], message: "go on?"}}
  - {{id: b, type: llm_call, max_tokens: 10, depends_on: [ok], prompt: "{LONG}"}}
"""

MAP = """\
name: fan
config: {model: gpt-4o-mini, max_tokens_per_run: 70}
state: {items: ["x1", "b-x2", "x3"]}
steps:
  - id: each
    type: map
    over: state.items
    step: {id: one, type: llm_call, max_tokens: 10, prompt: "{state.item} please"}
  - {id: after, type: llm_call, max_tokens: 10, depends_on: [each], prompt: "after: done"}
"""


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Flaky]:
    served = Flaky()
    with cli_serving(monkeypatch, tmp_path, served):
        yield served


def _run(capsys: Any, *argv: str) -> tuple[int, dict[str, Any], str]:
    code = main([*argv, "--json"])
    out = capsys.readouterr()
    return code, json.loads(out.out), out.err


def test_a_run_resumed_after_a_gate_spends_only_what_its_cap_has_left(
        model: Flaky, tmp_path: Path, capsys: Any) -> None:
    (tmp_path / "gated.yaml").write_text(GATED)
    code, result, _ = _run(capsys, "run", "gated.yaml", "--run-id", "g1")
    assert code == 3 and result["status"] == "paused"
    code, result, _ = _run(capsys, "resume", "g1", "--approve")
    # `a` spent 19 of 40; `b` reserves 29, which would pass the cap: it is never sent.
    assert result["status"] == "budget_exceeded", result
    assert "token budget 40 would be crossed" in result["error"]
    assert "(used 19," in result["error"]
    assert len(model.prompts) == 1


def test_replies_served_on_a_retry_count_against_the_cap(
        model: Flaky, tmp_path: Path, capsys: Any) -> None:
    (tmp_path / "fan.yaml").write_text(MAP)
    code, result, _ = _run(capsys, "run", "fan.yaml", "--run-id", "m1")
    assert code == 1 and result["status"] == "failed"
    model.failing = False
    code, result, _ = _run(capsys, "resume", "m1", "--retry-failed")
    # x1 and x3 are served from the store (38 tokens, paid before), b-x2 is asked (19):
    # 57 of 70 spent, and `after` would reserve 17 more. It is never sent.
    assert result["status"] == "budget_exceeded", result
    assert "(used 57," in result["error"]
    assert sorted(model.prompts) == ["b-x2 please", "b-x2 please", "x1 please", "x3 please"]


def test_a_cap_given_on_the_command_line_holds_after_a_resume(
        model: Flaky, tmp_path: Path, capsys: Any) -> None:
    (tmp_path / "gated.yaml").write_text(GATED.replace(", max_tokens_per_run: 40", ""))
    code, result, _ = _run(capsys, "run", "gated.yaml", "--run-id", "g2",
                           "--max-tokens-per-run", "40")
    assert code == 3
    code, result, _ = _run(capsys, "resume", "g2", "--approve")
    assert result["status"] == "budget_exceeded", result
    assert "token budget 40 would be crossed" in result["error"]
    assert len(model.prompts) == 1


def test_a_run_stopped_at_its_cap_goes_on_under_a_higher_one(
        model: Flaky, tmp_path: Path, capsys: Any) -> None:
    (tmp_path / "gated.yaml").write_text(GATED)
    _run(capsys, "run", "gated.yaml", "--run-id", "g3")
    code, result, err = _run(capsys, "resume", "g3", "--approve")
    assert result["status"] == "budget_exceeded"
    assert "raise its cap and go on with: agentloom resume g3 --retry-failed --budget USD" in err
    code, result, err = _run(capsys, "resume", "g3")
    assert code == 1 and "stopped at its budget" in err and "--retry-failed --budget" in err
    code, result, err = _run(capsys, "resume", "g3", "--retry-failed",
                             "--max-tokens-per-run", "100")
    assert code == 0 and result["status"] == "success", err
    budget = result["summary"]["budget"]
    assert budget["max_tokens"] == 100 and budget["spent_tokens"] == 38  # 19 before, 19 now
    assert len(model.prompts) == 2  # `a` was not asked again


def test_a_run_on_mock_replies_resumes_on_them(
        model: Flaky, tmp_path: Path, capsys: Any) -> None:
    (tmp_path / "gated.yaml").write_text(GATED.replace(", max_tokens_per_run: 40", ""))
    (tmp_path / "replies.json").write_text(json.dumps({"a": "mock a", "b": "mock b"}))
    code, _, err = _run(capsys, "run", "gated.yaml", "--run-id", "k1",
                        "--mock-responses", "replies.json")
    assert code == 3, err
    code, result, err = _run(capsys, "resume", "k1", "--approve")
    assert code == 0, err
    assert result["steps"]["b"]["output"] == "mock b"
    assert model.prompts == []  # neither process asked the model server
