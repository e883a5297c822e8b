"""The public AgentLoom's command line on ours: `--checkpoint-dir`, `--lite`, `-b`,
`replay WORKFLOW --recording FILE`, `resume --step`, `history`, `callback-server`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from agentloom.cli.public_flags import translate

EXAMPLES = Path("/work/shared/compat/agentloom-examples")
REPO = Path(__file__).resolve().parents[2]
needs_examples = pytest.mark.skipif(not EXAMPLES.is_dir(), reason="compat examples not present")
ENV = {**os.environ, "PYTHONPATH": str(REPO)}


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agentloom.cli", *args], cwd=cwd, env=ENV,
                          capture_output=True, text=True, timeout=60)


def test_their_flags_translate_to_ours(tmp_path: Path) -> None:
    assert translate(["run", "f.yaml", "-b", "0.5", "--lite", "--checkpoint-dir", "d"]) == [
        "run", "f.yaml", "--budget", "0.5", "--store", str(Path("d") / "runs.db")]
    assert translate(["runs", "--checkpoint-dir=x"]) == ["runs", "--store",
                                                         str(Path("x") / "runs.db")]
    ours = tmp_path / "rec.json"
    ours.write_text(json.dumps({"format": "agentloom-recording", "exchanges": []}))
    assert translate(["replay", "wf.yaml", "--recording", str(ours), "-s", "a=b"]) == [
        "replay", str(ours), "wf.yaml", "-s", "a=b"]
    theirs = tmp_path / "mock.json"
    theirs.write_text(json.dumps({"_version": 2, "ask": {"content": "hi"}}))
    expected = ["run", "wf.yaml", "--mock-responses", str(theirs), "--no-checkpoint"]
    assert translate(["replay", "wf.yaml", "-r", str(theirs), "--observability"]) == expected
    assert translate(["replay", str(theirs), "wf.yaml"]) == expected
    assert translate(["validate", "f.yaml"]) == ["validate", "f.yaml"]


def _gate(tmp: Path) -> Path:
    text = (EXAMPLES / "29_approval_gate.yaml").read_text().replace(
        "provider: openai", "provider: mock\n  responses_file: mock.json")
    (tmp / "gate.yaml").write_text(text)
    (tmp / "mock.json").write_text(json.dumps({"draft": "Dear all,", "finalise": "Polished."}))
    return tmp / "gate.yaml"


def _paused_run(tmp: Path) -> str:
    done = cli("run", str(_gate(tmp)), "--checkpoint", "--checkpoint-dir", "ckpt", "--lite",
               "-s", "topic=launch", cwd=tmp)
    assert done.returncode == 3, done.stderr
    runs = json.loads(cli("runs", "--checkpoint-dir", "ckpt", "--json", cwd=tmp).stdout)
    assert [r["status"] for r in runs] == ["paused"]
    return str(runs[0]["run_id"])


@needs_examples
def test_checkpoint_dir_history_and_resume_step(tmp_path: Path) -> None:
    run_id = _paused_run(tmp_path)
    wrong = cli("resume", run_id, "--step", "draft", "--approve", "--checkpoint-dir", "ckpt",
                cwd=tmp_path)
    assert wrong.returncode == 1
    assert "waits at step 'approve', not 'draft'" in wrong.stderr
    done = cli("resume", run_id, "--step", "approve", "--approve", "-p", "mock", "--lite",
               "--checkpoint-dir", "ckpt", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Polished." in done.stdout
    table = cli("history", "--checkpoint-dir", "ckpt", cwd=tmp_path)
    assert table.returncode == 0, table.stderr
    assert table.stdout.splitlines()[0].split() == [
        "TIMESTAMP", "RUN", "ID", "WORKFLOW", "STATUS", "COST", "USD", "DUR", "MS"]
    records = json.loads(cli("history", "--checkpoint-dir", "ckpt", "--json",
                             "--workflow", "approval-gate-demo", cwd=tmp_path).stdout)
    assert [(r["run_id"], r["status"]) for r in records] == [(run_id, "success")]
    assert records[0]["providers_used"] == ["mock/mock"]
    none = cli("history", "--checkpoint-dir", "ckpt", "--since", "2999-01-01", cwd=tmp_path)
    assert none.stdout.strip() == "No run records found."
    bad = cli("history", "--since", "yesterday", cwd=tmp_path)
    assert bad.returncode == 2 and "YYYY-MM-DD" in bad.stderr


@needs_examples
def test_callback_server_approves_and_resumes_a_paused_run(tmp_path: Path) -> None:
    run_id = _paused_run(tmp_path)
    server = subprocess.Popen(
        [sys.executable, "-m", "agentloom.cli", "callback-server", "--checkpoint-dir", "ckpt",
         "--port", "0", "--token", "s3cret"], cwd=tmp_path, env=ENV, stdout=subprocess.PIPE,
        text=True)
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        base = line.split("listening on ", 1)[1].strip()

        def call(method: str, path: str, token: str | None = "s3cret") -> tuple[int, dict]:
            req = urllib.request.Request(base + path, method=method, data=b"" if method ==
                                         "POST" else None)
            if token:
                req.add_header("Authorization", f"Bearer {token}")
            try:
                with urllib.request.urlopen(req, timeout=60) as resp:
                    return resp.status, json.loads(resp.read())
            except urllib.error.HTTPError as err:
                return err.code, json.loads(err.read())

        assert call("GET", "/pending", token=None)[0] == 401
        status, body = call("GET", "/pending")
        assert status == 200
        assert [(r["run_id"], r["paused_step_id"]) for r in body["paused_runs"]] == [
            (run_id, "approve")]
        status, body = call("POST", f"/approve/{run_id}?wait=1")
        assert (status, body["decision"], body["exit_code"]) == (200, "approved", 0)
        assert call("GET", "/pending")[1] == {"paused_runs": []}
        assert call("POST", f"/reject/{run_id}")[0] == 409
        assert call("POST", "/webhook")[1] == {"status": "received"}
    finally:
        server.terminate()
        server.wait(timeout=30)
    runs = json.loads(cli("runs", "--checkpoint-dir", "ckpt", "--json", cwd=tmp_path).stdout)
    assert runs[0]["status"] == "succeeded"


def test_callback_server_refuses_an_open_bind_without_a_token(tmp_path: Path) -> None:
    done = cli("callback-server", "--host", "0.0.0.0", cwd=tmp_path)
    assert done.returncode == 2 and "--token" in done.stderr


def test_history_passes_over_a_fifo_among_their_run_records(tmp_path: Path) -> None:
    runs = tmp_path / "their-runs"
    runs.mkdir()
    (runs / "a.json").write_text(json.dumps({
        "run_id": "r1", "workflow_name": "theirs", "status": "success",
        "timestamp": "2026-01-02T03:04:05+00:00"}), encoding="utf-8")
    os.mkfifo(runs / "b.json")  # no writer: a plain read would wait for ever
    out = cli("history", "--runs-dir", str(runs), "--json", "--store", "memory://",
              cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert [r["run_id"] for r in json.loads(out.stdout)] == ["r1"]
