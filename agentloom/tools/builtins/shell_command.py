"""`shell_command`: run one allowed program, without a shell, isolated, under a timeout.

A string command is split with `shlex`, so quotes group words but `;`, `|`, `$(...)`,
backticks and redirections are plain characters handed to the program as arguments:
there is no shell to interpret them. The program is one of the sandbox's allowed
commands, run as the absolute executable it resolved to, with a minimal environment
(PATH, HOME, LANG, TMPDIR and `sandbox.env`), under bubblewrap when the policy's
isolation says so (see `agentloom.tools._isolation`). It runs in its own process group;
on timeout the whole group is killed, and bubblewrap's namespace with it. Output is
read as it comes and kept up to `max_output_bytes`; past that the program is stopped
and the output ends with a truncation note, so a flood can't hang or bloat a run. With
the sandbox enabled, a command without `cwd` runs in the first allowed directory, or in
an empty scratch directory, never in the process's own working directory. The checks
before it starts resolve paths, so they run in a daemon thread under the call's timeout:
a path on a hung network mount stops this call, not every other run on the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shlex
import shutil
import signal
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from agentloom.errors import ToolError
from agentloom.tools._isolation import BWRAP_LOCATIONS, bwrap_argv, child_env, detect_bwrap
from agentloom.tools._safefs import run_detached
from agentloom.tools.builtins._base import SandboxedTool, arg, truncate
from agentloom.tools.contracts import ToolContext

T = TypeVar("T")
log = logging.getLogger("agentloom.tools")
_warned: set[int] = set()


class ShellCommandTool(SandboxedTool):
    name = "shell_command"
    description = (
        "Run a program (no shell: pipes, ';' and '$(...)' are not interpreted) and return "
        "its output."
    )
    parameters = {
        "type": "object",
        "properties": {
            "command": {
                "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}],
                "description": "The program and its arguments, as a list or one string.",
            },
            "cwd": {"type": "string", "description": "Working directory."},
            "timeout": {"type": "number", "description": "Seconds before the program is killed."},
        },
        "required": ["command"],
    }
    bwrap_locations: tuple[str, ...] = BWRAP_LOCATIONS
    """Where bubblewrap is looked for (fixed system paths, never $PATH)."""

    async def __call__(self, arguments: dict[str, Any], ctx: ToolContext) -> Any:
        command = arg(arguments, "command", (str, list), tool=self.name)
        if isinstance(command, str):
            try:
                argv = shlex.split(command)
            except ValueError as exc:
                raise ToolError(f"shell_command: cannot split {command!r}: {exc}") from None
        else:
            if not all(isinstance(a, str) for a in command):
                raise ToolError("shell_command: every argument must be a string")
            argv = list(command)
        if any("\x00" in a for a in argv):
            raise ToolError("shell_command: an argument contains a NUL byte, which no "
                            "program can receive")
        cwd = arg(arguments, "cwd", str, required=False, tool=self.name)
        limit = self.call_timeout(arguments)
        resolved_cwd, cwd, executable = await self._off_loop(
            limit, self._check, argv, cwd)
        program, argv = argv[0], [executable, *argv[1:]]
        bwrap = await self._isolation()
        mounts = await self._off_loop(limit, self._mounts, resolved_cwd, cwd,
                                      bwrap is not None)
        scratch = None
        if resolved_cwd is None and self.policy.enabled:
            scratch = await asyncio.to_thread(tempfile.mkdtemp, prefix="agentloom-shell-")
        try:
            run_cwd = str(resolved_cwd) if resolved_cwd is not None else scratch
            env = child_env(run_cwd or "/tmp", self.policy.env, os.environ)
            if bwrap is not None and mounts is not None:  # enabled: run_cwd is set
                readable, writable = mounts
                # bwrap_argv looks at the system directories (/usr, /lib...): a thread too.
                argv = await asyncio.to_thread(
                    bwrap_argv, bwrap, argv, cwd=run_cwd or "/tmp", readable=readable,
                    writable=[*writable, *([Path(scratch)] if scratch is not None else [])],
                    network=self.policy.network_allowed)
            return await self._run(argv, run_cwd, env, limit, program)
        finally:
            if scratch is not None:
                await asyncio.to_thread(shutil.rmtree, scratch, True)

    def _check(self, argv: list[str], cwd: str | None) -> tuple[Path | None, str | None, str]:
        """The word checks, in a worker thread: they resolve paths (the cwd, the roots,
        path-like arguments), and a stat on a hung mount must not stop the event loop.
        (resolved cwd, cwd as used, the absolute executable)."""
        if cwd is None and self.policy.enabled:
            workdir = self.policy.default_workdir()
            cwd = str(workdir) if workdir is not None else None
        resolved_cwd = self.policy.check_command(argv, cwd)
        executable = self.policy.executable(argv[0])
        if executable is None:
            raise ToolError(f"shell_command: program not found: {argv[0]!r}")
        return resolved_cwd, cwd, executable

    def _mounts(self, resolved_cwd: Path | None, cwd: str | None,
                boxed: bool) -> tuple[list[Path], list[Path]] | None:
        """In a worker thread: the working directory must exist; with a box, the
        (readable, writable) paths it mounts, resolved."""
        if resolved_cwd is not None and not resolved_cwd.is_dir():
            raise ToolError(f"shell_command: working directory {cwd!r} does not exist")
        return self.policy.roots() if boxed else None

    async def _off_loop(self, limit: float, fn: Callable[..., T], *args: object) -> T:
        """`fn(*args)` in a daemon thread (`run_detached`), bounded by the call's
        timeout: a stat stuck on a hung mount neither blocks other runs nor holds the
        process at exit, and the call fails in words with nothing run."""
        try:
            async with asyncio.timeout(limit):
                return await run_detached(fn, *args)
        except TimeoutError:
            raise ToolError(f"shell_command: checking the command's paths took over "
                            f"{limit:g} s (a path on a hung mount?); nothing was run"
                            ) from None

    async def _isolation(self) -> str | None:
        """The bwrap executable to run under, None for no isolation; refuses a command
        that needs isolation this machine can't give."""
        mode = self.policy.isolation
        if not self.policy.enabled:
            return None  # `enabled: false` lifts every limit, isolation included
        if mode == "none":
            if id(self.policy) not in _warned:
                _warned.add(id(self.policy))
                log.warning("shell_command runs without OS isolation (sandbox.isolation: "
                            "none): only its words are checked")
            return None
        found = await asyncio.to_thread(detect_bwrap, self.bwrap_locations)
        if not found.available:
            raise ToolError(
                f"shell_command: refused: commands run isolated under bubblewrap, and "
                f"{found.problem}. Install it, or set sandbox.isolation: none to run "
                "commands with word checks only")
        return found.path

    async def _run(self, argv: list[str], cwd: str | None, env: dict[str, str],
                   limit: float, program: str) -> str:
        cap = self.policy.max_output_bytes
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                cwd=cwd,
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
            )
        except FileNotFoundError:
            raise ToolError(f"shell_command: program not found: {program!r}") from None
        except PermissionError:
            raise ToolError(f"shell_command: not executable: {program!r}") from None
        assert proc.stdout is not None and proc.stderr is not None
        flooded = asyncio.Event()
        try:
            async with asyncio.timeout(limit):
                out, err, code = await asyncio.gather(
                    _drain(proc.stdout, cap, flooded, proc),
                    _drain(proc.stderr, cap, flooded, proc),
                    proc.wait(),
                )
        except BaseException as exc:
            _kill_group(proc)
            await proc.wait()
            if isinstance(exc, TimeoutError):
                raise ToolError(
                    f"shell_command: {program} timed out after {limit:g} s and was killed"
                ) from None
            raise
        if flooded.is_set():
            note = f"\n[output truncated at {cap} bytes; the program was stopped]"
            return truncate(out[:cap], cap) + note
        if code != 0:
            detail = truncate(err, 4000).strip() or truncate(out, 4000).strip()
            raise ToolError(
                f"shell_command: {program} exited with status {code}"
                + (f": {detail}" if detail else "")
            )
        return truncate(out, cap)


async def _drain(stream: asyncio.StreamReader, cap: int, flooded: asyncio.Event,
                 proc: asyncio.subprocess.Process) -> bytes:
    """The first cap+1 bytes. Past the cap the program is stopped (its whole group):
    reading on would only burn time, and a stream that always has data ready never lets
    a timeout fire. What is already in the pipe is still read to the end, since the
    process doesn't count as finished before its pipes close."""
    kept = bytearray()
    while chunk := await stream.read(65536):
        if len(kept) <= cap:
            kept += chunk[: cap + 1 - len(kept)]
            if len(kept) > cap and not flooded.is_set():
                flooded.set()
                _kill_group(proc)
        await asyncio.sleep(0)
    return bytes(kept)


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            proc.kill()
        except ProcessLookupError:
            pass
