"""`agentloom run --json` with the run's summary and each step's, and the limit flags
(--budget, --max-tokens-per-run, --rpm, --tpm, --prices), run in-process against the fake
OpenAI server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentloom.cli import main
from agentloom.testing._server import FakeReply

_FAN_OUT = """\
name: fan
config: {provider: openai, model: gpt-4o-mini, max_concurrent_steps: 20}
steps:
""" + "\n".join(f"  - {{id: s{i}, type: llm_call, prompt: 'item {i}', max_tokens: 100}}"
                for i in range(20)) + "\n"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    from agentloom.testing.fake_openai import FakeOpenAIServer

    fake = FakeOpenAIServer(responder=lambda _b: FakeReply(text="ok", input_tokens=30,
                                                           output_tokens=10))
    fake.start_in_thread()
    for name in ("ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "OLLAMA_HOST",
                 "AGENTLOOM_PROVIDER", "AGENTLOOM_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_BASE_URL", fake.openai_base_url)
    try:
        yield fake
    finally:
        fake.stop_thread()


def _file(tmp_path: Path, text: str, name: str = "wf.yaml") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any, str]:
    code = main(["run", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_json_carries_the_run_summary_and_each_steps_summary(
        server: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _err = _run(capsys, _file(tmp_path, _FAN_OUT), "--json")
    assert code == 0
    data = json.loads(out)  # stdout is only JSON
    summary = data["summary"]
    assert summary["status"] == "success" and summary["steps"] == {"success": 20}
    assert summary["tokens"] == 20 * 40
    assert summary["cost_usd"] == pytest.approx(20 * (30 * 0.15 + 10 * 0.6) / 1e6)
    assert summary["retries"] == 0 and summary["fallbacks_used"] == 0
    assert summary["breakers"]["openai"]["state"] == "closed"
    assert summary["elapsed_seconds"] >= 0
    step = data["steps"]["s0"]
    assert step["summary"]["status"] == "completed"
    assert step["summary"]["usage"]["output_tokens"] == 10
    assert step["summary"]["failed_attempts"] == []
    assert "messages" not in json.dumps(step["summary"])  # metadata only


def test_budget_flag_stops_the_run_before_it_overshoots(
        server: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A call's worst case here is ~(30 + 100) tokens at gpt-4o-mini prices, ~ $0.00007.
    code, out, _err = _run(capsys, _file(tmp_path, _FAN_OUT), "--json", "--budget", "0.0003")
    assert code == 1
    data = json.loads(out)
    assert data["status"] == "budget_exceeded"
    assert data["summary"]["budget"]["spent_usd"] <= 0.0003
    assert 0 < len(server.requests) < 20


def test_prices_and_rate_flags_reach_the_run(
        server: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prices = _file(tmp_path, '{"openai": {"my-ft": {"input": 1, "output": 2}}}', "p.json")
    wf = _file(tmp_path, _FAN_OUT.replace("gpt-4o-mini", "my-ft"))
    code, out, _err = _run(capsys, wf, "--json", "--prices", prices, "--rpm", "openai=60000",
                          "--tpm", "openai=10000000", "--budget", "1")
    assert code == 0, out[:3000]
    assert json.loads(out)["summary"]["cost_usd"] == pytest.approx(20 * (30 + 20) / 1e6)


def test_unknown_price_under_a_budget_fails_closed_naming_the_model(
        server: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wf = _file(tmp_path, _FAN_OUT.replace("gpt-4o-mini", "my-ft"))
    code, out, _err = _run(capsys, wf, "--json", "--budget", "1")
    assert code == 1
    error = json.loads(out)["steps"]["s0"]["error"]
    assert "'my-ft'" in error and "pricing:" in error and "price file" in error
    assert server.requests == []


@pytest.mark.parametrize("flags", [
    ["--budget", "lots"], ["--budget", "-1"], ["--budget", "nan"],
    ["--max-tokens-per-run", "0"], ["--max-tokens-per-run", "many"],
    ["--rpm", "openai"], ["--rpm", "openai=0"], ["--rpm", "=5"], ["--tpm", "openai=x"],
    ["--prices", "no/such/prices.json"],
])
def test_bad_limit_flags_are_one_line_usage_errors(
        flags: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, _file(tmp_path, _FAN_OUT), *flags)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert flags[0] in err or "price file" in err


def test_a_price_file_that_does_not_parse_is_a_usage_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = _file(tmp_path, "{not json", "bad.json")
    code, _out, err = _run(capsys, _file(tmp_path, _FAN_OUT), "--prices", bad)
    assert code == 2 and err.count("\n") == 1 and "--prices" in err
