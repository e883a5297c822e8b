"""`agentloom resume` continues a paused run from a store written before checkpoint
deltas (tests/store/legacy.py), and `agentloom runs` lists that store's runs."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from legacy import load_legacy_sqlite
from openai_thread import cli_serving

from agentloom.cli import main
from agentloom.store import SqliteStore
from agentloom.testing._server import FakeReply
from agentloom.testing.fake_openai import FakeOpenAIServer


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeOpenAIServer]:
    with cli_serving(monkeypatch, tmp_path, lambda body: FakeReply(text="sent")) as srv:
        yield srv


def test_resume_a_paused_run_from_a_store_made_before_deltas(
        server: Any, tmp_path: Path, capsys: Any) -> None:
    db = tmp_path / ".agentloom" / "runs.db"
    load_legacy_sqlite(db, workflow_dir=tmp_path)
    assert main(["runs", "--json"]) == 0
    listed = {r["run_id"]: r["status"] for r in json.loads(capsys.readouterr().out)}
    assert listed == {"legacy-done": "succeeded", "legacy-gate": "paused"}
    code = main(["resume", "legacy-gate", "--approve"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert len(server.requests) == 1, "only the step after the gate asks the model"

    async def stored() -> tuple[Any, Any]:
        async with SqliteStore(db) as store:
            return await store.get_run("legacy-gate"), await store.load_latest("legacy-gate")

    run, cp = asyncio.run(stored())
    assert run is not None and run.status == "succeeded"
    assert cp is not None and cp.state["draft"] == "re draft about tea"
    assert cp.state["result"] == "sent"
