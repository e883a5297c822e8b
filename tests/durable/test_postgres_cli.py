"""The same pause and resume through the CLI with `--store postgresql://...`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentloom.cli import main
from agentloom.testing._server import FakeReply
from agentloom.testing.fake_openai import FakeOpenAIServer

GATE = """\
name: gate
config: {model: gpt-4o-mini, provider: openai}
steps:
  - {id: draft, type: llm_call, prompt: "draft", output: draft}
  - {id: approve, type: approval_gate, depends_on: [draft], output: decision}
  - {id: send, type: llm_call, depends_on: [approve], prompt: "{state.decision}", output: r}
"""


def test_pause_and_resume_on_postgresql(pg_server: Any, tmp_path: Path, capsys: Any,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    server = FakeOpenAIServer(responder=lambda body: FakeReply(text="ok"))
    server.start_in_thread()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
    try:
        (tmp_path / "gate.yaml").write_text(GATE)
        dsn = pg_server.dsn
        assert main(["run", "gate.yaml", "--store", dsn, "--run-id", "pg1"]) == 3
        err = capsys.readouterr().err
        assert f"agentloom resume pg1 --store {dsn} --approve" in err
        assert main(["runs", "--store", dsn, "--json", "--status", "paused"]) == 0
        assert "pg1" in [r["run_id"] for r in json.loads(capsys.readouterr().out)]
        assert main(["resume", "pg1", "--store", dsn, "--approve", "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert data["state"]["decision"] == "approved"
        assert len(server.requests) == 2
        assert not (tmp_path / ".agentloom").exists()
    finally:
        server.stop_thread()
