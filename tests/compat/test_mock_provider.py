"""`provider: mock` with `responses_file`, `latency_model`, `latency_ms`: strict replay of
the public AgentLoom's mock files, through the engine and through the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentloom.errors import ConfigError
from agentloom.recording import RecordingError
from agentloom.workflow import RunStatus, arun_workflow, load_workflow
from agentloom.workflow.engine.mock_clients import mock_clients, uses_mock

EXAMPLES = Path("/work/shared/compat/agentloom-examples")
ROOT = Path(__file__).resolve().parents[2]

FLOW = """\
name: m
config:
  provider: mock
  model: gpt-4o-mini
  responses_file: fixtures/replies.json
  latency_model: %s
  latency_ms: 250
steps:
  - {id: first, type: llm_call, prompt: "one", output: a}
  - {id: second, type: llm_call, prompt: "two {state.a}", depends_on: [first], output: b}
"""


class Clock:
    def __init__(self) -> None:
        self.t = 0.0
        self.sleeps: list[float] = []

    def now(self) -> float:
        return self.t

    def wall(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.t += seconds


def _flow(tmp_path: Path, latency: str = "constant", replies: dict | None = None) -> Path:
    (tmp_path / "fixtures").mkdir(exist_ok=True)
    (tmp_path / "fixtures" / "replies.json").write_text(json.dumps(replies or {
        "first": {"content": "A", "latency_ms": 40, "cost_usd": 0.001,
                  "usage": {"prompt_tokens": 2, "completion_tokens": 1}},
        "second": {"content": "B", "latency_ms": 60, "cost_usd": 0.002,
                   "usage": {"prompt_tokens": 3, "completion_tokens": 1}},
    }))
    path = tmp_path / "flow.yaml"
    path.write_text(FLOW % latency)
    return path


async def test_relative_file_resolves_beside_the_workflow_and_latency_is_constant(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wf = load_workflow(_flow(tmp_path))
    monkeypatch.chdir("/")
    clock = Clock()
    result = await arun_workflow(wf, clients=mock_clients(wf, clock=clock), clock=clock)
    assert result.status is RunStatus.SUCCESS, result.error
    assert result.state == {"a": "A", "b": "B"}
    assert clock.sleeps == [0.25, 0.25]
    assert str(result.cost_usd) == "0.003"


async def test_replay_latency_uses_each_replys_own(tmp_path: Path) -> None:
    wf = load_workflow(_flow(tmp_path, "replay"))
    clock = Clock()
    result = await arun_workflow(wf, clients=mock_clients(wf, clock=clock), clock=clock)
    assert result.ok
    assert clock.sleeps == [0.04, 0.06]


async def test_unmatched_call_fails_the_step_never_a_made_up_reply(tmp_path: Path) -> None:
    wf = load_workflow(_flow(tmp_path, replies={"first": "A"}))
    result = await arun_workflow(wf, clients=mock_clients(wf))
    assert result.status is RunStatus.FAILED
    second = result.steps["second"]
    assert second.error_type == "ReplayMismatch"
    assert "no reply for step 'second'" in (second.error or "")
    assert "replies.json" in (second.error or "")
    assert "Mock response" not in json.dumps(result.to_dict(), default=str)


def test_missing_file_names_it(tmp_path: Path) -> None:
    path = _flow(tmp_path)
    (tmp_path / "fixtures" / "replies.json").unlink()
    with pytest.raises(RecordingError) as info:
        mock_clients(load_workflow(path))
    assert str(tmp_path / "fixtures" / "replies.json") in str(info.value)
    assert "not found" in str(info.value)


def test_mock_without_a_file_says_what_is_needed(tmp_path: Path) -> None:
    path = tmp_path / "f.yaml"
    path.write_text("name: f\nconfig: {provider: mock}\nsteps:\n"
                    "  - {id: a, type: llm_call, prompt: hi}\n")
    wf = load_workflow(path)
    assert uses_mock(wf)
    with pytest.raises(ConfigError, match=r"needs config\.responses_file"):
        mock_clients(wf)


async def test_a_step_on_mock_beside_steps_on_another_provider(tmp_path: Path) -> None:
    from agentloom.testing.scripted import FunctionModel

    class Factory:
        def __init__(self) -> None:
            self.asked: list[tuple[str | None, str | None]] = []

        def client(self, *, model: str | None, provider: str | None = None,
                   **_: object) -> FunctionModel:
            self.asked.append((model, provider))
            return FunctionModel(lambda r: "echo: " + r.messages[-1].text)

    path = tmp_path / "f.yaml"
    (tmp_path / "r.json").write_text(json.dumps({"canned": "from the file"}))
    path.write_text("name: f\nconfig: {responses_file: r.json}\nsteps:\n"
                    "  - {id: canned, type: llm_call, provider: mock, prompt: hi, output: a}\n"
                    "  - {id: live, type: llm_call, prompt: 'got {state.a}', "
                    "depends_on: [canned]}\n")
    wf = load_workflow(path)
    assert uses_mock(wf)
    inner = Factory()
    result = await arun_workflow(wf, clients=mock_clients(wf, inner=inner))
    assert result.status is RunStatus.SUCCESS, result.error
    assert result.steps["live"].text == "echo: got from the file"
    assert inner.asked == [(None, None)]


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "ANTHROPIC_", "GEMINI_", "GOOGLE_", "AGENTLOOM_"))}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-m", "agentloom.cli", *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=60)


@pytest.mark.skipif(not EXAMPLES.is_dir(), reason="compat examples not present")
def test_cli_runs_the_tool_calling_example_from_its_recording(tmp_path: Path) -> None:
    out = _cli("run", str(EXAMPLES / "35_tool_calling.yaml"), "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["status"] == "success"
    assert result["state"]["answer"].startswith("The /get endpoint of httpbin accepts")
    assert result["tokens"] == 35 + 18 + 320 + 26


@pytest.mark.skipif(not EXAMPLES.is_dir(), reason="compat examples not present")
def test_cli_refuses_the_yaml_mock_example_naming_the_missing_recording(
        tmp_path: Path) -> None:
    out = _cli("run", str(EXAMPLES / "32_yaml_mock.yaml"), cwd=tmp_path)
    assert out.returncode == 1
    assert str(EXAMPLES / "recordings" / "byzantine.json") in out.stderr
    assert "not found" in out.stderr


@pytest.mark.skipif(not EXAMPLES.is_dir(), reason="compat examples not present")
def test_cli_mock_responses_flag_replays_the_record_and_replay_example(
        tmp_path: Path) -> None:
    rec = tmp_path / "rec.json"
    rec.write_text(json.dumps({"explain": "Two sentences.", "critique": "One flaw."}))
    out = _cli("run", str(EXAMPLES / "31_record_and_replay.yaml"), "--mock-responses",
               str(rec), "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["state"]["critique"] == "One flaw."
