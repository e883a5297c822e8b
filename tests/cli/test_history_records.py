"""`agentloom history --runs-dir DIR` reads the public AgentLoom's JSON run records. One
that is damaged (a cost that is text, a list or NaN, a time that is no time, providers
that are no list) is passed over with one warning line naming the file, and the others
are listed: before, `_keep` or the table's `float(cost)` ended the command with a
traceback, and `--json` printed NaN, which is no JSON."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from agentloom.cli import main

GOOD = {"run_id": "good", "timestamp": "2026-01-02T03:04:05+00:00", "workflow_name": "w",
        "status": "success", "providers_used": ["openai/gpt-4o-mini"],
        "total_cost_usd": 0.012, "total_tokens": 320, "duration_ms": 3200}


@pytest.fixture
def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "agentloom_runs"
    folder.mkdir()
    (folder / "good.json").write_text(json.dumps(GOOD))
    return folder


def _history(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["history", "--runs-dir", "agentloom_runs", "--store", "memory://", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("field", "value", "why"), [
    ("total_cost_usd", "abc", "total_cost_usd 'abc' is not a number from 0 to 1e15"),
    ("total_cost_usd", [1], "total_cost_usd [1] is not a number from 0 to 1e15"),
    ("total_cost_usd", float("nan"), "total_cost_usd nan is not a number from 0 to 1e15"),
    ("total_cost_usd", -1, "total_cost_usd -1 is not a number from 0 to 1e15"),
    ("total_cost_usd", True, "total_cost_usd True is not a number from 0 to 1e15"),
    ("duration_ms", "x", "duration_ms 'x' is not a number from 0 to 1e15"),
    ("total_tokens", 1e300, "total_tokens 1e+300 is not a number from 0 to 1e15"),
    ("timestamp", 5, "timestamp is a number, not text"),
    ("timestamp", "yesterday", "timestamp 'yesterday' is not an ISO 8601 time"),
    ("status", ["success"], "status is a list, not text"),
    ("workflow_name", {"a": 1}, "workflow_name is a mapping, not text"),
    ("providers_used", 5, "providers_used is not a list of provider/model texts"),
    ("providers_used", [1], "providers_used is not a list of provider/model texts"),
    ("run_id", None, "no run_id (text)"),
])
@pytest.mark.parametrize("as_json", [False, True])
def test_a_damaged_record_is_passed_over_with_a_warning_naming_it(
        runs: Path, capsys: pytest.CaptureFixture[str], field: str, value: Any, why: str,
        as_json: bool) -> None:
    (runs / "bad.json").write_text(json.dumps({**GOOD, "run_id": "bad", field: value}))
    # Every filter reads the fields: none of them may trip over the damaged one.
    code, out, err = _history(capsys, "--provider", "openai", "--min-cost", "0",
                              "--max-cost", "1", "--since", "2026-01-01",
                              *(["--json"] if as_json else []))
    assert code == 0
    assert err == f"agentloom history: warning: skipped agentloom_runs/bad.json: {why}\n"
    if as_json:
        assert [r["run_id"] for r in json.loads(out)] == ["good"]
    else:
        assert "good" in out and "bad" not in out and "0.0120" in out


@pytest.mark.parametrize(("text", "why"), [
    (b"not json", "not JSON (Expecting value: line 1 column 1 (char 0))"),
    (b'"a string"', "holds text, not a run record"),
    (b'{"run_id": "x", "total_cost_usd": 1' + b"0" * 5000 + b"}", "not JSON (Exceeds the "),
    (b"\xff\xfe{}", "not UTF-8 text"),
])
def test_a_file_that_is_no_record_is_named_too(
        runs: Path, capsys: pytest.CaptureFixture[str], text: bytes, why: str) -> None:
    (runs / "bad.json").write_bytes(text)
    code, out, err = _history(capsys)
    assert code == 0 and "good" in out
    assert err.startswith(f"agentloom history: warning: skipped agentloom_runs/bad.json: {why}")
    assert len(err.splitlines()) == 1


def test_a_fifo_is_named_and_not_waited_on(runs: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    os.mkfifo(runs / "pipe.json")
    code, out, err = _history(capsys)
    assert code == 0 and "good" in out
    assert err == ("agentloom history: warning: skipped agentloom_runs/pipe.json: not a "
                   "regular file\n")


def test_many_damaged_records_are_counted_past_twenty(
        runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for i in range(25):
        (runs / f"bad{i:02}.json").write_text("[]")
    code, out, err = _history(capsys)
    lines = err.splitlines()
    assert code == 0 and "good" in out and len(lines) == 21
    assert lines[-1] == ("agentloom history: warning: skipped 5 more damaged run record(s) "
                         "in agentloom_runs")


def test_until_the_last_day_a_date_holds_lists_every_run(
        runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The end of 9999-12-31 is past what a datetime holds: it was an OverflowError.
    code, out, err = _history(capsys, "--until", "9999-12-31", "--json")
    assert code == 0 and err == ""
    assert [r["run_id"] for r in json.loads(out)] == ["good"]


def test_a_runs_dir_that_is_no_folder_is_a_usage_error(
        runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["history", "--runs-dir", "agentloom_run", "--store", "memory://"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err == ("agentloom: error: --runs-dir agentloom_run: not a folder; give the folder "
                   "of their run records (agentloom_runs)\n")
