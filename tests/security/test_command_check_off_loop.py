"""shell_command's checks before a run resolve paths (the working directory, the allowed
roots, path-like arguments), and a stat on a hung network mount never returns: they run
in a worker thread, so the event loop goes on serving other runs meanwhile, and a check
stuck past the call's timeout fails the call with nothing run.

The hung mount is simulated by a hook on `os.lstat` (which path resolution calls for
every component) that holds one chosen path until the test lets it go; it records the
thread of every lstat of that path. Real files, real bubblewrap, no timing: the loop is
proved free by a task it runs while the hook is still holding the path."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentloom.errors import ToolError
from agentloom.loop import ToolContext
from agentloom.tools import SandboxPolicy
from agentloom.tools._isolation import detect_bwrap
from agentloom.tools.builtins import ShellCommandTool

CTX = ToolContext()
# Only how long the old, blocking code takes to fail; the fixed code never waits it out.
SAFETY = 15.0


@pytest.fixture(autouse=True)
def _bwrap_works() -> None:
    found = detect_bwrap()
    assert found.available, found.problem


class HungPath:
    """`os.lstat` of one path blocks (the first time) until `release`; every lstat of
    it records the calling thread. `entered` resolves on the loop once one is held."""

    def __init__(self, path: Path, loop: asyncio.AbstractEventLoop) -> None:
        self.path, self.loop = str(path), loop
        self.threads: list[int] = []
        self.entered: asyncio.Future[None] = loop.create_future()
        self.release = threading.Event()
        self.held_until_released: bool | None = None
        self._real: Callable[..., os.stat_result] = os.lstat

    def __call__(self, path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if isinstance(path, str | os.PathLike) and os.fspath(path) == self.path:
            self.threads.append(threading.get_ident())
            if self.held_until_released is None:
                self.held_until_released = False
                self.loop.call_soon_threadsafe(self._enter)
                # On the loop thread the loop can't run the task that releases us, and
                # this wait would run out; in a worker it ends as soon as that task runs.
                self.held_until_released = self.release.wait(SAFETY)
        return self._real(path, *args, **kwargs)

    def _enter(self) -> None:
        if not self.entered.done():
            self.entered.set_result(None)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    (folder / "mnt").mkdir(parents=True)
    (folder / "mnt" / "inside.txt").write_text("inside")
    return folder


@pytest.fixture
def hung(work: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Path], HungPath]]:
    made: list[HungPath] = []

    def make(path: Path) -> HungPath:
        hook = HungPath(path, asyncio.get_running_loop())
        monkeypatch.setattr(os, "lstat", hook)
        made.append(hook)
        return hook

    yield make
    for hook in made:
        hook.release.set()  # never leave a worker waiting


async def _release_once_held(hook: HungPath) -> None:
    await hook.entered  # runs only if the loop is free while the path is held
    hook.release.set()


@pytest.mark.parametrize("where", ["argument", "cwd", "default workdir"])
async def test_the_checks_resolve_paths_off_the_event_loop(
        work: Path, hung: Callable[[Path], HungPath], where: str) -> None:
    mnt = work / "mnt"
    if where == "argument":
        policy, args = SandboxPolicy(allowed_commands=("ls",), allowed_paths=(str(work),)), {
            "command": ["ls", str(mnt)], "cwd": str(work)}
    elif where == "cwd":
        policy, args = SandboxPolicy(allowed_commands=("ls",), allowed_paths=(str(work),)), {
            "command": ["ls"], "cwd": str(mnt)}
    else:  # no cwd: the first allowed directory, found by resolving the roots
        policy, args = SandboxPolicy(allowed_commands=("ls",), allowed_paths=(str(mnt),)), {
            "command": ["ls"]}
    tool = ShellCommandTool(policy=policy, timeout=60)
    hook = hung(mnt)
    releaser = asyncio.create_task(_release_once_held(hook))
    out = await tool(args, CTX)
    await asyncio.wait_for(releaser, SAFETY)
    assert out.split() == ["inside.txt"]  # the same result as ever
    assert hook.held_until_released is True
    assert hook.threads and threading.get_ident() not in hook.threads


async def test_a_check_stuck_on_a_hung_path_fails_the_call_and_runs_nothing(
        work: Path, hung: Callable[[Path], HungPath]) -> None:
    policy = SandboxPolicy(allowed_commands=("touch",), allowed_paths=(str(work),))
    tool = ShellCommandTool(policy=policy, timeout=60)
    hook = hung(work / "mnt")  # held until the test ends: a mount that never answers
    other = asyncio.create_task(asyncio.sleep(0, "other run"))
    with pytest.raises(ToolError, match=r"checking the command's paths took over 0\.5 s"):
        await tool({"command": ["touch", str(work / "mnt" / "ran")], "cwd": str(work),
                    "timeout": 0.5}, CTX)
    assert await other == "other run"
    assert hook.threads and threading.get_ident() not in hook.threads
    hook.release.set()
    assert not (work / "mnt" / "ran").exists()
