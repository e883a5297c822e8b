"""Durable batches on SQLite: a batch cancelled (or killed) mid-way, then `--resume`, goes
on from each interrupted run's last checkpoint; no model call whose reply the store kept
is made again, and every input ends with exactly one line."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from store_helpers import HoldingServer, lines_of, write_docs

from agentloom.scale import batch
from tests.webhook_receiver import webhook_receiver

CLI = str(Path(__file__).parent / "cli_main.py")
N = 10
HELD = range(5, N)
"""Inputs whose second model call hangs until the batch is stopped."""


def _title(i: int) -> str:
    return f"Title for: echo:Summarize: doc{i:02d}|"


@pytest.fixture
def server() -> Iterator[HoldingServer]:
    s = HoldingServer()
    s.start_in_thread()
    yield s
    s.release()
    s.stop_thread()


def _env(server: HoldingServer) -> dict[str, str]:
    return {"OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": server.openai_base_url}


async def _until(cond: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 20
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.01)


async def _runs(db: Path) -> dict[str, Any]:
    from agentloom.store import open_store

    async with open_store(db) as store:  # type: ignore[attr-defined]
        return {r.meta["input_id"]: r for r in await store.list_runs(limit=None)}


async def _runs_list(db: Path) -> list[Any]:
    from agentloom.store import open_store

    async with open_store(db) as store:  # type: ignore[attr-defined]
        return list(await store.list_runs(limit=None))


async def test_cancelled_batch_resumes_interrupted_runs_without_repeating_calls(
        tmp_path: Path, flow: Path, server: HoldingServer) -> None:
    inputs, out, db = write_docs(tmp_path / "in.jsonl", N), tmp_path / "out.jsonl", \
        tmp_path / "runs.db"
    server.hold = tuple(_title(i) for i in HELD)
    b = batch(flow, inputs, output=out, store=db, env=_env(server), concurrency=N)

    async def drain() -> None:
        async for _ in b:
            pass

    task = asyncio.create_task(drain())
    await _until(lambda: len(server.requests) == 2 * N and len(lines_of(out)) == 5,
                 "the free runs to finish and the held ones to hang")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert b.stats.interrupted
    runs = await _runs(db)
    assert len(runs) == N
    interrupted = {i for i, r in runs.items() if r.status == "running"}
    assert interrupted == {f"d{i:02d}" for i in HELD}
    assert all(runs[i].claimed_by is None for i in interrupted), "claims were released"
    assert all(r.status == "succeeded" for i, r in runs.items() if i not in interrupted)

    server.release()
    before = len(server.requests)
    again = batch(flow, inputs, output=out, store=db, env=_env(server), concurrency=N,
                  resume=True)
    results = await again.results()
    # Only the held calls are made again: each interrupted run's first step was stored.
    assert sorted(server.prompts(before)) == sorted(_title(i) for i in HELD)
    assert {r.id for r in results} == interrupted
    assert all(r.resumed and r.ok for r in results)
    assert again.stats.resumed == len(HELD) and again.stats.skipped == 5
    lines = lines_of(out)
    assert sorted(line["id"] for line in lines) == [f"d{i:02d}" for i in range(N)]
    assert all(line["status"] == "success" for line in lines)
    assert all(line["run_id"].endswith(f".{line['id']}") for line in lines)
    assert {r.status for r in (await _runs(db)).values()} == {"succeeded"}


async def test_lost_output_lines_come_back_from_the_store(
        tmp_path: Path, flow: Path, server: HoldingServer) -> None:
    inputs, out, db = write_docs(tmp_path / "in.jsonl", 4), tmp_path / "out.jsonl", \
        tmp_path / "runs.db"
    first = await batch(flow, inputs, output=out, store=db, env=_env(server)).results()
    assert all(r.ok for r in first)
    out.write_text("", encoding="utf-8")  # the lines were lost; the store kept the runs
    before = len(server.requests)
    again = batch(flow, inputs, output=out, store=db, env=_env(server), resume=True)
    results = await again.results()
    assert len(server.requests) == before, "finished runs are not run again"
    assert all(r.reused and r.ok for r in results) and again.stats.reused == 4
    by_id = {line["id"]: line for line in lines_of(out)}
    assert {k: v["outputs"] for k, v in by_id.items()} == {r.id: r.outputs for r in first}

    # Killed between the run's end and keeping its line: the outputs are rebuilt from
    # the run's last checkpoint.
    from agentloom.scale._durable import RESULT_KEY
    from agentloom.store import open_store

    async with open_store(db) as store:  # type: ignore[attr-defined]
        for r in first:
            cp = await store.load_latest(r.run_id)
            del cp.extra[RESULT_KEY]
            await store.save_checkpoint(r.run_id, cp)
    out.write_text("", encoding="utf-8")
    rebuilt = await batch(flow, inputs, output=out, store=db, env=_env(server),
                          resume=True).results()
    assert len(server.requests) == before
    assert {r.id: r.outputs for r in rebuilt} == {r.id: r.outputs for r in first}
    assert all(r.ok and r.reused for r in rebuilt)


def test_killed_batch_process_resumes_with_the_cli(
        tmp_path: Path, flow: Path, server: HoldingServer) -> None:
    """SIGKILL leaves the runs claimed by a process that is gone: a resume on the same
    host takes them at once, without waiting for the lease."""
    inputs, out, db = write_docs(tmp_path / "in.jsonl", N), tmp_path / "out.jsonl", \
        tmp_path / "runs.db"
    server.hold = tuple(_title(i) for i in HELD)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENTLOOM_"))}
    env.update(_env(server))
    argv = [sys.executable, CLI, "batch", str(flow), str(inputs), "-o", str(out), "--store",
            str(db), "--batch-id", "nightly", "-c", str(N)]
    proc = subprocess.Popen(argv, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not (len(server.requests) == 2 * N and len(lines_of(out)) == 5):
            assert proc.poll() is None, proc.stderr.read()  # type: ignore[union-attr]
            assert time.monotonic() < deadline, "timed out"
            time.sleep(0.01)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
    runs = asyncio.run(_runs(db))
    held = {f"d{i:02d}" for i in HELD}
    assert {i for i, r in runs.items() if r.status == "running"} == held
    assert all(runs[i].claimed_by and runs[i].run_id == f"nightly.{i}" for i in held)

    server.release()
    before = len(server.requests)
    done = subprocess.run([*argv, "--resume", "--json"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert sorted(server.prompts(before)) == sorted(_title(i) for i in HELD)
    events = [json.loads(line) for line in done.stdout.splitlines()]
    ran = [e for e in events if e["event"] == "result"]
    assert sorted(e["id"] for e in ran) == sorted(held)
    assert sorted(line["id"] for line in lines_of(out)) == [f"d{i:02d}" for i in range(N)]


async def test_paused_runs_are_left_as_they_are_and_reported(
        tmp_path: Path, server: HoldingServer) -> None:
    flow = tmp_path / "gate.yaml"
    flow.write_text("name: gate\nconfig: {model: gpt-4o-mini, provider: openai}\nsteps:\n"
                    "  - {id: draft, type: llm_call, prompt: 'draft {state.text}', "
                    "output: d}\n"
                    "  - {id: ok, type: approval_gate, depends_on: [draft], output: v}\n",
                    encoding="utf-8")
    inputs, out, db = write_docs(tmp_path / "in.jsonl", 2), tmp_path / "out.jsonl", \
        tmp_path / "runs.db"
    first = await batch(flow, inputs, output=out, store=db, env=_env(server)).results()
    assert {r.status for r in first} == {"paused"}
    assert all(f"agentloom resume {r.run_id} --store {db} --approve" in (r.error or "")
               for r in first)
    before = len(server.requests)
    again = batch(flow, inputs, output=out, store=db, env=_env(server), resume=True)
    results = await again.results()
    assert len(server.requests) == before
    assert {r.status for r in results} == {"paused"} and len(results) == 2
    assert {r.status for r in (await _runs(db)).values()} == {"paused"}


async def test_a_batch_runs_gate_notify_links_the_runs_page(
        tmp_path: Path, server: HoldingServer) -> None:
    # AGENTLOOM_UI_URL in the batch's environment reaches each run's gate notification,
    # as it does for `agentloom run`: the person notified can open the run in the UI.
    inputs, out, db = write_docs(tmp_path / "in.jsonl", 2), tmp_path / "out.jsonl", \
        tmp_path / "runs.db"
    env = {**_env(server), "AGENTLOOM_UI_URL": "http://ui.example:8765/"}
    flow = tmp_path / "gate.yaml"
    async with webhook_receiver() as receiver:
        flow.write_text("name: gate\nconfig: {model: gpt-4o-mini, provider: openai, "
                        "sandbox: {allow_internal_webhook_targets: true}}\nsteps:\n"
                        "  - {id: draft, type: llm_call, prompt: 'draft {state.text}', "
                        "output: d}\n"
                        "  - {id: ok, type: approval_gate, depends_on: [draft], output: v, "
                        f"notify: {{url: '{receiver.url}'}}}}\n", encoding="utf-8")
        results = await batch(flow, inputs, output=out, store=db, env=env).results()
    assert {r.status for r in results} == {"paused"}
    assert sorted(event["url"] for event in receiver.bodies()) == sorted(
        f"http://ui.example:8765/runs/{r.run_id}" for r in results)


async def test_failed_runs_stay_failed_unless_retry_failed_starts_a_new_attempt(
        tmp_path: Path, flow: Path) -> None:
    from agentloom.testing._server import FakeError, FakeReply
    from agentloom.testing.fake_openai import FakeOpenAIServer

    broken = {"doc01|"}

    def reply(body: Any) -> Any:
        prompt = body["messages"][-1]["content"]
        if any(b in prompt for b in broken):
            return FakeError(status=400, body={"error": {"message": "bad doc"}})
        return FakeReply(text="echo:" + prompt)

    server = FakeOpenAIServer(responder=reply)
    server.start_in_thread()
    try:
        inputs, out, db = write_docs(tmp_path / "in.jsonl", 3), tmp_path / "out.jsonl", \
            tmp_path / "runs.db"
        env = {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": server.openai_base_url}
        first = {r.id: r for r in await batch(flow, inputs, output=out, store=db,
                                              env=env, batch_id="f").results()}
        assert first["d01"].status == "failed" and first["d00"].ok
        out.write_text("", encoding="utf-8")
        before = len(server.requests)
        again = await batch(flow, inputs, output=out, store=db, env=env, batch_id="f",
                            resume=True).results()
        assert len(server.requests) == before and all(r.reused for r in again)
        assert {r.id: r.status for r in again}["d01"] == "failed"
        broken.clear()
        retried = await batch(flow, inputs, output=out, store=db, env=env, batch_id="f",
                              resume=True, retry_failed=True).results()
        assert [(r.id, r.status, r.run_id) for r in retried] == [("d01", "success", "f.d01~2")]
        assert len(server.requests) == before + 2
        runs = {r.run_id: r.status for r in (await _runs_list(db))}
        assert runs["f.d01"] == "failed" and runs["f.d01~2"] == "succeeded"
        later = await batch(flow, inputs, output=tmp_path / "other.jsonl", store=db,
                            env=env, batch_id="f").results()
        assert {r.id: (r.status, r.reused) for r in later}["d01"] == ("success", True)
    finally:
        server.stop_thread()


@pytest.mark.parametrize(("argv", "message"), [
    (["--batch-id", "x"], "--batch-id and --lease need --store"),
    (["--store", "runs.db", "--lease", "0"], "--lease must be a positive number"),
    (["--store", "runs.db", "--batch-id", "a b"], "--batch-id: letters, digits"),
    (["--store", "mysql://db/x"], "unknown store URL scheme 'mysql'"),
])
def test_store_flag_usage_errors(tmp_path: Path, flow: Path, argv: list[str], message: str,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    import cli_main

    inputs = write_docs(tmp_path / "in.jsonl", 1)
    rc = cli_main.main(["batch", str(flow), str(inputs), "-o", str(tmp_path / "o.jsonl"),
                        *argv])
    err = capsys.readouterr().err
    assert rc == 2 and message in err and len(err.strip().splitlines()) == 1


async def test_a_worker_that_loses_its_claim_stops_and_lets_the_holder_finish(
        tmp_path: Path, flow: Path, server: HoldingServer) -> None:
    from agentloom.store import open_store

    inputs, out, db = write_docs(tmp_path / "in.jsonl", 1), tmp_path / "out.jsonl", \
        tmp_path / "runs.db"
    server.hold = (_title(0),)
    b = batch(flow, inputs, output=out, store=db, env=_env(server), batch_id="steal",
              lease_seconds=0.3)
    task = asyncio.create_task(b.results())
    await _until(lambda: _title(0) in server.prompts(), "the second call")
    async with open_store(db) as store:  # type: ignore[attr-defined]
        record = await store.get_run("steal.d00")
        # As if our lease had lapsed and a worker elsewhere took the run for a moment.
        await store.release_claim("steal.d00", record.claimed_by)
        assert await store.claim_run("steal.d00", "elsewhere:1:thief", 0.5)
    await _until(lambda: b.stats.deferred == 1, "the run to be given up")
    server.release()
    results = await task
    assert [(r.id, r.status, r.resumed) for r in results] == [("d00", "success", True)]
    assert server.prompts().count(_title(0)) == 2  # the held call; then the resumed one
    assert [p for p in server.prompts() if p.startswith("Summarize")] == ["Summarize: doc00|"]
