"""Hostile files against file_read/file_write: a symlink swapped in while calls run, a
FIFO planted in an allowed directory. Real files, real threads, real subprocesses; the
race tests count escapes (which must be 0), never time anything."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agentloom.errors import ToolError
from agentloom.loop import ToolContext
from agentloom.tools import SandboxPolicy, SandboxViolation
from agentloom.tools._safefs import UnsafePath, read_file, write_file
from agentloom.tools.builtins import FileReadTool, FileWriteTool

CTX = ToolContext()
ROUNDS = 1500
SECRET = "TOP-SECRET-OUTSIDE"


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    allowed.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    return allowed, outside


class Flipper:
    """A thread that keeps swapping a path between a real entry and a symlink out."""

    def __init__(self, flip: Callable[[], None]):
        self.flip, self.flips = flip, 0
        self.started, self.stop = threading.Event(), threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self.stop.is_set():
            self.flip()
            self.flips += 1
            self.started.set()

    def __enter__(self) -> Flipper:
        self.thread.start()
        self.started.wait()  # the race is on before the first call
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


@pytest.fixture
def file_flipper(tree: tuple[Path, Path]) -> Iterator[Flipper]:
    """allowed/f alternates between a regular file and a link to outside/secret.txt,
    each swap one atomic rename."""
    allowed, outside = tree
    target = allowed / "f"
    target.write_text("inside")

    def flip() -> None:
        if target.is_symlink():
            (allowed / ".regular").write_text("inside")
            os.replace(allowed / ".regular", target)
        else:
            (allowed / ".link").unlink(missing_ok=True)
            (allowed / ".link").symlink_to(outside / "secret.txt")
            os.replace(allowed / ".link", target)

    with Flipper(flip) as flipper:
        yield flipper


async def test_a_file_swapped_for_a_symlink_is_never_read_through(
        tree: tuple[Path, Path], file_flipper: Flipper) -> None:
    allowed, _ = tree
    tool = FileReadTool(policy=SandboxPolicy(readable_paths=(str(allowed),)))
    escapes = served = 0
    for _ in range(ROUNDS):
        try:
            text = await tool({"path": str(allowed / "f")}, CTX)
        except ToolError:
            continue  # refused (a link seen at the check or at the open), or mid-swap
        served += 1
        escapes += SECRET in text
    assert escapes == 0
    assert file_flipper.flips > 0


async def test_a_directory_swapped_for_a_symlink_is_never_walked_through(
        tree: tuple[Path, Path]) -> None:
    allowed, outside = tree
    real, d = allowed / ".d_real", allowed / "d"
    d.mkdir()
    (d / "secret.txt").write_text("inside")

    def flip() -> None:  # d: a real directory, then a link to outside, and back
        if d.is_symlink():
            d.unlink()
            os.rename(real, d)
        else:
            os.rename(d, real)
            d.symlink_to(outside)

    tool = FileReadTool(policy=SandboxPolicy(readable_paths=(str(allowed),)))
    escapes = 0
    with Flipper(flip) as flipper:
        for _ in range(ROUNDS):
            try:
                text = await tool({"path": str(d / "secret.txt")}, CTX)
            except ToolError:
                continue
            escapes += SECRET in text
    assert escapes == 0 and flipper.flips > 0


async def test_appends_never_reach_the_file_a_swapped_link_points_to(
        tree: tuple[Path, Path], file_flipper: Flipper) -> None:
    allowed, outside = tree
    tool = FileWriteTool(policy=SandboxPolicy(allowed_paths=(str(allowed),)))
    for _ in range(ROUNDS // 2):
        try:
            await tool({"path": str(allowed / "f"), "content": "X", "append": True}, CTX)
        except ToolError:
            continue
    assert (outside / "secret.txt").read_text() == SECRET


def test_the_window_between_check_and_open_is_closed(tree: tuple[Path, Path]) -> None:
    # The race made deterministic: the path passes the check, then a link replaces it.
    allowed, outside = tree
    (allowed / "sub").mkdir()
    (allowed / "sub" / "f").write_text("inside")
    policy = SandboxPolicy(allowed_paths=(str(allowed),))
    checked = policy.check_read(str(allowed / "sub" / "f"))
    os.replace(allowed / "sub", allowed / "old")
    (allowed / "sub").symlink_to(outside)
    (outside / "f").write_text(SECRET)
    with pytest.raises(UnsafePath):
        read_file(checked, policy.read_roots(), 100)
    with pytest.raises(UnsafePath):
        write_file(checked, policy.write_roots(), b"X", append=True)
    assert (outside / "f").read_text() == SECRET
    # A plain file swapped for a link at the last component: refused the same way.
    (allowed / "sub").unlink()
    os.replace(allowed / "old", allowed / "sub")
    (allowed / "sub" / "f").unlink()
    (allowed / "sub" / "f").symlink_to(outside / "f")
    with pytest.raises(UnsafePath):
        read_file(checked, policy.read_roots(), 100)
    # A replacing write renames over the link: the link goes, its target is untouched.
    write_file(checked, policy.write_roots(), b"new", append=False)
    assert (allowed / "sub" / "f").read_text() == "new"
    assert (outside / "f").read_text() == SECRET


async def test_a_fifo_is_refused_without_blocking(tree: tuple[Path, Path]) -> None:
    allowed, _ = tree
    os.mkfifo(allowed / "pipe")
    policy = SandboxPolicy(allowed_paths=(str(allowed),))
    with pytest.raises(ToolError, match="not a regular file"):
        await FileReadTool(policy=policy)({"path": str(allowed / "pipe")}, CTX)
    with pytest.raises(ToolError, match="not a regular file"):
        await FileWriteTool(policy=policy)(
            {"path": str(allowed / "pipe"), "content": "x", "append": True}, CTX)
    with pytest.raises(ToolError, match="directory"):
        await FileReadTool(policy=policy)({"path": str(allowed)}, CTX)
    # The refusal is a sandbox error only for paths; a FIFO is a plain tool error.
    with pytest.raises(SandboxViolation):
        await FileReadTool(policy=policy)({"path": str(allowed / ".." / "outside")}, CTX)


def _agentloom(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    # The bound is a safety net for a regression (a hang), not a timing assertion.
    return subprocess.run([sys.executable, "-m", "agentloom.cli", *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=120, check=False)


def test_agentloom_run_exits_when_a_tool_meets_a_fifo(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "wf.yaml").write_text("""\
name: fifo
config:
  sandbox: {readable_paths: ["."]}
