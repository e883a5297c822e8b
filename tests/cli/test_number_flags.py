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


LEASE_SAID = ("agentloom: error: --lease must be a positive number of seconds, at most "
              "2592000 (30 days, the longest claim a store takes)")


@pytest.mark.parametrize("seconds", ["nan", "inf", "1e300", "2592001", "0", "-5"])
def test_a_lease_the_store_would_refuse_is_a_usage_error_before_any_run(
        here: Path, capsys: pytest.CaptureFixture[str], seconds: str) -> None:
    said = _usage_error(capsys, ["batch", "flow.yaml", "in.jsonl", "--store", "runs.db",
                                 "--lease", seconds])
    assert said == LEASE_SAID
    assert not (here / "in.results.jsonl").exists() and not (here / "runs.db").exists()


def test_the_longest_lease_is_the_stores_own() -> None:
    from agentloom.cli.batch import MAX_LEASE_SECONDS
    from agentloom.store._base import MAX_LEASE_SECONDS as STORES
    from agentloom.store._base import check_lease

    assert MAX_LEASE_SECONDS == STORES
    check_lease(MAX_LEASE_SECONDS)  # the most the command line lets through is taken


@pytest.mark.parametrize("flag", ["--min-cost", "--max-cost"])
@pytest.mark.parametrize("usd", ["nan", "inf", "-1", "1e400", "abc"])
def test_a_cost_filter_that_is_no_amount_is_refused(
        here: Path, capsys: pytest.CaptureFixture[str], flag: str, usd: str) -> None:
    # `nan` compared false with every cost: the listing was quietly empty.
    said = _usage_error(capsys, ["history", "--store", "memory://", flag, usd])
    assert said == f"agentloom: error: {flag} {usd!r}: expected a number of USD >= 0, e.g. 0.50"


def test_a_budget_past_any_float_is_refused_as_the_flag(
        here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    said = _usage_error(capsys, ["run", "flow.yaml", "--no-checkpoint", "--budget", "1e400"])
    assert said == "agentloom: error: --budget '1e400': expected a number of USD >= 0, e.g. 0.50"


@pytest.mark.parametrize("tokens", ["²", "1" * 5000, str(10**16), "0", "nan"])
def test_a_token_cap_that_is_no_count_is_refused(
        here: Path, capsys: pytest.CaptureFixture[str], tokens: str) -> None:
    # '²' is a digit to str.isdigit() and 5,000 digits are past int(): both were tracebacks.
    said = _usage_error(capsys, ["run", "flow.yaml", "--no-checkpoint",
                                 "--max-tokens-per-run", tokens])
    assert said.startswith("agentloom: error: --max-tokens-per-run ")
    assert said.endswith(": expected a whole number >= 1 (at most 1000000000000000)")


@pytest.mark.parametrize(("flag", "value"), [("--budget", "nan"), ("--budget", "-1"),
                                             ("--max-tokens-per-run", "0")])
def test_a_resumes_caps_are_checked_before_the_store_is_read(
        here: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str) -> None:
    # Not "no run 'r1' in the store" (exit 1): the command line is wrong first.
    said = _usage_error(capsys, ["resume", "r1", "--store", "memory://", flag, value])
    assert said.startswith(f"agentloom: error: {flag} {value!r}: expected ")


@pytest.mark.parametrize(("argv", "said"), [
    (["--concurrency", HUGE], "--concurrency must be at least 1 and at most 100000"),
    # A pool of 10**20 Ray actors was asked for one by one, before any run, for ever.
    (["--executor", "ray", "--workers", HUGE], "--workers must be at least 1 and at most 10000"),
])
def test_a_pool_too_big_to_build_is_a_usage_error(
        here: Path, capsys: pytest.CaptureFixture[str], argv: list[str], said: str) -> None:
    assert _usage_error(capsys, ["batch", "flow.yaml", "in.jsonl", *argv]) == (
        f"agentloom: error: {said}")


@pytest.mark.parametrize("flag", ["--rpm", "--tpm"])
@pytest.mark.parametrize("value", ["0.5", "0", "nan", "inf"])
def test_a_rate_flag_below_one_a_minute_names_the_flag(
        here: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str) -> None:
    # 0.5 passed the flag's own check (> 0) and was then refused by the rate limit's,
    # in words that named the config field, not the flag.
    said = _usage_error(capsys, ["run", "flow.yaml", flag, f"openai={value}"])
    assert said == (f"agentloom: error: {flag} 'openai={value}': expected PROVIDER=N with "
                    f"N >= 1 per minute, e.g. {flag} openai=500")
