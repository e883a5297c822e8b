"""`runs show` prints the run page's facts; the gate's notify event links the page;
`agentloom ui` refuses bad arguments in one line."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from agentloom.cli import main
from agentloom.store import Checkpoint, MemoryStore, PauseInfo, SqliteStore
from agentloom.testing.scripted import ScriptedModel
from agentloom.workflow import RunStatus, arun_workflow, load_workflow_text
from agentloom.workflow.durable.run import DurableRun
from tests.webhook_receiver import webhook_receiver
from tests.workflow.wf_helpers import Factory


def _fill(path: Path) -> None:
    async def fill() -> None:
        async with SqliteStore(path) as store:
            await store.create_run("r1", "flow", "h", {})
            raw = {"type": "llm_call", "status": "success", "attempts": 3,
                   "model": "m-1", "provider": "openai", "finish_reason": "stop",
                   "started_at": 5.0, "duration_seconds": 1.25,
                   "usage": {"input_tokens": 10, "output_tokens": 5}}
            await store.save_checkpoint("r1", Checkpoint(
                state={"x": "\x1b[31mred\x1b[0m"}, status="paused",
                step_results={"a": {**raw, "id": "a"},
                              "b": {**raw, "id": "b", "attempts": 1, "started_at": 5.5,
                                    "error": "boom", "error_type": "ProviderError"}},
                paused=PauseInfo(step_id="gate", waiting_for="answer", prompt="which?",
                                 data={"kind": "choose_one", "choices": ["x", "y"]})))
            await store.record_model_exchange("r1", "a", 1, "sha256:1", {"text": "hi"})
    asyncio.run(fill())


def test_runs_show_prints_what_the_run_page_shows(tmp_path: Path, capsys: Any) -> None:
    db = tmp_path / "runs.db"
    _fill(db)
    assert main(["runs", "show", "r1", "--store", str(db)]) == 0
    out = capsys.readouterr().out
    assert "run r1  paused  workflow flow" in out and "tokens 30" in out
    assert "waiting for answer at gate: which?" in out and "choices: x, y" in out
    a = next(line for line in out.splitlines() if line.startswith("a "))
    assert a.split()[:6] == ["a", "success", "3", "m-1", "openai", "15"]
    b = next(line for line in out.splitlines() if line.startswith("b "))
    assert b.split()[-2] == "1", "b overlaps a in time: a lane of its own"
    assert "error: ProviderError: boom" in out and "1 model exchange(s)" in out
    assert "\x1b" not in out, "stored text can't drive the terminal"
    assert main(["runs", "show", "r1", "--json", "--store", str(db)]) == 0
    detail = json.loads(capsys.readouterr().out)
    assert detail["paused"]["choices"] == ["x", "y"] and len(detail["steps"]) == 2


def test_runs_show_needs_a_known_run(tmp_path: Path, capsys: Any) -> None:
    db = tmp_path / "runs.db"
    _fill(db)
    assert main(["runs", "show", "ghost", "--store", str(db)]) == 1
    assert "no run 'ghost' in the store" in capsys.readouterr().err
    # With --json, stdout still holds JSON a script can read.
    assert main(["runs", "show", "ghost", "--json", "--store", str(db)]) == 1
    out = capsys.readouterr()
    assert json.loads(out.out)["status"] == "error" and "no run 'ghost'" in out.err
    assert main(["runs", "show", "ghost", "--json", "--store",
                 str(tmp_path / "none.db")]) == 1
    assert "there is no run store at" in json.loads(capsys.readouterr().out)["error"]
    assert main(["runs", "show", "--store", str(db)]) == 2
    assert "takes one RUN_ID" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "message"), [
    (["ui", "--port", "70000"], "--port 70000: expected 0 to 65535"),
    (["ui", "--token", "short"], "--token: use at least 16 characters"),
])
def test_ui_usage_errors_are_one_line(argv: list[str], message: str, capsys: Any) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


GATE = """\
name: notify
config: {sandbox: {allow_internal_webhook_targets: true}}
steps:
  - {id: draft, type: llm_call, prompt: "draft", output: draft}
  - id: approve
    type: approval_gate
    depends_on: [draft]
    notify: {url: "URL"}
"""


async def test_the_notify_event_links_the_runs_page() -> None:
    async with webhook_receiver() as receiver:
        wf = load_workflow_text(GATE.replace("URL", receiver.url))
        for run_id, meta in (("run/1", {"ui_url": "http://ui.example:8765/"}), ("r2", {})):
            durable = DurableRun(store=MemoryStore(), run_id=run_id, workflow_hash="h",
                                 meta=meta)
            result = await arun_workflow(wf, clients=Factory(ScriptedModel(["d"])),
                                         durable=durable)
            assert result.status is RunStatus.PAUSED
        seen = receiver.bodies()
        assert seen[0]["url"] == "http://ui.example:8765/runs/run%2F1"
        assert "url" not in seen[1]
