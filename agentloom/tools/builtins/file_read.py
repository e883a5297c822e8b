"""`file_read`: read a text file under the sandbox's readable paths, in a worker thread.

The path is resolved (`~`, `..`, symlinks) before the check, and the resolved path is the
one opened, so a link inside an allowed directory can't lead outside it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from agentloom.errors import ToolError
from agentloom.tools.builtins._base import SandboxedTool, arg, truncate
from agentloom.tools.contracts import ToolContext


class FileReadTool(SandboxedTool):
    name = "file_read"
    description = "Read a text file and return its content."
    parameters = {
        "type": "object",
        "properties": {"path": {"type": "string", "description": "The file to read."}},
        "required": ["path"],
    }
    default_timeout = 10.0

    async def __call__(self, arguments: dict[str, Any], ctx: ToolContext) -> Any:
        path = arg(arguments, "path", str, tool=self.name)
        resolved = self.policy.check_read(path)
        cap = self.policy.max_output_bytes
        try:
            async with asyncio.timeout(self.timeout):
                data = await asyncio.to_thread(_read, resolved, cap + 1)
        except TimeoutError:
            raise ToolError(f"file_read: reading {path!r} timed out") from None
        except FileNotFoundError:
            raise ToolError(f"file_read: no such file: {path!r}") from None
        except IsADirectoryError:
            raise ToolError(f"file_read: {path!r} is a directory") from None
        except PermissionError:
            raise ToolError(f"file_read: permission denied: {path!r}") from None
        return truncate(data, cap)


def _read(path: Path, limit: int) -> bytes:
    with path.open("rb") as f:
        return f.read(limit)
