"""SIGKILL a real `agentloom run` at every model call and every tool call of a 6-step
workflow with a tool loop; `agentloom resume` must finish it each time without making
any model call whose reply was stored, or any tool call that had finished, again."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from agentloom.testing._server import FakeReply
from agentloom.testing.fake_openai import FakeOpenAIServer

WORKFLOW = """\
name: six
config: {model: gpt-4o-mini, provider: openai}
steps:
  - {id: s1, type: llm_call, prompt: "first", output: a}
  - {id: s2, type: tool, depends_on: [s1], tool_name: note, tool_args: {label: s2}, output: b}
  - id: s3
    type: llm_call
    depends_on: [s2]
    prompt: "loop after {state.b}"
    tools: [note]
    output: c
  - {id: s4, type: llm_call, depends_on: [s3], prompt: "fourth {state.c}", output: d}
  - {id: s5, type: tool, depends_on: [s4], tool_name: note, tool_args: {label: s5}, output: e}
  - {id: s6, type: llm_call, depends_on: [s5], prompt: "sixth {state.e}", output: f}
"""

TOOLS = '''\
import os, pathlib, threading
from agentloom.tools import tool


@tool(idempotent=True)
def note(label: str) -> str:
    """Append a label to the log."""
    log = os.environ["AL_LOG"]
    if os.environ.get("AL_BLOCK_TOOL") == label:
        pathlib.Path(log + ".blocked").write_text(label)
        threading.Event().wait()  # blocks until the test kills this process
    with open(log, "a") as fh:
        fh.write(label + "\\n")
    return "noted " + label
'''

MODEL_CALLS = 6  # s1, three turns of s3, s4, s6
TOOL_LABELS = ["s2", "loop0", "loop1", "s5"]


class BlockingServer(FakeOpenAIServer):
    """Answers deterministically from the request; request number `block_at` hangs."""

    block_at = 0

    async def record(self, request: Any) -> Any:
        body = await super().record(request)
        if self.block_at and len(self.requests) == self.block_at:
            while self.block_at:  # until the test has killed the client
                await asyncio.sleep(0.01)
        return body


def _reply(body: dict[str, Any]) -> FakeReply:
    msgs = body["messages"]
    if body.get("tools"):
        done = sum(1 for m in msgs if m["role"] == "tool")
        if done < 2:
            return FakeReply(tool_calls=[("note", {"label": f"loop{done}"})])
    last = msgs[-1]["content"]
    return FakeReply(text=f"re {str(last)[:24]}")


def _key(body: Any) -> str:
    return json.dumps(body, sort_keys=True)


def _env(server: Any, log: Path, **extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("OPENAI_", "ANTHROPIC_", "GEMINI_", "GOOGLE_", "AGENTLOOM_"))}
    base.update(OPENAI_API_KEY="test-key", OPENAI_BASE_URL=server.openai_base_url,
                AL_LOG=str(log), **extra)
    return base


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "agentloom.cli", *args]


def _wait(cond: Any, proc: subprocess.Popen[str], what: str) -> None:
    deadline = time.monotonic() + 20
    while not cond():
        if proc.poll() is not None:
            raise AssertionError(f"the run ended before {what}: {proc.stderr.read()}")  # type: ignore[union-attr]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


KILL_POINTS = [("model", n) for n in range(1, MODEL_CALLS + 1)] + [
    ("tool", label) for label in TOOL_LABELS]


def test_kill_at_every_point_then_resume_repeats_nothing(tmp_path: Path) -> None:
    (tmp_path / "six.yaml").write_text(WORKFLOW)
    (tmp_path / "tools.py").write_text(TOOLS)
    # Three kill points at a time (each with its own fake server) keep the test short.
    with ThreadPoolExecutor(3) as pool:
        for done in pool.map(lambda point: _kill_and_resume(tmp_path, *point), KILL_POINTS):
            assert done


def _kill_and_resume(tmp_path: Path, kind: str, where: Any) -> bool:
    server = BlockingServer(responder=_reply)
    server.block_at = where if kind == "model" else 0
    server.start_in_thread()
    try:
        _scenario(server, tmp_path, kind, where)
    finally:
        server.stop_thread()
    return True


def _scenario(server: Any, tmp_path: Path, kind: str, where: Any) -> None:
    work = tmp_path / f"{kind}-{where}"
    work.mkdir()
    log = work / "tools.log"
    extra = {"AL_BLOCK_TOOL": str(where)} if kind == "tool" else {}
    proc = subprocess.Popen(
        _cli("run", str(tmp_path / "six.yaml"), "--tools", str(tmp_path / "tools.py"),
             "--run-id", "r1", "--json"),
        cwd=work, env=_env(server, log, **extra), text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        if kind == "model":
            _wait(lambda: len(server.requests) >= where, proc, f"request {where}")
        else:
            _wait(lambda: Path(str(log) + ".blocked").exists(), proc, f"tool {where}")
        time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    first = [_key(r.json) for r in server.requests]
    answered = first[:-1] if kind == "model" else first
    server.block_at = 0
    server.requests.clear()
    out = subprocess.run(_cli("resume", "r1", "--json"), cwd=work,
                         env=_env(server, log), text=True, capture_output=True, timeout=60)
    assert out.returncode == 0, (kind, where, out.stderr)
    data = json.loads(out.stdout)
    assert data["status"] == "success", (kind, where, data["error"])
    again = [_key(r.json) for r in server.requests]
    # No stored reply was asked for again; together the two processes made each model
    # call once (the one cut off by the kill is the only one sent twice).
    assert not set(again) & set(answered), (kind, where)
    assert len(set(first) | set(again)) == MODEL_CALLS, (kind, where)
    assert len(answered) + len(again) == MODEL_CALLS, (kind, where)
    assert log.read_text().split() == TOOL_LABELS, (kind, where)
    assert data["state"]["f"].startswith("re sixth noted s5"), data["state"]
