"""What a run writes holds its prompts, replies and state: on a machine several people
share, nobody else may read it. The store (with SQLite's WAL and shared-memory files), a
trace, a recording and a batch's results are created owner-only under a umask that would
leave them world-readable; a folder made for them is the owner's too; a file that exists
keeps the mode its owner gave it."""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from bounds_helpers import run_cli

from agentloom._files import create_private, make_private_dir, open_private
from agentloom.testing.fake_openai import FakeOpenAIServer

FLOW = """\
name: private
steps:
  - id: ask
    type: llm_call
    model: gpt-4o-mini
    prompt: "What is the plan for {state.topic}?"
    output: reply
"""


@pytest.fixture
def open_umask() -> Iterator[None]:
    """The common 022: without care, every file would be readable by all."""
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _env(server: FakeOpenAIServer) -> dict[str, str]:
    return {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": server.openai_base_url}


def _all_private(folder: Path) -> None:
    assert _mode(folder) == 0o700
    made = sorted(p.name for p in folder.iterdir())
    assert "runs.db" in made
    for name in made:  # runs.db and whatever journal files SQLite left beside it
        assert _mode(folder / name) == 0o600, name


def test_run_store_trace_and_recording_are_the_owners(
        open_umask: None, tmp_path: Path, openai_server: FakeOpenAIServer) -> None:
    (tmp_path / "flow.yaml").write_text(FLOW)
    child = run_cli(["run", "flow.yaml", "-s", "topic=launch", "--trace", "trace.jsonl",
                     "--record", "recs/rec.json"], tmp_path, env=_env(openai_server))
    assert child.returncode == 0, child.stderr
    _all_private(tmp_path / ".agentloom")
    assert _mode(tmp_path / "trace.jsonl") == 0o600
    assert _mode(tmp_path / "recs") == 0o700
    assert _mode(tmp_path / "recs" / "rec.json") == 0o600
    assert "launch" in (tmp_path / "recs" / "rec.json").read_text()


def test_wal_files_follow_the_database(open_umask: None, tmp_path: Path) -> None:
    """SQLite creates its WAL and shared-memory files with the database file's mode;
    checked while a connection holds them, before a clean close removes them."""
    path = tmp_path / "db" / "runs.db"
    create_private(path)
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE t (x)")
        conn.execute("INSERT INTO t VALUES (1)")
        conn.commit()
        sides = [path.with_name("runs.db-wal"), path.with_name("runs.db-shm")]
        assert [_mode(side) for side in sides] == [0o600, 0o600]
        assert _mode(path.parent) == 0o700
    finally:
        conn.close()


def test_batch_results_and_store_are_the_owners(open_umask: None, tmp_path: Path,
                                                openai_server: FakeOpenAIServer) -> None:
    (tmp_path / "flow.yaml").write_text(FLOW)
    (tmp_path / "inputs.jsonl").write_text('{"topic": "a"}\n{"topic": "b"}\n')
    child = run_cli(["batch", "flow.yaml", "inputs.jsonl", "-o", "out/results.jsonl",
                     "--store", "runs/runs.db"],
                    tmp_path, env=_env(openai_server))
    assert child.returncode == 0, child.stderr
    assert _mode(tmp_path / "out") == 0o700
    assert _mode(tmp_path / "out" / "results.jsonl") == 0o600
    assert len((tmp_path / "out" / "results.jsonl").read_text().splitlines()) == 2
    _all_private(tmp_path / "runs")


def test_an_existing_file_or_folder_keeps_its_mode(open_umask: None, tmp_path: Path) -> None:
    shared = tmp_path / "shared.jsonl"
    shared.write_text("old\n")
    shared.chmod(0o644)  # the owner chose to share it
    with open_private(shared) as out:
        out.write("new\n")
    assert _mode(shared) == 0o644 and shared.read_text() == "new\n"
    with open_private(shared, append=True) as out:
        out.write("more\n")
    assert shared.read_text() == "new\nmore\n"
    team = tmp_path / "team"
    team.mkdir(mode=0o755)
    make_private_dir(team)
    assert _mode(team) == 0o755
    create_private(team / "runs.db")
    assert _mode(team / "runs.db") == 0o600


@pytest.mark.parametrize("planted", [".agentloom", ".agentloom/runs.db",
                                     ".agentloom/runs.db-wal"])
def test_the_default_store_doesnt_write_through_a_planted_link(
        tmp_path: Path, openai_server: FakeOpenAIServer, planted: str) -> None:
    # A checkout somebody else wrote, with a link where the default store goes.
    checkout, theirs = tmp_path / "checkout", tmp_path / "theirs"
    checkout.mkdir()
    theirs.mkdir()
    (checkout / "flow.yaml").write_text(FLOW)
    link = checkout / planted
    link.parent.mkdir(exist_ok=True)
    link.symlink_to(theirs if planted == ".agentloom" else theirs / link.name)
    child = run_cli(["run", "flow.yaml", "-s", "topic=launch"], checkout,
                    env=_env(openai_server))
    # As with any default store that can't be opened, the run goes on unsaved.
    assert child.returncode == 0, child.stderr
    target = theirs if planted == ".agentloom" else theirs / link.name
    assert child.stderr.splitlines()[0] == (
        f"agentloom: checkpoints off, the run store can't be opened: the run store's "
        f"{planted} is a symbolic link (to {target}); a run won't write through it: "
        "remove it, or name the store with --store")
    assert list(theirs.iterdir()) == []  # nothing of the run reached their folder
    if planted == ".agentloom":  # a store the user names is theirs to place: followed
        child = run_cli(["run", "flow.yaml", "-s", "topic=launch", "--store",
                         ".agentloom/runs.db"], checkout, env=_env(openai_server))
        assert child.returncode == 0, child.stderr
        assert "runs.db" in {p.name for p in theirs.iterdir()}
