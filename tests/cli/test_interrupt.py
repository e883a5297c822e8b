"""Ctrl-C on `agentloom run`: exit 130, the run id and how to resume it on stderr, the run
listed as `interrupted` (not `running` forever), and `agentloom resume` finishes it.
A real subprocess and a loopback server that holds the call until the test has
interrupted, so a slow machine can't let the run finish first."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from agentloom.testing._server import FakeReply
from agentloom.testing.fake_openai import FakeOpenAIServer

FLOW = """\
name: two
config: {model: gpt-4o-mini}
steps:
  - {id: first, type: llm_call, prompt: "one", output: a}
  - {id: second, type: llm_call, depends_on: [first], prompt: "two", output: b}
"""


class HoldSecond(FakeOpenAIServer):
    """Answers the first call; holds every later one until `release()`."""

    def __init__(self) -> None:
        super().__init__(responder=lambda _body: FakeReply(text="ok"))
        self.gate = threading.Event()

    async def record(self, request: Any) -> Any:
        body = await super().record(request)
        if len(self.requests) > 1:
            while not self.gate.is_set():
                await asyncio.sleep(0.01)
        return body

    def release(self) -> None:
        self.gate.set()


def _cli(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agentloom.cli", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=60, check=False)


def test_ctrl_c_saves_the_run_as_interrupted_and_resume_finishes_it(tmp_path: Path) -> None:
    (tmp_path / "flow.yaml").write_text(FLOW, encoding="utf-8")
    server = HoldSecond()
    server.start_in_thread()
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENTLOOM_"))}
        env.update(OPENAI_API_KEY="test-key", OPENAI_BASE_URL=server.openai_base_url)
        proc = subprocess.Popen([sys.executable, "-m", "agentloom.cli", "run", "flow.yaml",
                                 "--run-id", "r1"], env=env, cwd=tmp_path,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while len(server.requests) < 2:  # the second call is in flight, held
            if proc.poll() is not None:  # ended before its second call: say why
                raise AssertionError(f"the run ended early ({proc.returncode}): "
                                     f"{proc.communicate()[1]}")
            assert time.monotonic() < deadline, "the second call never came"
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert "run r1 is saved" in err and "resume with: agentloom resume r1" in err
        runs = json.loads(_cli("runs", "--json", env=env, cwd=tmp_path).stdout)
        assert [(r["run_id"], r["status"]) for r in runs] == [("r1", "interrupted")]

        server.release()
        done = _cli("resume", "r1", env=env, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        runs = json.loads(_cli("runs", "--json", env=env, cwd=tmp_path).stdout)
        assert [(r["run_id"], r["status"]) for r in runs] == [("r1", "succeeded")]
        # The first step's reply was stored: only the second call was made again.
        prompts = [r.json["messages"][-1]["content"] for r in server.requests]
        assert prompts.count("one") == 1
    finally:
        server.release()
        server.stop_thread()
