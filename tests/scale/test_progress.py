"""Progress: a rich live bar in a terminal (run under a pseudo-terminal), plain lines on a
pipe, JSON events with --json."""

from __future__ import annotations

import io
import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

from scale_helpers import EchoFactory, write_jsonl

from agentloom.scale import BatchItemResult, BatchStats, PlainProgress, batch

CLI = str(Path(__file__).parent / "cli_main.py")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _env(fake_env: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENTLOOM_"))}
    return {**env, **fake_env, "COLUMNS": "160", "TERM": "xterm-256color"}


def _run_in_pty(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str]:
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd,
                            close_fds=True)
    os.close(slave)
    chunks: list[bytes] = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return proc.wait(timeout=60), b"".join(chunks).decode("utf-8", "replace")


def test_live_bar_in_a_terminal(tmp_path: Path, flow: Path, fake_env: dict[str, str]) -> None:
    inputs = write_jsonl(tmp_path / "in.jsonl", 60, extra=["[1]"])
    rc, screen = _run_in_pty([sys.executable, CLI, "batch", str(flow), str(inputs), "-o",
                              str(tmp_path / "out.jsonl")], _env(fake_env), tmp_path)
    assert rc == 1  # the invalid line makes the batch not all-green
    assert ANSI.search(screen), "a live display draws with terminal escapes"
    plain = ANSI.sub("", screen)
    assert "━" in plain  # the bar
    assert re.search(r"61/61 done · ETA 0:00:00\s*\n\s*1 failed · 0 running · [\d.]+ runs/s · "
                     r"2,280 tokens · \$[\d.]+", plain)
    assert "batch summary" in plain and "in.jsonl:61: not a JSON object" in plain
    assert "batch: " not in plain  # no plain progress lines on a terminal


def test_plain_lines_when_not_a_terminal(tmp_path: Path, flow: Path,
                                         fake_env: dict[str, str]) -> None:
    inputs = write_jsonl(tmp_path / "in.jsonl", 30)
    proc = subprocess.run([sys.executable, CLI, "batch", str(flow), str(inputs)],
                          capture_output=True, text=True, env=_env(fake_env), cwd=tmp_path,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert not ANSI.search(proc.stdout)
    lines = proc.stdout.splitlines()
    assert lines[0] == "batch: 30 input(s) to run on local"
    progress = [line for line in lines if line.startswith("batch: ")]
    assert re.fullmatch(r"batch: 30/30 done · 0 failed · 0 running · [\d.]+ runs/s · "
                        r"1,140 tokens · \$[\d.]+ · ETA 0:00:00", progress[-1])
    assert re.search(r"succeeded\s+│\s+30 │", proc.stdout)
    assert (tmp_path / "in.results.jsonl").exists()  # the default output name


def test_json_events_on_stdout(tmp_path: Path, flow: Path, fake_env: dict[str, str]) -> None:
    inputs = write_jsonl(tmp_path / "in.jsonl", 5)
    proc = subprocess.run([sys.executable, CLI, "batch", str(flow), str(inputs), "--json"],
                          capture_output=True, text=True, env=_env(fake_env), cwd=tmp_path,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [e["event"] for e in events] == ["start"] + ["result"] * 5 + ["summary"]
    assert events[0]["total"] == 5
    assert {e["id"] for e in events[1:-1]} == {f"in-{i:04d}" for i in range(5)}
    assert events[-1]["succeeded"] == 5 and events[-1]["tokens"] == 5 * 38


def test_plain_progress_prints_every_n_results_or_each_interval() -> None:
    now = [0.0]
    out = io.StringIO()
    progress = PlainProgress(out, interval=1.0, every=3, clock=lambda: now[0])
    stats = BatchStats(total=10, clock=lambda: now[0])
    progress.start(stats)
    for i in range(7):
        now[0] += 0.1
        stats.started()
        item = BatchItemResult(id=str(i), status="success", tokens=10, cost_usd=None)
        stats.add(item)
        progress.result(item, stats)
    now[0] += 2.0
    item = BatchItemResult(id="x", status="failed", error="nope")
    stats.started()
    stats.add(item)
    progress.result(item, stats)
    lines = out.getvalue().splitlines()
    assert lines[0] == "batch: 10 input(s) to run on local"
    assert [line.split(" · ")[0] for line in lines[1:]] == [
        "batch: 3/10 done", "batch: 6/10 done", "batch: 8/10 done"]
    assert lines[-1] == ("batch: 8/10 done · 1 failed · 0 running · 3.1 runs/s · "
                         "70+ tokens · $0.0000+ · ETA 0:00:01")


async def test_stats_follow_the_batch(tmp_path: Path) -> None:
    inputs = write_jsonl(tmp_path / "in.jsonl", 20)
    out = io.StringIO()
    b = batch(None, inputs, runner_factory=EchoFactory(fail_ids=("in-0003",)),
              progress=PlainProgress(out, every=5))
    await b.results()
    text = out.getvalue()
    assert "batch: 20/20 done · 1 failed" in text
    assert "in-0003 (" in text and "failed: step 'x' failed: no" in text
