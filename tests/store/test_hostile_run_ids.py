"""A run id or workflow name somebody else stored is printed by `agentloom runs` and
`agentloom history` as text: on a terminal, the colours and cursor moves the terminal
guard lets through for progress displays (`ESC[1A`, `ESC[2K`, `ESC[31m`) and a carriage
return are shown escaped too, so one run's row can't erase another's (a run waiting for
approval hidden from the list) or recolour the rest of the output."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from agentloom.store import SqliteStore
from tests.pty_run import run_on_a_pty

ROOT = Path(__file__).resolve().parents[2]
ERASER = "z\r\x1b[1A\x1b[2Kok-run"
"""Back to the line's start, up one line, erase it: the row printed before it is gone."""


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    async def fill() -> None:
        async with SqliteStore(tmp_path / ".agentloom" / "runs.db") as store:
            await store.create_run("awaiting-approval", "payments", "h", {})
            await store.create_run(ERASER, "flow\x1b[31m", "h", {})

    (tmp_path / ".agentloom").mkdir()
    asyncio.run(fill())
    return tmp_path


@pytest.mark.parametrize("command", ["runs", "history"])
def test_a_stored_run_id_cannot_move_the_cursor_or_recolour(store_dir: Path,
                                                            command: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOM_", "NO_COLOR"))}
    env.update(PYTHONPATH=str(ROOT), TERM="xterm")
    code, shown = run_on_a_pty([sys.executable, "-m", "agentloom.cli", command],
                               cwd=store_dir, env=env)
    assert code == 0, shown
    text = shown.decode().replace("\r\n", "\n")  # the pty's own line ends
    assert "\x1b" not in text and "\r" not in text, repr(text)
    assert "awaiting-approval" in text
    assert "z\\r\\x1b[1A\\x1b[2Kok-run"[:19] in text  # the id, shown as it is stored
