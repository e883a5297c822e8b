"""`ToolRegistry`: every tool a run knows, by name; a step picks its `ToolSet` from it.

A step's tool list is what it declares, never more: registering a tool makes it
available, declaring it makes it visible. Problems are found when the step is built (at
load time), not when the model calls: an unknown name (with a did-you-mean), parameters
that aren't a JSON Schema object, more tools than the profile allows.
"""

from __future__ import annotations

import builtins
import difflib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from agentloom.errors import ConfigError
from agentloom.messages import ToolSpec
from agentloom.tools._decorator import as_tool
from agentloom.tools._sandbox import SandboxPolicy
from agentloom.tools._tool import Tool, check_parameters, check_tool_name
from agentloom.tools._toolset import DeclaredTool, ToolSet
from agentloom.tools.builtins import builtin_tools
from agentloom.tools.builtins._base import SandboxedTool
from agentloom.transport import Transport


@dataclass(frozen=True, slots=True)
class ToolInfo:
    name: str
    description: str
    schema: dict[str, Any]


class ToolRegistry:
    """Tools by name. A name `server` with no tool of its own stands for every
    `server.<tool>` (how MCP servers are declared whole)."""

    def __init__(self, tools: Iterable[Any] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self.revision = 0
        """Changes whenever a tool is added, replaced or removed: what was built from the
        registry (a step's tool box) is still right while it holds."""
        for t in tools:
            self.register(t)

    def register(self, obj: Any, *, name: str | None = None, replace: bool = False) -> Tool:
        """Add a Tool or a plain function. A second tool under one name is an error
        unless `replace`."""
        tool: Tool = as_tool(obj)
        key = check_tool_name(name or tool.name)
        check_parameters(key, tool.parameters)
        if key in self._tools and not replace and self._tools[key] is not tool:
            raise ConfigError(f"a tool named {key!r} is already registered")
        self._tools[key] = tool
        self.revision += 1
        return tool

    def register_all(self, tools: Iterable[Any], *, replace: bool = False) -> None:
        for t in tools:
            self.register(t, replace=replace)

    def unregister(self, name: str) -> None:
        if self._tools.pop(name, None) is not None:
            self.revision += 1

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[str]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._tools)

    def resolve(self, name: str) -> list[tuple[str, Tool]]:
        """The tools one declared name stands for; ConfigError with a suggestion if none."""
        if name in self._tools:
            return [(name, self._tools[name])]
        prefix = name + "."
        group = [(n, t) for n, t in self._tools.items() if n.startswith(prefix)]
        if group:
            return group
        known = sorted({*self._tools, *(n.split(".", 1)[0] for n in self._tools if "." in n)})
        close = difflib.get_close_matches(name, known, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        listing = ", ".join(known) if known else "none"
        raise ConfigError(f"unknown tool {name!r}{hint} (registered tools: {listing})")

    def toolbox(
        self,
        declared: Sequence[DeclaredTool | str] | None = None,
        *,
        policy: Any = None,
        max_tools: int | None = None,
        error_prompt: str | None = None,
        timeout: float | None = None,
        on_tool_end: Callable[[str, float, bool], None] | None = None,
        control_signals: tuple[type[BaseException], ...] = (),
    ) -> ToolSet:
        """The ToolSet for one step.

        Args:
            declared: what the step declares; None means every registered tool (the
                Python `Agent`, whose registry holds only its own tools).
            policy: a `SandboxPolicy` for this step: the built-ins run under it instead
                of the one they were made with. None keeps theirs.
            max_tools: the profile's limit on tools per call; above it is a ConfigError.
            error_prompt: appended to every failing tool result.
        """

        entries: list[tuple[Tool, ToolSpec]] = []
        seen: set[str] = set()
        items: Sequence[DeclaredTool | str] = (
            [DeclaredTool(name=n) for n in self._tools] if declared is None else declared
        )
        for item in items:
            d = DeclaredTool(name=item) if isinstance(item, str) else item
            resolved = self.resolve(d.name)
            if len(resolved) > 1 and (d.description is not None or d.parameters is not None):
                raise ConfigError(
                    f"tool {d.name!r} stands for {len(resolved)} tools: it cannot take "
                    "one description or parameters"
                )
            for name, tool in resolved:
                if name in seen:
                    continue
                seen.add(name)
                if policy is not None and isinstance(tool, SandboxedTool):
                    tool = tool.with_policy(policy)
                params = d.parameters if d.parameters is not None else tool.parameters
                check_parameters(name, params)
                description = d.description if d.description is not None else tool.description
                entries.append(
                    (tool, ToolSpec(name=name, description=description, parameters=params))
                )
        if max_tools is not None and len(entries) > max_tools:
            raise ConfigError(
                f"{len(entries)} tools declared, but the profile allows at most {max_tools} "
                f"per call: {', '.join(s.name for _, s in entries)}"
            )
        return ToolSet(
            entries,
            timeout=timeout,
            error_prompt=error_prompt,
            on_tool_end=on_tool_end,
            control_signals=control_signals,
        )

    def list(self) -> builtins.list[ToolInfo]:
        """Name, description and schema of each tool (the public AgentLoom's listing)."""
        return [ToolInfo(n, t.description, t.parameters) for n, t in self._tools.items()]


def default_registry(
    *, transport: Transport | None = None, policy: SandboxPolicy | None = None, tools: Any = ()
) -> ToolRegistry:
    """A registry with the four built-ins (under `policy`) and any extra tools."""
    registry = ToolRegistry(builtin_tools(transport=transport, policy=policy))
    registry.register_all(tools)
    return registry
