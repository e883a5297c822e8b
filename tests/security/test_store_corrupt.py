"""A truncated or garbled run store: `run`, `resume` and `runs` each say so in one line
naming the file and what to do, exit 1, and leave the file byte for byte as it was."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from bounds_helpers import one_line, run_cli

from agentloom.store import SqliteStore, StoreCorrupt

FLOW = """\
name: s
steps:
  - id: pick
    type: router
    conditions: []
    default: end
  - id: end
    type: tool
    depends_on: [pick]
    tool_name: file_read
    tool_args: {path: "nowhere"}
"""


async def _good_store(path: Path) -> None:
    async with SqliteStore(path) as store:
        for i in range(40):  # enough rows for the file to span several pages
            await store.create_run(f"run-{i}", "flow", "h", {"pad": "x" * 2000})


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])


def _garble_schema(path: Path) -> None:
    with path.open("r+b") as f:  # page 1 keeps its header; the schema it points to dies
        f.seek(100)
        f.write(os.urandom(3900))


def _not_a_database(path: Path) -> None:
    path.write_bytes(os.urandom(4096))


DAMAGES = {"truncated": _truncate, "garbled": _garble_schema, "random": _not_a_database}


@pytest.fixture(params=sorted(DAMAGES))
async def damaged(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    store = tmp_path / ".agentloom" / "runs.db"
    store.parent.mkdir()
    await _good_store(store)
    for side in (store.with_name("runs.db-wal"), store.with_name("runs.db-shm")):
        side.unlink(missing_ok=True)
    DAMAGES[request.param](store)
    (tmp_path / "flow.yaml").write_text(FLOW)
    return store


async def test_opening_a_damaged_store_raises_store_corrupt(damaged: Path) -> None:
    before = damaged.read_bytes()
    with pytest.raises(StoreCorrupt, match=r"runs.db is damaged.*\(mv .*runs.db.broken\)"):
        async with SqliteStore(damaged) as store:
            await store.list_runs()
    assert damaged.read_bytes() == before


@pytest.mark.parametrize("command", [["run", "flow.yaml"], ["resume", "run-1"], ["runs"]],
                         ids=["run", "resume", "runs"])
async def test_cli_commands_refuse_a_truncated_store_in_one_line(
        tmp_path: Path, command: list[str]) -> None:
    store = tmp_path / ".agentloom" / "runs.db"
    store.parent.mkdir()
    await _good_store(store)
    _truncate(store)
    (tmp_path / "flow.yaml").write_text(FLOW)
    before = store.read_bytes()
    child = run_cli(command, tmp_path)
    assert child.returncode == 1, child.stderr
    line = one_line(child.stderr)
    assert "run store at .agentloom/runs.db is damaged" in line
    assert "mv .agentloom/runs.db .agentloom/runs.db.broken" in line
    assert store.read_bytes() == before
