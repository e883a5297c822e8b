"""Numbers given on the command line or in the environment are checked before they are
used: one too large for the store or for `timedelta`, a negative count, `nan` or `inf`
is a usage error (exit 2, one line), never a traceback nor a value quietly read as
something else (a `nan` retention kept runs for ever)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agentloom.cli import main
from agentloom.store import open_store

HUGE = str(10**20)  # past SQLite's 64-bit INTEGER


def _usage_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert out == "" and len(lines) == 1, err
    return lines[0]


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "flow.yaml").write_text(
        "name: f\nsteps:\n  - {id: a, type: llm_call, prompt: hi}\n")
    (tmp_path / "in.jsonl").write_text('{"id": "1"}\n')
    return tmp_path


@pytest.mark.parametrize("command", ["runs", "history"])
@pytest.mark.parametrize("limit", [HUGE, "-5", "0"])
def test_a_listing_limit_is_one_to_a_hundred_thousand(
        here: Path, capsys: pytest.CaptureFixture[str], command: str, limit: str) -> None:
    said = _usage_error(capsys, [command, "--limit", limit, "--store", str(here / "r.db")])
    assert said == "agentloom: error: --limit must be 1 to 100000"


def test_an_age_past_timedelta_is_a_usage_error(
        here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    said = _usage_error(capsys, ["runs", "--prune", "--older-than", "99999999999d"])
    assert said == "agentloom: error: --older-than '99999999999d': too long an age"


@pytest.mark.parametrize("command", [["run", "flow.yaml"], ["batch", "flow.yaml", "in.jsonl"]])
@pytest.mark.parametrize("seconds", ["nan", "inf", "0"])
def test_a_timeout_is_a_positive_finite_number(
        here: Path, capsys: pytest.CaptureFixture[str], command: list[str],
        seconds: str) -> None:
    said = _usage_error(capsys, [*command, "--timeout", seconds])
    assert said == "agentloom: error: --timeout must be a positive number of seconds"


@pytest.mark.parametrize("days", ["nan", "inf", "1e300", "-1", "soon"])
def test_a_retention_that_is_no_number_of_days_is_refused(
        here: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        days: str) -> None:
    monkeypatch.setenv("AGENTLOOM_RETENTION_DAYS", days)
    said = _usage_error(capsys, ["runs", "--prune"])
    assert said.startswith(f"agentloom: error: AGENTLOOM_RETENTION_DAYS={days!r}: "
                           "expected a number of days")


@pytest.mark.parametrize(("days", "said"), [
    ("0.5", "older than 12 hours"), ("off", "older than 30 days"), ("0", "older than 30 days"),
])
def test_a_retention_in_days_or_off_is_taken(
        here: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        days: str, said: str) -> None:
    store = open_store(here / "runs.db")
    asyncio.run(_opened(store))  # a store there, so the prune reports its age
    monkeypatch.setenv("AGENTLOOM_RETENTION_DAYS", days)
    assert main(["runs", "--prune", "--store", str(here / "runs.db")]) == 0
    assert said in capsys.readouterr().out


async def _opened(store: Any) -> None:
    await store.list_runs(limit=1)
    await store.close()
