"""`shell_command`: run one allowed program, without a shell, under a hard timeout.

A string command is split with `shlex`, so quotes group words but `;`, `|`, `$(...)`,
backticks and redirections are plain characters handed to the program as arguments:
there is no shell to interpret them. The program runs in its own process group, and on
timeout the whole group is killed, children included. Output is read as it comes and
cut at the policy's limit, so a chatty program can't fill memory. With the sandbox
enabled, a command without `cwd` runs in the first allowed directory, or in an empty
scratch directory, never in the process's own working directory.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import signal
import tempfile
from typing import Any

from agentloom.errors import ToolError
from agentloom.tools.builtins._base import SandboxedTool, arg, truncate
from agentloom.tools.contracts import ToolContext


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
        cwd = arg(arguments, "cwd", str, required=False, tool=self.name)
        if cwd is None and self.policy.enabled:
            workdir = await asyncio.to_thread(self.policy.default_workdir)
            cwd = str(workdir) if workdir is not None else None
        resolved_cwd = self.policy.check_command(argv, cwd)
        if resolved_cwd is not None and not await asyncio.to_thread(resolved_cwd.is_dir):
            raise ToolError(f"shell_command: working directory {cwd!r} does not exist")
        scratch = None
        if resolved_cwd is None and self.policy.enabled:
            scratch = await asyncio.to_thread(tempfile.mkdtemp, prefix="agentloom-shell-")
        try:
            run_cwd = str(resolved_cwd) if resolved_cwd is not None else scratch
            return await self._run(argv, run_cwd, self.call_timeout(arguments))
        finally:
            if scratch is not None:
                await asyncio.to_thread(shutil.rmtree, scratch, True)

    async def _run(self, argv: list[str], cwd: str | None, limit: float) -> str:
        cap = self.policy.max_output_bytes
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                cwd=cwd,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
            )
        except FileNotFoundError:
            raise ToolError(f"shell_command: program not found: {argv[0]!r}") from None
        except PermissionError:
            raise ToolError(f"shell_command: not executable: {argv[0]!r}") from None
        assert proc.stdout is not None and proc.stderr is not None
        try:
            async with asyncio.timeout(limit):
                out, err, code = await asyncio.gather(
                    _drain(proc.stdout, cap), _drain(proc.stderr, cap), proc.wait()
                )
        except BaseException as exc:
            _kill_group(proc)
            await proc.wait()
            if isinstance(exc, TimeoutError):
                raise ToolError(
                    f"shell_command: {argv[0]} timed out after {limit:g} s and was killed"
                ) from None
            raise
        if code != 0:
            detail = truncate(err, 4000).strip() or truncate(out, 4000).strip()
            raise ToolError(
                f"shell_command: {argv[0]} exited with status {code}"
                + (f": {detail}" if detail else "")
            )
        return truncate(out, cap)


async def _drain(stream: asyncio.StreamReader, cap: int) -> bytes:
    """Keep the first cap+1 bytes; read and drop the rest so the program never blocks."""
    kept = bytearray()
    while chunk := await stream.read(65536):
        if len(kept) <= cap:
            kept += chunk[: cap + 1 - len(kept)]
    return bytes(kept)


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            proc.kill()
        except ProcessLookupError:
            pass
