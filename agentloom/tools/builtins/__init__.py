"""The four built-in tools: http_request, shell_command, file_read, file_write.

Each runs under a `SandboxPolicy` (safe by default: nothing allowed), never blocks the
event loop, and enforces its own timeout.
"""

from __future__ import annotations

from typing import Any

from agentloom.tools._sandbox import SandboxPolicy
from agentloom.tools._tool import trust_parameters
from agentloom.tools.builtins._base import SandboxedTool as SandboxedTool
from agentloom.tools.builtins.file_read import FileReadTool as FileReadTool
from agentloom.tools.builtins.file_write import FileWriteTool as FileWriteTool
from agentloom.tools.builtins.http_request import HttpRequestTool as HttpRequestTool
from agentloom.tools.builtins.shell_command import ShellCommandTool as ShellCommandTool
from agentloom.transport import Transport

BUILTIN_NAMES = ("http_request", "shell_command", "file_read", "file_write")


def builtin_tools(
    *,
    transport: Transport | None = None,
    policy: SandboxPolicy | None = None,
    timeouts: dict[str, float] | None = None,
) -> list[Any]:
    """The four built-ins under one policy. `timeouts` overrides seconds per tool name."""
    policy = policy or SandboxPolicy()
    t = timeouts or {}
    tools: list[Any] = [
        HttpRequestTool(transport=transport, policy=policy, timeout=t.get("http_request")),
        ShellCommandTool(policy=policy, timeout=t.get("shell_command")),
        FileReadTool(policy=policy, timeout=t.get("file_read")),
        FileWriteTool(policy=policy, timeout=t.get("file_write")),
    ]
    for tool in tools:
        trust_parameters(tool.parameters)
    return tools


def register_builtins(registry: Any, sandbox: SandboxPolicy | None = None) -> None:
    """Register the four built-ins on `registry` (the public AgentLoom's name for it)."""
    registry.register_all(builtin_tools(policy=sandbox))
