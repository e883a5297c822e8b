"""What the four built-ins share: a sandbox policy, a timeout, and output limits."""

from __future__ import annotations

import asyncio
import errno
from collections.abc import Callable
from typing import Any, Self

from agentloom.errors import ToolError
from agentloom.tools._safefs import (
    LinkedFile,
    NotRegularFile,
    OutsideRoots,
    UnsafePath,
    run_detached,
)
from agentloom.tools._sandbox import SandboxPolicy, SandboxViolation
from agentloom.tools._tool import BaseTool


class SandboxedTool(BaseTool):
    """A built-in: runs under `policy`, each call bounded by `timeout` seconds."""

    default_timeout: float = 30.0

    def __init__(self, *, policy: SandboxPolicy | None = None, timeout: float | None = None):
        self.policy = policy or SandboxPolicy()
        self.timeout = timeout if timeout is not None else self.default_timeout
        if self.timeout <= 0:
            raise ValueError(f"{self.name}: timeout must be positive, got {self.timeout}")

    def with_policy(self, policy: SandboxPolicy) -> Self:
        """A copy of this tool under another policy (a step's or workflow's sandbox)."""
        clone = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone.policy = policy
        return clone

    def call_timeout(self, arguments: dict[str, Any]) -> float:
        """The tool's timeout, or the call's own `timeout` argument if smaller."""
        asked = arguments.get("timeout")
        if isinstance(asked, int | float) and not isinstance(asked, bool) and asked > 0:
            return min(float(asked), self.timeout)
        return self.timeout


def arg(
    arguments: dict[str, Any],
    name: str,
    kind: type | tuple[type, ...],
    *,
    required: bool = True,
    default: Any = None,
    tool: str = "",
) -> Any:
    """One argument, type-checked: the built-ins check their own inputs."""
    if name not in arguments or arguments[name] is None:
        if required:
            raise ToolError(f"{tool}: missing required argument {name!r}")
        return default
    value = arguments[name]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind in (int, float)):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise ToolError(f"{tool}: argument {name!r} must be {names}, got {value!r:.200}")
    if isinstance(value, str) and not value.isascii() and not _encodable(value):
        # JSON's "\udc80" decodes to a lone surrogate, which no UTF-8 file, request
        # or command line can carry: refused in words, not as a UnicodeEncodeError.
        raise ToolError(f"{tool}: argument {name!r} holds a lone surrogate (a \\ud800-"
                        "\\udfff escape that pairs with nothing), which is no character")
    return value


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


async def bounded_file_op(tool: SandboxedTool, doing: str, path: str,
                          work: Callable[[], object]) -> object:
    """Run a file tool's blocking `work` (check and open included) in a daemon thread
    under the tool's timeout, with the opener's refusals as ToolErrors."""
    name = tool.name
    try:
        async with asyncio.timeout(tool.timeout):
            return await run_detached(work)
    except TimeoutError:
        raise ToolError(f"{name}: {doing} {path!r} timed out") from None
    except UnsafePath:
        raise SandboxViolation(f"{name}: refused {path!r}: a symlink appeared on the way "
                               "to it (links are not followed while opening)") from None
    except LinkedFile as exc:
        raise SandboxViolation(
            f"{name}: refused {path!r}: the file has {exc.links} hard links, and another "
            "of its names may be outside the allowed paths, so it is not appended to (a "
            "replacing write, which leaves the other names' content alone, is allowed)"
        ) from None
    except OutsideRoots:
        raise SandboxViolation(f"{name}: refused {path!r}: not under an allowed path") from None
    except NotRegularFile as exc:
        what = ("is a directory" if exc.errno == errno.EISDIR
                else "is not a regular file (a FIFO, socket or device)")
        raise ToolError(f"{name}: {path!r} {what}") from None
    except FileNotFoundError:
        raise ToolError(f"{name}: no such file: {path!r}") from None
    except IsADirectoryError:
        raise ToolError(f"{name}: {path!r} is a directory") from None
    except PermissionError:
        raise ToolError(f"{name}: permission denied: {path!r}") from None
    except OSError as exc:  # e.g. the path changed under the check (a swap in progress)
        raise ToolError(f"{name}: {doing} {path!r} failed: {exc.strerror or exc}") from None


def truncate(data: bytes, limit: int) -> str:
    text = data[:limit].decode("utf-8", errors="replace")
    if len(data) > limit:
        text += f"\n[output truncated at {limit} bytes]"
    return text


__all__ = ["SandboxedTool", "arg", "bounded_file_op", "truncate"]
