"""`agentloom batch`: usage errors, Ctrl-C then --resume, an unreachable Ray address."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cli_main
import pytest
from scale_helpers import echo_reply, write_jsonl

from agentloom.testing.fake_openai import FakeOpenAIServer

CLI = str(Path(__file__).parent / "cli_main.py")


def _env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENTLOOM_"))}
    return {**env, **extra}


@pytest.mark.parametrize(("argv", "message"), [
    (["--concurrency", "0"], "--concurrency must be at least 1"),
    (["--retry-failed"], "--retry-failed needs --resume"),
    (["--address", "auto"], "--address and --workers need --executor ray"),
    (["--resume", "--overwrite"], "--resume and --overwrite contradict each other"),
    (["--executor", "spark"], "argument --executor: invalid choice: 'spark'"),
])
def test_usage_errors_are_one_line_and_exit_2(
        tmp_path: Path, flow: Path, argv: list[str], message: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    inputs = write_jsonl(tmp_path / "in.jsonl", 1)
    try:
        rc = cli_main.main(["batch", str(flow), str(inputs), *argv])
    except SystemExit as exc:  # argparse's own errors
        rc = exc.code  # type: ignore[assignment]
    err = capsys.readouterr().err
    assert rc == 2
    assert len(err.strip().splitlines()) == 1 and message in err


def test_missing_inputs_bad_kind_and_existing_output(
        tmp_path: Path, flow: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main.main(["batch", str(flow), str(tmp_path / "nope.jsonl")]) == 2
    assert "inputs not found" in capsys.readouterr().err
    txt = tmp_path / "in.txt"
    txt.write_text("x", encoding="utf-8")
    assert cli_main.main(["batch", str(flow), str(txt)]) == 2
    assert "expected a .jsonl or .csv file or a folder" in capsys.readouterr().err
    os.mkfifo(tmp_path / "pipe.jsonl")  # no writer: reading it would block for ever
    assert cli_main.main(["batch", str(flow), str(tmp_path / "pipe.jsonl")]) == 2
    assert "pipe.jsonl: not a regular file or a folder" in capsys.readouterr().err
    inputs = write_jsonl(tmp_path / "in.jsonl", 1)
    out = tmp_path / "out.jsonl"
    out.write_text("", encoding="utf-8")
    assert cli_main.main(["batch", str(flow), str(inputs), "-o", str(out)]) == 2
    assert "already exists: pass --resume" in capsys.readouterr().err


class GatedServer(FakeOpenAIServer):
    """Answers the first `allowed` requests, then holds every later one until `open()`:
    the batch can't finish before the test interrupts it, however slow the machine."""

    def __init__(self, allowed: int) -> None:
        super().__init__(responder=echo_reply)
        self.allowed = allowed
        self.gate = threading.Event()

    async def record(self, request: Any) -> Any:
        body = await super().record(request)
        if len(self.requests) > self.allowed:
            while not self.gate.is_set():
                await asyncio.sleep(0.01)
        return body

    def open(self) -> None:
        self.gate.set()


@pytest.fixture
def slow_server() -> Iterator[GatedServer]:
    server = GatedServer(allowed=24)  # twelve two-step runs, then nothing until open()
    server.start_in_thread()
    yield server
    server.open()
    server.stop_thread()


def test_ctrl_c_then_resume_finishes_only_what_was_left(
        tmp_path: Path, flow: Path, slow_server: GatedServer) -> None:
    inputs = write_jsonl(tmp_path / "in.jsonl", 200)
    out = tmp_path / "out.jsonl"
    env = _env({"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": slow_server.openai_base_url})
    proc = subprocess.Popen([sys.executable, CLI, "batch", str(flow), str(inputs), "-o",
                             str(out), "--concurrency", "4"], env=env, cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if out.exists() and out.read_text(encoding="utf-8").count("\n") >= 10:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert "run again with --resume" in err
    text = out.read_text(encoding="utf-8")
    assert text.endswith("\n")
    first = [json.loads(line)["id"] for line in text.splitlines()]
    assert 10 <= len(first) <= 12

    slow_server.open()
    before = len(slow_server.requests)
    done = subprocess.run([sys.executable, CLI, "batch", str(flow), str(inputs), "-o",
                           str(out), "--resume", "--concurrency", "50", "--json"], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert events[0]["skipped"] == len(first)
    ran = {e["id"] for e in events if e["event"] == "result"}
    assert ran == {f"in-{i:04d}" for i in range(200)} - set(first)
    assert len(slow_server.requests) - before == 2 * len(ran)  # two steps per run
    ids = [json.loads(line)["id"] for line in out.read_text(encoding="utf-8").splitlines()]
    assert sorted(ids) == [f"in-{i:04d}" for i in range(200)]  # each input exactly once


def test_unreachable_ray_address_is_a_clear_error(tmp_path: Path, flow: Path) -> None:
    pytest.importorskip("ray", reason="ray is not installed")
    inputs = write_jsonl(tmp_path / "in.jsonl", 2)
    proc = subprocess.run([sys.executable, CLI, "batch", str(flow), str(inputs),
                           "--executor", "ray", "--address", "127.0.0.1:1"],
                          env=_env({"OPENAI_API_KEY": "unused: Ray fails first"}),
                          cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        "agentloom: error: cannot reach the Ray cluster at 127.0.0.1:1: Connection refused"]
    assert not (tmp_path / "in.results.jsonl").exists()  # nothing ran, no file left
    assert "batch summary" not in proc.stdout


def test_a_pause_in_a_batch_without_a_store_says_it_cannot_be_resumed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Before, the line said only "paused: approve?": a pause nobody could ever answer.
    flow = tmp_path / "gate.yaml"
    flow.write_text("name: gate\nsteps:\n  - {id: ok, type: approval_gate, message: go?}\n",
                    encoding="utf-8")
    inputs = write_jsonl(tmp_path / "in.jsonl", 1)
    out = tmp_path / "out.jsonl"
    assert cli_main.main(["batch", str(flow), str(inputs), "-o", str(out)]) == 3
    (line,) = out.read_text(encoding="utf-8").splitlines()
    result = json.loads(line)
    assert result["status"] == "paused"
    assert result["error"].endswith("go?; it can't be resumed: this batch has no store "
                                    "(run it with --store to resume paused runs)")
    shown = capsys.readouterr().out
    assert "this batch has no store" in shown
    # Waiting for a person is not a failure: counted apart, and exit code 3 as `run`'s.
    assert "0 failed · 1 paused" in shown and "waiting for a person" in shown
    assert cli_main.main(["batch", str(flow), str(inputs), "-o", str(tmp_path / "d.jsonl"),
                          "--store", str(tmp_path / "runs.db")]) == 3
    assert "--store " in json.loads((tmp_path / "d.jsonl").read_text())["error"]
