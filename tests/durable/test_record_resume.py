"""A recorded run stays recorded when it is resumed: `run --record FILE` keeps FILE in
the run's meta, and each resume adds its exchanges to the same recording (not over it),
so the whole run replays offline."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from openai_thread import cli_serving

from agentloom.cli import main
from agentloom.testing._server import FakeReply

GATED = """\
name: gated
config: {model: gpt-4o-mini}
steps:
  - {id: a, type: llm_call, prompt: "first question"}
  - {id: ok, type: approval_gate, depends_on: [a], message: "go on?"}
  - {id: b, type: llm_call, depends_on: [ok], prompt: "second question"}
"""


def _prompts(recording: Path) -> list[str]:
    exchanges = json.loads(recording.read_text())["exchanges"]
    return [ex["request"]["body"]["messages"][-1]["content"] for ex in exchanges]


def _status(capsys: Any, *argv: str) -> tuple[int, str]:
    code = main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)["status"]


def test_a_resume_adds_to_the_runs_recording_and_the_whole_run_replays(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: Any) -> None:
    (tmp_path / "gated.yaml").write_text(GATED)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with cli_serving(monkeypatch, tmp_path, lambda request: FakeReply(text="an answer")) as server:
        assert _status(capsys, "run", "gated.yaml", "--run-id", "g1",
                       "--record", "rec.json") == (3, "paused")
        assert _prompts(tmp_path / "rec.json") == ["first question"]
        monkeypatch.chdir(elsewhere)  # the recording's path was kept absolute
        assert _status(capsys, "resume", "g1", "--approve", "--store",
                       str(tmp_path / ".agentloom" / "runs.db")) == (0, "success")
        assert _prompts(tmp_path / "rec.json") == ["first question", "second question"]
        assert len(server.requests) == 2
    # The server is gone: the whole run, gate and all, replays from the one file.
    monkeypatch.chdir(tmp_path)
    assert _status(capsys, "run", "gated.yaml", "--run-id", "g2",
                   "--replay", "rec.json") == (3, "paused")
    assert _status(capsys, "resume", "g2", "--approve") == (0, "success")
    assert _prompts(tmp_path / "rec.json") == ["first question", "second question"]


def test_a_lenient_replay_stays_lenient_when_resumed(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: Any) -> None:
    (tmp_path / "gated.yaml").write_text(GATED)
    with cli_serving(monkeypatch, tmp_path, lambda request: FakeReply(text="an answer")):
        assert _status(capsys, "run", "gated.yaml", "--run-id", "g1",
                       "--record", "rec.json") == (3, "paused")
        assert _status(capsys, "resume", "g1", "--approve") == (0, "success")
    # The step after the gate renamed: only a lenient replay (the request alone) finds it.
    (tmp_path / "renamed.yaml").write_text(GATED.replace("id: b,", "id: b_renamed,"))
    assert _status(capsys, "run", "renamed.yaml", "--run-id", "g2", "--replay", "rec.json",
                   "--replay-mode", "lenient") == (3, "paused")
    assert _status(capsys, "resume", "g2", "--approve") == (0, "success")
    # Told otherwise, a resume matches as it is told.
    assert _status(capsys, "run", "renamed.yaml", "--run-id", "g3", "--replay", "rec.json",
                   "--replay-mode", "lenient") == (3, "paused")
    assert _status(capsys, "resume", "g3", "--approve", "--replay-mode", "strict") == (
        1, "failed")
