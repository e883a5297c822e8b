"""Hostile public-AgentLoom mock-response files: every reply is checked field by field
when the file is loaded, and a bad one is one error naming the file, the entry and the
field, before any step runs (not a traceback, nor a value taken as if a model sent it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentloom.cli import main
from agentloom.recording import RecordingError
from agentloom.recording.mock_responses import load_agentloom_mock_responses

FLOW = """\
name: hostile
config:
  provider: openai
  model: gpt-4o-mini
  latency_model: replay
steps:
  - id: ask
    type: llm_call
    prompt: Say hi
    output: answer
"""
MAX_REPLIES = 100_000
"""mock_responses.MAX_REPLIES, written out so this file runs against code without it."""


@pytest.mark.parametrize("entry, field", [
    ({"content": ["a", "b"]}, "content must be a string"),
    ({"content": "hi", "usage": {"prompt_tokens": "ten"}}, "usage.prompt_tokens must be"),
    ({"content": "hi", "usage": {"completion_tokens": -5}}, "usage.completion_tokens must be"),
    ({"content": "hi", "usage": {"prompt_tokens": 1.5}}, "usage.prompt_tokens must be"),
    ({"content": "hi", "usage": [1, 2]}, "usage must be an object"),
    ({"content": "hi", "cost_usd": "cheap"}, "cost_usd must be a finite number"),
    ({"content": "hi", "cost_usd": -1}, "cost_usd must be a finite number"),
    ({"content": "hi", "latency_ms": "slow"}, "latency_ms must be a number"),
    ({"content": "hi", "latency_ms": 1e300}, "latency_ms must be a number"),
    ({"content": "hi", "finish_reason": 5}, "finish_reason must be a string"),
    ({"content": "hi", "model": {"a": 1}}, "model must be a string"),
    ({"tool_calls": {"name": "x"}}, "tool_calls must be a list"),
    ({"tool_calls": [{"name": ["x"]}]}, "tool_calls[0].name must be"),
    ({"tool_calls": [{"name": "x", "arguments": [1, 2]}]}, "tool_calls[0].arguments must be"),
    ({"tool_calls": [{"name": "x", "id": {"a": 1}}]}, "tool_calls[0].id must be a string"),
])
def test_a_bad_field_is_refused_at_load_naming_file_entry_and_field(
        tmp_path: Path, entry: dict[str, object], field: str) -> None:
    path = tmp_path / "mock.json"
    path.write_text(json.dumps({"ask": [entry, "done"]}))
    with pytest.raises(RecordingError) as info:
        load_agentloom_mock_responses(path)
    assert str(info.value).startswith(f"{path}: entry 'ask'[0]: ")
    assert field in str(info.value)


@pytest.mark.parametrize("text", ['NaN', 'Infinity'])
def test_nan_and_infinite_numbers_are_refused(tmp_path: Path, text: str) -> None:
    for body, field in ((f'{{"ask": {{"content": "hi", "cost_usd": {text}}}}}', "cost_usd"),
                        (f'{{"ask": {{"content": "hi", "latency_ms": {text}}}}}', "latency_ms"),
                        (f'{{"ask": {{"usage": {{"prompt_tokens": {text}}}}}}}',
                         "usage.prompt_tokens")):
        path = tmp_path / "mock.json"
        path.write_text(body)
        with pytest.raises(RecordingError, match=rf"entry 'ask': {field} must be"):
            load_agentloom_mock_responses(path)


def test_an_empty_list_of_replies_and_too_many_replies(tmp_path: Path) -> None:
    path = tmp_path / "mock.json"
    path.write_text('{"ask": []}')
    with pytest.raises(RecordingError, match=r"entry 'ask': an empty list"):
        load_agentloom_mock_responses(path)
    path.write_text(json.dumps({"ask": ["hi"] * (MAX_REPLIES + 1)}))
    with pytest.raises(RecordingError, match=f"more than {MAX_REPLIES} replies"):
        load_agentloom_mock_responses(path)


def test_good_replies_still_load(tmp_path: Path) -> None:
    path = tmp_path / "mock.json"
    path.write_text(json.dumps({"_version": 2, "ask": [
        {"content": None, "tool_calls": [{"name": "x", "arguments": '{"a": 1}'}],
         "usage": {"prompt_tokens": 3, "completion_tokens": None, "total_tokens": 3},
         "cost_usd": 0, "latency_ms": 12}, {"text": "done", "usage": None}]}))
    (first, second) = load_agentloom_mock_responses(path).by_step["ask"]
    assert first.response.tool_calls[0].arguments == '{"a": 1}'
    assert first.response.usage.input_tokens == 3 and first.latency_ms == 12.0
    assert second.response.text == "done"


@pytest.mark.parametrize("entry, field", [
    ({"content": "hi", "usage": {"prompt_tokens": "ten"}}, "usage.prompt_tokens"),
    ({"content": "hi", "usage": "lots"}, "usage"),
    ({"content": "hi", "cost_usd": [1]}, "cost_usd"),
    ({"content": "hi", "finish_reason": ["stop"]}, "finish_reason"),
])
def test_the_cli_says_one_line_before_any_step_runs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], entry: dict[str, object],
        field: str) -> None:
    flow = tmp_path / "flow.yaml"
    flow.write_text(FLOW)
    mock = tmp_path / "mock.json"
    mock.write_text(json.dumps({"ask": entry}))
    code = main(["run", str(flow), "--mock-responses", str(mock)])
    err = capsys.readouterr().err
    assert code == 1
    assert f"{mock}: entry 'ask': {field} must be" in err
    assert "Traceback" not in err and "step 'ask'" not in err
