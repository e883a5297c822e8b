"""What the UI tests share: a fake OpenAI server, runs made by the real CLI in a
subprocess, `agentloom ui` itself in a subprocess, and a headless Debian Chromium."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agentloom.testing._server import FakeError, FakeReply
from agentloom.testing.fake_openai import FakeOpenAIServer

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
HOSTILE = ('<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
           '<b onmouseover="alert(1)">bold?</b>')

FLOW = """\
name: fan-out-gate
config: {model: gpt-4o-mini, provider: openai, max_concurrent_steps: 4}
state: {topic: tea}
steps:
  - {id: outline, type: llm_call, prompt: "outline {state.topic}", output: outline}
  - {id: beginners, type: llm_call, depends_on: [outline], prompt: "RETRY beginners",
     output: beginners}
  - {id: experts, type: llm_call, depends_on: [outline], prompt: "experts", output: experts}
  - {id: approve, type: approval_gate, depends_on: [beginners, experts],
     message: "publish both drafts?", output: decision}
  - {id: publish, type: llm_call, depends_on: [approve], prompt: "HOSTILE {state.decision}",
     output: published}
"""

ASK = """\
name: asking
config: {model: gpt-4o-mini, provider: openai}
steps:
  - {id: color, type: ask, question: "which color?", answer_type: choose_one,
     choices: [red, blue], output: color}
  - {id: paint, type: llm_call, depends_on: [color], prompt: "paint it {state.color}",
     output: painted}
"""


class Responder:
    """Replies by prompt: `RETRY` fails every other time with a 500 (so each run's first
    attempt fails and the client's retry succeeds), `BROKEN` is refused (a 400) while
    `broken` is set, `HOSTILE` answers with markup that must show as text."""

    def __init__(self) -> None:
        self.retries = 0
        self.broken = True

    def __call__(self, body: Any) -> Any:
        prompt = str(body["messages"][-1]["content"])
        if "BROKEN" in prompt and self.broken:
            return FakeError(status=400, body={"error": {"message": "not today"}})
        if "RETRY" in prompt:
            self.retries += 1
        if "RETRY" in prompt and self.retries % 2 == 1:
            return FakeError(status=500, body={"error": {"message": "try again"}})
        if "HOSTILE" in prompt:
            return FakeReply(text=HOSTILE)
        return FakeReply(text=f"about {prompt[:24]}")


@contextmanager
def fake_openai(latency: float = 0.15) -> Iterator[FakeOpenAIServer]:
    server = FakeOpenAIServer(responder=Responder(), latency=latency)
    server.start_in_thread()
    try:
        yield server
    finally:
        server.stop_thread()


def cli_env(server: FakeOpenAIServer) -> dict[str, str]:
    env = dict(os.environ)
    env.update(OPENAI_API_KEY="sk-test-secret-key-123456", OPENAI_BASE_URL=server.openai_base_url,
               PYTHONPATH=str(ROOT), AGENTLOOM_RETENTION_DAYS="off")
    return env


def run_cli(env: dict[str, str], cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agentloom.cli", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


ONE = """\
name: one-liner
config: {model: gpt-4o-mini, provider: openai}
steps:
  - {id: say, type: llm_call, prompt: "say {state.topic}", output: said}
"""

RUN_IDS = {"fan-1", "fan-2", "fan-3", "ask-1", "nightly.tea", "nightly.cake"}


def make_runs(env: dict[str, str], home: Path) -> None:
    """The browser tests' store: fan-1 and fan-3 paused at their gate, fan-2 approved and
    finished (a parallel fan-out, a retry, a wait, hostile output), ask-1 asking, and an
    `agentloom batch` of two runs (nightly.tea, nightly.cake)."""
    (home / "flow.yaml").write_text(FLOW)
    (home / "ask.yaml").write_text(ASK)
    (home / "one.yaml").write_text(ONE)
    (home / "inputs.jsonl").write_text('{"id": "tea", "topic": "tea"}\n'
                                       '{"id": "cake", "topic": "cake"}\n')
    done = run_cli(env, home, "batch", "one.yaml", "inputs.jsonl", "--store",
                   ".agentloom/runs.db", "--batch-id", "nightly")
    assert done.returncode == 0, done.stderr
    for run_id in ("fan-1", "fan-2", "fan-3"):
        done = run_cli(env, home, "run", "flow.yaml", "--run-id", run_id)
        assert done.returncode == 3 and "paused" in done.stderr, done.stderr
    done = run_cli(env, home, "resume", "fan-2", "--approve")
    assert done.returncode == 0, done.stderr
    done = run_cli(env, home, "run", "ask.yaml", "--run-id", "ask-1")
    assert done.returncode == 3 and "paused" in done.stderr, done.stderr


class UiProcess:
    def __init__(self, proc: subprocess.Popen[str], url: str) -> None:
        self.proc = proc
        self.url = url

    @property
    def base(self) -> str:
        return self.url.split("?", 1)[0].rstrip("/")


@contextmanager
def ui_process(env: dict[str, str], cwd: Path, *argv: str) -> Iterator[UiProcess]:
    proc = subprocess.Popen([sys.executable, "-m", "agentloom.cli", "ui", "--port", "0", *argv],
                            cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # blocks until it listens, or EOF if it died
        if not first.startswith("agentloom ui: "):
            raise AssertionError(f"agentloom ui did not start: {first!r} "
                                 f"{proc.stderr.read() if proc.stderr else ''}")
        yield UiProcess(proc, first.split(": ", 1)[1].strip())
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def chromium(profile: Path) -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync",
                 "--disable-default-apps", "--disable-extensions",
                 "--window-size=1280,900", f"--user-data-dir={profile}"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
