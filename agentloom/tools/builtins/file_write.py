"""`file_write`: write a text file under the sandbox's writable paths.

The path is resolved and checked (see `file_read`), then written beneath its allowed root
with no symlink followed, missing directories created on the way. A replacing write goes
to a temporary file in the same directory and is renamed into place, so a reader never
sees half a file, and a symlink or hard link at the target is replaced, not written
through; the temporary name is short and fixed in length, so a name of up to 255 bytes
can be written. An append opens the regular file itself: a FIFO, a symlink or a file with
more than one hard link is refused.
"""

from __future__ import annotations

from typing import Any

from agentloom.errors import ToolError
from agentloom.tools._safefs import write_file
from agentloom.tools.builtins._base import SandboxedTool, arg, bounded_file_op
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

        def work() -> None:
            resolved = self.policy.check_write(path)
            write_file(resolved, self.policy.write_roots(), data, append=append)

        await bounded_file_op(self, "writing", path, work)
        return f"wrote {len(data)} bytes to {path}"