steps:
  - {id: r, type: tool, tool_name: file_read, tool_args: {path: pipe}}
""")
    done = _agentloom(["run", "wf.yaml"], tmp_path)
    assert done.returncode == 1, done.stderr
    assert "not a regular file" in done.stdout + done.stderr


def test_a_file_call_blocked_past_its_timeout_does_not_hold_the_process(
        tmp_path: Path) -> None:
    # The worst case, forced: a plain blocking open of a FIFO with no writer, in the
    # daemon thread the file tools use, abandoned at a timeout. The process still ends.
    os.mkfifo(tmp_path / "pipe")
    script = f"""
import asyncio
from agentloom.tools._safefs import run_detached

async def main():
    try:
        await asyncio.wait_for(run_detached(open, {str(tmp_path / 'pipe')!r}), 0.2)
    except TimeoutError:
        print("timed out")

asyncio.run(main())
"""
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "timed out"


def test_the_daemon_thread_hands_back_results_and_errors() -> None:
    from agentloom.tools._safefs import run_detached

    async def main() -> tuple[int, str]:
        value = await run_detached(sum, [1, 2, 3])
        try:
            await run_detached(int, "nope")
        except ValueError as exc:
            return value, str(exc)
        return value, ""

    value, error = asyncio.run(main())
    assert value == 6 and "invalid literal" in error
