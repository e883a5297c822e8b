"""Run the CLI in a child process and measure it: exit code, output, peak memory.

Hostile inputs are judged by what a user would see: the command ends (a generous timeout
is only a safety net), with one clear line, and its peak RSS stays bounded.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

REPO = Path(__file__).resolve().parents[2]
SAFETY_TIMEOUT = 120.0


@dataclass(frozen=True)
class Child:
    returncode: int
    stdout: str
    stderr: str
    peak_rss_mb: float
    killed: bool


def run_cli(args: list[str], cwd: Path, *, env: dict[str, str] | None = None,
            timeout: float = SAFETY_TIMEOUT) -> Child:
    """`python -m agentloom.cli ARGS` in `cwd`; a child still running after `timeout` is
    killed and reported (`killed`), so a hang fails the test instead of the suite."""
    extra = dict(env or {})
    child_env = dict(os.environ)
    # This checkout first (after any directory the test adds), whatever is installed.
    child_env["PYTHONPATH"] = os.pathsep.join(filter(None, [
        extra.pop("PYTHONPATH", None), str(REPO), child_env.get("PYTHONPATH")]))
    child_env.update(extra)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([sys.executable, "-m", "agentloom.cli", *args], cwd=cwd,
                                env=child_env, stdout=out, stderr=err,
                                stdin=subprocess.DEVNULL)
        killed = threading.Event()
        done = threading.Event()
        peak_kb = [0]

        def watch() -> None:
            # The child's own high-water mark. Its rusage can't tell: Linux carries the
            # forking parent's peak (a pytest process grown by other tests) across exec.
            deadline = time.monotonic() + timeout
            while not done.wait(0.01):
                peak_kb[0] = max(peak_kb[0], _vm_hwm_kb(proc.pid))
                if time.monotonic() > deadline:
                    killed.set()
                    os.kill(proc.pid, signal.SIGKILL)
                    return

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            _, status, _usage = os.wait4(proc.pid, 0)
        finally:
            done.set()
            watcher.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Child(proc.returncode, out.read().decode(errors="replace"),
                     err.read().decode(errors="replace"), peak_kb[0] / 1024,
                     killed.is_set())


def _vm_hwm_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass  # exited between two looks: the last one counts
    return 0


def one_line(text: str) -> str:
    """The message of a run that failed cleanly: a single non-empty line, no traceback."""
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    assert "Traceback" not in text, text[-3000:]
    assert len(lines) >= 1, text
    return lines[-1]


class HostileServer:
    """An OpenAI-compatible endpoint on 127.0.0.1 that answers every chat call with
    `handler` (an aiohttp handler), served from a thread so a child process can call it
    while the test waits on the child."""

    def __init__(self, handler: Any) -> None:
        self.handler = handler
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> HostileServer:
        ready = threading.Event()

        def serve() -> None:
            loop = self._loop = asyncio.new_event_loop()
            app = web.Application()
            app.router.add_post("/v1/chat/completions", self.handler)
            self._runner = web.AppRunner(app, handler_cancellation=True)
            loop.run_until_complete(self._runner.setup())
            site = web.TCPSite(self._runner, "127.0.0.1", 0)
            loop.run_until_complete(site.start())
            self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=serve, daemon=True)
        self._thread.start()
        ready.wait(30)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None and self._thread is not None
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(30)


def llm_flow(tmp_path: Path, server: HostileServer, *, provider_extra: str = "",
             stream: bool = False) -> Path:
    """One llm_call step against `server`, the key read from HOSTILE_KEY."""
    path = tmp_path / "flow.yaml"
    path.write_text(
        "name: hostile\n"
        "providers:\n"
        "  hostile:\n"
        "    type: openai\n"
        f"    base_url: {server.base_url}\n"
        "    api_key_env: HOSTILE_KEY\n"
        f"{provider_extra}"
        "config: {provider: hostile, model: gpt-4o-mini}\n"
        "steps:\n"
        "  - id: ask\n"
        "    type: llm_call\n"
        "    prompt: hello\n"
        f"    stream: {'true' if stream else 'false'}\n"
        "    output: answer\n")
    return path
