"""`agentloom run --stream` shows every step's text as it arrives, a subworkflow file's
steps included (a file's `config.stream` is one of its defaults, so `--stream` used to
reach the top-level file's steps only, and a streamed run printed nothing of a
subworkflow). The subworkflow keeps its other defaults, its model among them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from openai_thread import cli_serving

from agentloom.cli import main
from agentloom.testing._server import FakeReply

PARENT = """\
name: parent
config: {model: gpt-4.1-nano}
steps:
  - {id: top, type: llm_call, prompt: "top prompt"}
  - {id: sub, type: subworkflow, workflow_path: child.yaml, depends_on: [top]}
  - id: inline
    type: subworkflow
    depends_on: [sub]
    workflow_inline:
      name: inline
      steps:
        - {id: deep, type: llm_call, model: gpt-4o-mini, prompt: "inline prompt"}
"""

CHILD = """\
name: child
config: {model: gpt-4.1-mini}
steps:
  - {id: inner, type: llm_call, prompt: "inner prompt"}
"""


def _reply(body: dict[str, Any]) -> FakeReply:
    return FakeReply(text=f"reply to {body['messages'][-1]['content']}")


@pytest.mark.parametrize("stream", [True, False])
def test_a_streamed_run_streams_its_subworkflows_steps(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: Any, stream: bool) -> None:
    (tmp_path / "parent.yaml").write_text(PARENT)
    (tmp_path / "child.yaml").write_text(CHILD)
    with cli_serving(monkeypatch, tmp_path, _reply) as server:
        argv = ["run", "parent.yaml", "--no-checkpoint"] + (["--stream"] if stream else [])
        assert main(argv) == 0
        asked = {r.json["messages"][-1]["content"]: (r.json["model"], bool(r.json.get("stream")))
                 for r in server.requests}
    out = capsys.readouterr().out
    assert asked == {"top prompt": ("gpt-4.1-nano", stream),
                     "inner prompt": ("gpt-4.1-mini", stream),
                     "inline prompt": ("gpt-4o-mini", stream)}
    if stream:
        assert out.splitlines()[:3] == [
            "reply to top prompt", "reply to inner prompt", "reply to inline prompt"]
