"""`file_write`: write a text file under the sandbox's writable paths, in a worker thread.

The path is resolved before the check (see `file_read`). Writes go to a temporary file in
the same directory and are renamed into place, so a reader never sees half a file.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path
from typing import Any

from agentloom.errors import ToolError
from agentloom.tools.builtins._base import SandboxedTool, arg
from agentloom.tools.contracts import ToolContext


class FileWriteTool(SandboxedTool):
    name = "file_write"
    description = "Write text to a file (replacing it, or appending) and report what was written."
    parameters = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "The file to write."},
            "content": {"type": "string", "description": "The text to write."},
            "append": {"type": "boolean", "description": "Append instead of replacing."},
        },
        "required": ["path", "content"],
    }
    default_timeout = 10.0

    async def __call__(self, arguments: dict[str, Any], ctx: ToolContext) -> Any:
        path = arg(arguments, "path", str, tool=self.name)
        content = arg(arguments, "content", str, tool=self.name)
        append = arg(arguments, "append", bool, required=False, default=False, tool=self.name)
        data = content.encode("utf-8")
        if len(data) > self.policy.max_write_bytes:
            raise ToolError(
                f"file_write: {len(data)} bytes is over the sandbox's "
                f"max_write_bytes ({self.policy.max_write_bytes})"
            )
        resolved = self.policy.check_write(path)
        try:
            async with asyncio.timeout(self.timeout):
                await asyncio.to_thread(_write, resolved, data, append)
        except TimeoutError:
            raise ToolError(f"file_write: writing {path!r} timed out") from None
        except IsADirectoryError:
            raise ToolError(f"file_write: {path!r} is a directory") from None
        except PermissionError:
            raise ToolError(f"file_write: permission denied: {path!r}") from None
        return f"wrote {len(data)} bytes to {path}"


def _write(path: Path, data: bytes, append: bool) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if append:
        with path.open("ab") as f:
            f.write(data)
        return
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
