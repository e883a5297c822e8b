"""What a user moving over from the public AgentLoom met, each fixed and pinned here:
state_schema globs that hid our own token counts, `responses_file` resolved only beside
the workflow, mock files keyed by their prompt hash, our recordings given as a mock file,
`validate` passing what `run` refuses, and a paused gate that looked `pending`."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentloom.redact import REDACTED, Redactor

EXAMPLES = Path("/work/shared/compat/agentloom-examples")
REPO = Path(__file__).resolve().parents[2]
needs_examples = pytest.mark.skipif(not EXAMPLES.is_dir(), reason="compat examples not present")


def cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        full.pop(key, None)
    return subprocess.run([sys.executable, "-m", "agentloom.cli", *args], cwd=cwd, env=full,
                          capture_output=True, text=True, timeout=60)


def their_hash(messages: list[dict[str, Any]], model: str) -> str:
    """The public AgentLoom's mock key, written out from its documented payload."""
    payload = {"messages": messages, "model": model, "temperature": None,
               "max_tokens": None, "extra": {}}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def test_a_token_glob_redacts_state_keys_but_not_our_token_counts() -> None:
    r = Redactor.from_state_schema({"*token*": {"redact": True}},
                                   state={"api_token": "tok-abcdef-123"})
    out = r.redact_state({
        "tokens": 30, "state": {"api_token": "tok-abcdef-123", "note": "uses tok-abcdef-123"},
        "steps": {"a": {"tokens": {"input": 10, "total": 30}, "usage": {
            "input_tokens": 10, "output_tokens": 20, "max_tokens": 64}}}})
    assert out["tokens"] == 30
    assert out["steps"]["a"]["tokens"] == {"input": 10, "total": 30}
    assert out["steps"]["a"]["usage"] == {"input_tokens": 10, "output_tokens": 20,
                                          "max_tokens": 64}
    assert out["state"] == {"api_token": REDACTED, "note": f"uses {REDACTED}"}
    # A key named exactly is still the user's to hide.
    exact = Redactor(key_globs=["tokens"]).redact_state({"tokens": "my list"})
    assert exact == {"tokens": REDACTED}


def _mock_workflow(tmp: Path, replies: dict[str, Any]) -> Path:
    (tmp / "wf.yaml").write_text(
        "name: ph\nconfig:\n  provider: mock\n  model: gpt-4o-mini\n"
        "  responses_file: mock.json\nstate:\n  question: What is 2+2?\nsteps:\n"
        "  - id: answer\n    type: llm_call\n    system_prompt: Be brief.\n"
        "    prompt: 'Q: {state.question}'\n    output: answer\n")
    (tmp / "mock.json").write_text(json.dumps(replies))
    return tmp / "wf.yaml"


def test_a_mock_file_keyed_by_their_prompt_hash_replays(tmp_path: Path) -> None:
    key = their_hash([{"role": "system", "content": "Be brief."},
                      {"role": "user", "content": "Q: What is 2+2?"}], "gpt-4o-mini")
    wf = _mock_workflow(tmp_path, {"_version": 2, key: {
        "content": "4", "model": "gpt-4o-mini", "usage": {
            "prompt_tokens": 12, "completion_tokens": 1, "total_tokens": 13},
        "cost_usd": 0.00001, "latency_ms": 5, "finish_reason": "stop"}})
    done = cli("run", str(wf), "--json", "--no-checkpoint")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["outputs"] == {"answer": "4"}
    assert data["tokens"] == 13


def test_an_unmatched_prompt_says_the_file_has_hash_keys(tmp_path: Path) -> None:
    wf = _mock_workflow(tmp_path, {"0" * 64: {"content": "x"}})
    done = cli("run", str(wf), "--no-checkpoint")
    assert done.returncode == 1
    assert "1 prompt-hash keys, none for this prompt" in done.stderr


def test_our_recording_given_as_a_mock_file_points_at_replay(tmp_path: Path) -> None:
    wf = _mock_workflow(tmp_path, {})
    rec = tmp_path / "rec.json"
    rec.write_text(json.dumps({"format": "agentloom-recording", "version": 1,
                               "exchanges": []}))
    done = cli("run", str(wf), "--mock-responses", str(rec), "--no-checkpoint")
    assert done.returncode == 1
    assert "one of our recordings" in done.stderr and "--replay" in done.stderr
    assert "steps in the file: exchanges" not in done.stderr


@needs_examples
def test_example_35_runs_from_the_repo_root_in_their_layout(tmp_path: Path) -> None:
    (tmp_path / "examples").mkdir()
    shutil.copy(EXAMPLES / "35_tool_calling.yaml", tmp_path / "examples")
    shutil.copytree(EXAMPLES / "recordings", tmp_path / "recordings")
    done = cli("run", "examples/35_tool_calling.yaml", "--json", "--no-checkpoint",
               cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "success"


@needs_examples
def test_validate_reports_the_unknown_tools_run_refuses() -> None:
    yaml_file = str(EXAMPLES / "14_custom_tools_decorator.yaml")
    done = cli("validate", yaml_file)
    assert done.returncode == 1
    assert "unknown tool 'query_database'" in done.stderr
    assert ":22: step 'fetch_feedback'" in done.stderr
    ok = cli("validate", "--tools", str(EXAMPLES / "14_custom_tools_decorator.py"), yaml_file)
    assert ok.returncode == 0, ok.stderr


def test_validate_checks_inline_tools_of_a_step(tmp_path: Path) -> None:
    (tmp_path / "wf.yaml").write_text(
        "name: t\nsteps:\n  - id: a\n    type: llm_call\n    prompt: hi\n"
        "    tools: [{name: lookup_order}]\n")
    done = cli("validate", str(tmp_path / "wf.yaml"))
    assert done.returncode == 1
    assert "unknown tool 'lookup_order'" in done.stderr
    (tmp_path / "tools.py").write_text(
        "from agentloom.tools import tool\n\n@tool(name='lookup_order', description='x')\n"
        "def lookup(order_id: str) -> str:\n    return order_id\n")
    ok = cli("validate", "--tools", str(tmp_path / "tools.py"), str(tmp_path / "wf.yaml"))
    assert ok.returncode == 0, ok.stderr


@needs_examples
def test_a_paused_gate_says_it_is_the_one_paused(tmp_path: Path) -> None:
    wf = tmp_path / "gate.yaml"
    text = (EXAMPLES / "29_approval_gate.yaml").read_text().replace(
        "provider: openai", "provider: mock\n  responses_file: mock.json")
    wf.write_text(text)
    (tmp_path / "mock.json").write_text(json.dumps({"draft": "Dear all,"}))
    done = cli("run", str(wf), "--json", "--store", f"sqlite:///{tmp_path / 'runs.db'}")
    assert done.returncode == 3, done.stderr
    steps = json.loads(done.stdout)["steps"]
    assert steps["approve"]["status"] == "paused"
    assert steps["finalise"]["status"] == "pending"
