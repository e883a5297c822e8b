"""`file_read`: read a text file under the sandbox's readable paths.

The path is resolved (`~`, `..`, symlinks) and checked, then opened beneath its allowed
root one component at a time with no symlink followed (`agentloom.tools._safefs`), so a link
swapped in after the check can't lead outside. Only regular files are read, and a FIFO
is refused without blocking. A hard link is read (one can't be made from inside the
sandbox to an outside file; see `_safefs`). The work runs in a daemon thread under the
tool's timeout.
"""

from __future__ import annotations

from typing import Any

from agentloom.errors import ToolError
from agentloom.tools._safefs import read_file
from agentloom.tools.builtins._base import SandboxedTool, arg, bounded_file_op, truncate
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
        cap = self.policy.max_output_bytes

        def work() -> bytes:
            resolved = self.policy.check_read(path)
            return read_file(resolved, self.policy.read_roots(), cap + 1)

        data = await bounded_file_op(self, "reading", path, work)
        if not isinstance(data, bytes):
            raise ToolError(f"file_read: could not read {path!r}")
        return truncate(data, cap)
