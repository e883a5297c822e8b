"""Hostile decisions, over real HTTP to the app on 127.0.0.1: two decisions for one run
at once, a run whose id looks like a flag of `agentloom resume`, run ids whose resume
logs would share a name, logs that pile up, and a refused resume's long log."""

from __future__ import annotations

import asyncio
import os
import re
import tempfile
import time
import tracemalloc
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from agentloom.store import Checkpoint, SqliteStore
from agentloom.ui._decide import _failure, _tail, log_name
from tests.ui.test_api import WRITE, client_for, paused_run


class GatedStore(SqliteStore):
    """A store whose next `load_latest`, once `arm`ed, waits for `release`: it holds a
    decision at the point after the UI checked whether the run is being resumed already
    and before it started the resume."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.armed = False
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def load_latest(self, run_id: str) -> Checkpoint | None:
        if self.armed:
            self.armed = False
            self.entered.set()
            await self.release.wait()
        return await super().load_latest(run_id)


@pytest.fixture
async def gated(tmp_path: Path) -> AsyncIterator[GatedStore]:
    s = GatedStore(tmp_path / "runs.db")
    async with s:
        yield s


async def test_a_second_decision_while_the_first_is_starting_is_refused(
        gated: GatedStore) -> None:
    """Approve and Reject clicked at once (two tabs, two people): the first one holds the
    run from the moment it is taken; the second is refused by this UI at once, and starts
    no second `agentloom resume` (writing over the first one's log)."""
    await paused_run(gated)
    client = await client_for(gated)
    try:
        async def post(action: str) -> tuple[int, str]:
            r = await client.post("/api/runs/p1/decision", json={"action": action},
                                  headers=WRITE)
            return r.status, (await r.json()).get("error", "")

        gated.armed = True
        first = asyncio.ensure_future(post("approve"))
        try:
            await gated.entered.wait()  # the approval is on its way to starting the resume
            second = await post("reject")
        finally:
            gated.release.set()
            status, error = await first
        assert second == (409, "run p1 is being resumed from this UI already")
        # The first went on to its resume, which refuses: this run has no workflow file.
        assert status == 409 and "the workflow file of run p1 is gone" in error, error
    finally:
        await client.close()


async def test_a_decision_for_a_run_whose_id_looks_like_a_flag_reaches_that_run(
        tmp_path: Path) -> None:
    """A run id is data: `-h` (or `--force`) must reach `agentloom resume` as the run's id,
    not as a flag (`-h` printed the help, exited 0, and the UI said the decision was
    accepted while the run still waited)."""
    async with SqliteStore(tmp_path / "runs.db") as store:
        await paused_run(store, "-h")
        client = await client_for(store)
        try:
            r = await client.post("/api/runs/-h/decision", json={"action": "approve"},
                                  headers=WRITE)
            body: Any = await r.json()
            assert r.status == 409, body
            assert "the workflow file of run -h is gone" in body["error"], body
            record = await store.get_run("-h")
            assert record is not None and record.status == "paused"
        finally:
            await client.close()


async def test_a_decision_body_over_the_bound_is_refused_in_json(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "runs.db") as store:
        await paused_run(store)
        client = await client_for(store)
        try:
            r = await client.post("/api/runs/p1/decision",
                                  data='{"action": "approve", "pad": "' + "x" * 70_000 + '"}',
                                  headers={**WRITE, "Content-Type": "application/json"})
            assert (r.status, await r.json()) == (413, {"error": "the body is over 65536 bytes"})
            record = await store.get_run("p1")
            assert record is not None and record.status == "paused"
        finally:
            await client.close()


async def test_runs_whose_ids_clean_up_alike_get_logs_of_their_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A resume's log was `<id cleaned up, cut to 100>.log`: `a/b` and `a_b`, or two ids
    alike in their first 100 characters, shared one (the second resume wrote over the
    first's log, and a refusal could be read from the other run's), and an id of 100
    four-byte letters made a name over 255 bytes (a 500). Now each run has its own log:
    the id made readable, then a hash of all of it."""
    logs = tmp_path / "tmp"
    logs.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(logs))  # the Resumer's $TMPDIR
    ids = ["a/b", "a_b", "x" * 100 + "1", "x" * 100 + "2", "\U0001d400" * 100]
    async with SqliteStore(tmp_path / "runs.db") as store:
        for run_id in ids:
            await paused_run(store, run_id)
        client = await client_for(store)
        try:
            for run_id in ids:
                r = await client.post(f"/api/runs/{quote(run_id, safe='')}/decision",
                                      json={"action": "approve"}, headers=WRITE)
                body: Any = await r.json()
                assert r.status == 409, (run_id, r.status, body)
                assert f"the workflow file of run {run_id} is gone" in body["error"], body
        finally:
            await client.close()
    [folder] = logs.iterdir()
    files = sorted(folder.iterdir())
    assert len(files) == len(ids), [f.name for f in files]
    for f in files:
        assert re.fullmatch(r"[A-Za-z0-9._-]{1,64}-[0-9a-f]{16}\.log", f.name), f.name
    texts = [f.read_text() for f in files]
    for run_id in ids:  # each log is its own run's, whole
        [text] = [t for t in texts if f"the workflow file of run {run_id} is gone" in t]
        assert text.count("the workflow file of run") == 1, text
    assert {f.name.rsplit("-", 1)[0] for f in files} == {
        "a_b", "x" * 64, "_" * 64}  # readable: the id, as far as a name can show it


async def test_logs_a_week_old_are_removed_at_the_next_decision(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One log per run decided piled up in $TMPDIR for ever; a week after its last write,
    the next decision this UI takes removes it (and nothing that is not a log of ours)."""
    logs = tmp_path / "tmp"
    logs.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(logs))
    folder = logs / f"agentloom-ui-{os.getuid()}"
    folder.mkdir(mode=0o700)
    old, fresh, other = folder / "old-0.log", folder / "fresh-0.log", folder / "notes.txt"
    for path in (old, fresh, other):
        path.write_text("x")
    week_and_a_day = time.time() - 8 * 24 * 3600
    for path in (old, other):
        os.utime(path, (week_and_a_day, week_and_a_day))
    async with SqliteStore(tmp_path / "runs.db") as store:
        await paused_run(store)
        client = await client_for(store)
        try:
            r = await client.post("/api/runs/p1/decision", json={"action": "approve"},
                                  headers=WRITE)
            assert r.status == 409  # this run has no workflow file: refused, logged
        finally:
            await client.close()
    names = {p.name for p in folder.iterdir()}
    assert "old-0.log" not in names
    assert {"fresh-0.log", "notes.txt", log_name("p1")} <= names


def test_a_refused_resumes_reason_is_read_from_its_logs_end(tmp_path: Path) -> None:
    log = tmp_path / "big.log"
    log.write_bytes(b"chatter\n" * 2_000_000 + b"agentloom resume: the run is held\n")
    tracemalloc.start()
    try:
        text = _tail(log)
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert _failure(text, 1) == "the run is held"
    assert peak < 1_000_000, peak  # the whole log was 16 MB
