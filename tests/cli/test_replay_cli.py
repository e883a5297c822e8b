"""`run --record`, then `replay` offline: a streamed run replays byte for byte; a changed
prompt fails strict replay with a diff; secrets never reach any artefact of a run."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from agentloom.cli import main
from agentloom.testing._server import FakeReply
from agentloom.testing.fake_openai import FakeOpenAIServer

FLOW = """\
name: rec
config: {model: gpt-4o-mini, provider: openai}
state_schema: {api_token: {redact: true}}
state: {topic: tea}
steps:
  - {id: one, type: llm_call, prompt: "write about {state.topic}", output: a}
  - {id: two, type: llm_call, depends_on: [one], prompt: "shorten: {state.a}", output: b}
"""


def _reply(body: dict[str, Any]) -> FakeReply:
    return FakeReply(text="streamed words about " + str(body["messages"][-1]["content"])[:40])


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    s = FakeOpenAIServer(responder=_reply)
    s.start_in_thread()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-123456789")
    monkeypatch.setenv("OPENAI_BASE_URL", s.openai_base_url)
    yield s
    s.stop_thread()


def test_streamed_recording_replays_byte_for_byte_offline(server: Any, tmp_path: Path,
                                                          capsys: Any) -> None:
    (tmp_path / "flow.yaml").write_text(FLOW)
    assert main(["run", "flow.yaml", "--stream", "--record", "rec.json",
                 "--no-checkpoint"]) == 0
    live = capsys.readouterr().out
    assert "streamed words about write about tea" in live
    n = len(server.requests)
    server.stop_thread()  # replay must not need the network
    assert main(["replay", "rec.json", "flow.yaml", "--stream"]) == 0
    replayed = capsys.readouterr().out
    # Everything but the timing on the summary line is the same, byte for byte.
    assert live.rsplit("·", 1)[0] == replayed.rsplit("·", 1)[0]
    assert len(server.requests) == n
    assert main(["run", "flow.yaml", "--replay", "rec.json", "--json", "--stream",
                 "--no-checkpoint"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["state"]["b"].startswith("streamed words about shorten:")


def test_changed_prompt_fails_strict_replay_with_a_diff(server: Any, tmp_path: Path,
                                                       capsys: Any) -> None:
    (tmp_path / "flow.yaml").write_text(FLOW)
    assert main(["run", "flow.yaml", "--record", "rec.json", "--no-checkpoint"]) == 0
    capsys.readouterr()
    (tmp_path / "flow.yaml").write_text(FLOW.replace("write about", "write a poem about"))
    assert main(["replay", "rec.json", "flow.yaml"]) == 1
    err = capsys.readouterr().err
    assert "one" in err and "write a poem about" in err
    assert main(["replay", "rec.json", "flow.yaml", "--replay-mode", "lenient"]) == 1


def test_a_secret_reaches_no_artefact(server: Any, tmp_path: Path, capsys: Any) -> None:
    secret = "tok-SuperSecret-4242"
    (tmp_path / "flow.yaml").write_text(FLOW.replace(
        "write about {state.topic}", "write about {state.topic} with {state.api_token}"))
    code = main(["run", "flow.yaml", "--record", "rec.json", "--json", "--run-id", "s1",
                 "--state", f"api_token={secret}"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert secret in json.dumps(server.requests[0].json)  # the model did get it
    artefacts = {"stdout": out.out, "stderr": out.err,
                 "recording": (tmp_path / "rec.json").read_text()}
    for path in (tmp_path / ".agentloom").iterdir():
        artefacts[path.name] = path.read_bytes().decode("utf-8", "replace")
    for name, text in artefacts.items():
        assert secret not in text, name
        assert "sk-test-key-123456789" not in text, name
    assert json.loads(out.out)["state"]["api_token"] == "[REDACTED]"


def test_corrupt_or_missing_recording_is_one_clear_error(server: Any, tmp_path: Path,
                                                         capsys: Any) -> None:
    (tmp_path / "flow.yaml").write_text(FLOW)
    (tmp_path / "cut.json").write_text('{"format": "agentloom-recording", "version": 1, "ex')
    assert main(["replay", "cut.json", "flow.yaml"]) == 1
    err = capsys.readouterr().err
    assert "cut.json: not valid JSON, the file may be corrupt or truncated" in err
    assert main(["replay", "missing.json", "flow.yaml"]) == 2
    assert "recording not found: missing.json" in capsys.readouterr().err
    os.mkfifo(tmp_path / "pipe.json")  # no writer: reading it would block for ever
    assert main(["run", "flow.yaml", "--replay", "pipe.json"]) == 2
    assert "pipe.json is not a regular file; give a recording" in capsys.readouterr().err
    assert main(["run", "flow.yaml", "--record", "r.json", "--replay", "cut.json"]) == 2
    # 100 KB of `[`: the check for the public AgentLoom's mock files read it with
    # json.loads and ended in a RecursionError traceback.
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    assert main(["replay", "deep.json", "flow.yaml"]) == 1
    assert "deep.json: not valid JSON, the file may be corrupt or truncated (JSON nested " \
        "too deeply to parse" in capsys.readouterr().err
    assert len(server.requests) == 0


def test_a_replay_needs_no_api_key(server: Any, tmp_path: Path, capsys: Any,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "flow.yaml").write_text(FLOW.replace("provider: openai", "provider: anthropic")
                                        .replace("gpt-4o-mini", "claude-haiku-4-5"))
    from agentloom.testing.fake_anthropic import FakeAnthropicServer

    with FakeAnthropicServer(responder=lambda body: FakeReply(text="recorded")) as claude:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key-123456789")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", claude.base_url)
        assert main(["run", "flow.yaml", "--record", "rec.json", "--no-checkpoint"]) == 0
    capsys.readouterr()
    # On a machine without the key (CI, say), the replay still picks the same provider.
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    monkeypatch.delenv("OPENAI_API_KEY")
    code = main(["replay", "rec.json", "flow.yaml", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0, data["error"]
    assert data["state"]["b"] == "recorded"
    assert data["steps"]["one"]["provider"] == "anthropic"
