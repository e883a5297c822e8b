"""Run the CLI in a child process and measure it: exit code, output, peak memory.

Hostile inputs are judged by what a user would see: the command ends (a generous timeout
is only a safety net), with one clear line, and its peak RSS stays bounded.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

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

        def kill() -> None:
            killed.set()
            os.kill(proc.pid, signal.SIGKILL)

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            # wait4 reports this child's own peak RSS (RUSAGE_CHILDREN would mix in others).
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Child(proc.returncode, out.read().decode(errors="replace"),
                     err.read().decode(errors="replace"), usage.ru_maxrss / 1024,
                     killed.is_set())


def one_line(text: str) -> str:
    """The message of a run that failed cleanly: a single non-empty line, no traceback."""
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    assert "Traceback" not in text, text[-3000:]
    assert len(lines) >= 1, text
    return lines[-1]
