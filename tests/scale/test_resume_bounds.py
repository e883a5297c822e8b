"""A results file read back by a resume is a file from outside like any other: a FIFO or
device there is refused, not waited on; an endless line is read past in bounded memory
(its input runs again); and what is kept of a finished input is its status, not its
outputs, so a large results file takes memory by its count of inputs."""

from __future__ import annotations

import json
import os
import tracemalloc
from pathlib import Path

import pytest
from scale_helpers import EchoFactory, Probe, write_jsonl

from agentloom.cli import main
from agentloom.errors import ConfigError
from agentloom.scale import _resume, batch, read_finished


@pytest.mark.parametrize("flag", ["resume", "overwrite"])
async def test_a_fifo_as_the_results_file_is_refused_without_waiting(
        tmp_path: Path, flag: str) -> None:
    inputs = write_jsonl(tmp_path / "in.jsonl", 2)
    out = tmp_path / "out.jsonl"
    os.mkfifo(out)  # no reader or writer: opening it either way would wait for ever
    probe = Probe()
    with pytest.raises(ConfigError, match=r"out\.jsonl: not a regular file"):
        await batch(None, inputs, runner_factory=EchoFactory(probe=probe), output=out,
                    **{flag: True}).results()
    assert probe.calls == []


def test_a_device_as_the_results_file_is_refused() -> None:
    with pytest.raises(ConfigError, match="not a regular file"):
        read_finished("/dev/zero")  # endless: a line read would never end


async def test_an_endless_results_line_is_read_past_and_its_input_runs_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_resume, "MAX_RESULT_LINE_BYTES", 4096)
    inputs = write_jsonl(tmp_path / "in.jsonl", 3)
    out = tmp_path / "out.jsonl"
    with out.open("w", encoding="utf-8") as f:
        f.write(json.dumps({"id": "in-0000", "status": "success"}) + "\n")
        f.write(json.dumps({"id": "in-0001", "status": "success",
                            "outputs": {"big": "x" * 50_000}}) + "\n")
        f.write(json.dumps({"id": "in-0002", "status": "success"}) + "\n")
    state = read_finished(out)
    assert state.unreadable_lines == [2] and set(state.finished) == {"in-0000", "in-0002"}
    probe = Probe()
    again = await batch(None, inputs, runner_factory=EchoFactory(probe=probe), output=out,
                        resume=True).results()
    assert probe.calls == ["in-0001"] and [r.status for r in again] == ["success"]


def test_a_large_results_file_is_read_back_by_its_count_of_inputs(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    with out.open("w", encoding="utf-8") as f:
        for i in range(100):  # 10 MB of outputs in all
            f.write(json.dumps({"id": f"in-{i:04d}", "status": "success",
                                "outputs": {"text": "y" * 100_000}}) + "\n")
    tracemalloc.start()
    try:
        state = read_finished(out)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(state.finished) == 100
    assert all(item.outputs == {} and item.status == "success"
               for item in state.finished.values())
    assert peak < 2_000_000  # a line or two at a time, not the file's 10 MB


def test_the_cli_refuses_a_fifo_results_file_in_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "flow.yaml").write_text(
        "name: f\nsteps:\n  - {id: a, type: llm_call, prompt: 'hi {state.id}'}\n")
    write_jsonl(tmp_path / "in.jsonl", 1)
    os.mkfifo(tmp_path / "out.jsonl")
    for flag in ("--resume", "--overwrite"):
        assert main(["batch", "flow.yaml", "in.jsonl", "-o", "out.jsonl", flag]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err == ["agentloom: error: out.jsonl: not a regular file, so no results go "
                       "there; name another with --output"]
