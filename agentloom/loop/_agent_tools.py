"""The `tools=[...]` of an Agent: every kind a caller may list, sorted into what runs now
and what must be opened first.

A list may mix `@tool` functions, plain functions (their schema comes from the
signature), `Tool` objects (the built-ins from `agentloom.tools.builtin_tools(...)`,
your own `BaseTool` subclasses), built-ins by name (`"file_read"`, run under the Agent's
`sandbox` policy, which allows nothing unless you say so), and MCP servers (an
`MCPToolSource`, or an `MCPServerConfig` the Agent wraps in one). MCP servers are
processes or connections that live on one event loop, so they are not started here: the
Agent opens them on the loop it runs on (at `with`/`async with`, or on the first run) and
closes them with itself.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentloom.errors import ConfigError
from agentloom.tools import ToolSet, as_tool

if TYPE_CHECKING:
    from agentloom.tools import SandboxPolicy
    from agentloom.tools.contracts import ToolBox
    from agentloom.transport import Transport


@dataclass(slots=True)
class ToolPlan:
    """A caller's tools, sorted. `toolbox` is set when the caller passed a whole ToolBox."""

    tools: list[Any] = field(default_factory=list)
    """Tool objects, ready to run (functions already wrapped)."""
    sources: list[Any] = field(default_factory=list)
    """MCPToolSource objects the Agent must open (and close)."""
    toolbox: ToolBox | None = None
    needs_transport: list[Any] = field(default_factory=list)
    """Built-ins named by the caller that wait for an HTTP transport (http_request)."""

    @property
    def empty(self) -> bool:
        return not (self.tools or self.sources or self.toolbox is not None)

    def build(self, source_tools: Iterable[Any] = ()) -> ToolBox | None:
        """The ToolBox the loop runs: the static tools plus the opened sources' tools."""
        if self.toolbox is not None:
            return self.toolbox
        items = [*self.tools, *source_tools]
        if not items:
            return None

        return ToolSet.of(items)


def plan_tools(tools: ToolBox | Iterable[Any] | None, *,
               sandbox: SandboxPolicy | None = None) -> ToolPlan:
    """Sort `tools`; ConfigError names the first entry that is none of the known kinds."""
    plan = ToolPlan()
    if tools is None:
        return plan
    if hasattr(tools, "specs") and hasattr(tools, "call"):
        plan.toolbox = tools  # type: ignore[assignment]
        return plan

    named: dict[str, Any] | None = None
    for item in tools:
        if isinstance(item, str):
            if named is None:
                named = _builtins_by_name(sandbox)
            tool = named.get(item)
            if tool is None:
                raise ConfigError(
                    f"unknown built-in tool {item!r}; the built-ins are "
                    + ", ".join(sorted(named)) + " (pass other tools as functions or Tool "
                    "objects)")
            plan.tools.append(tool)
            if getattr(tool, "transport", False) is None:
                plan.needs_transport.append(tool)
        elif _is_mcp_source(item):
            plan.sources.append(item)
        elif _is_mcp_config(item):
            from agentloom.tools import MCPToolSource

            plan.sources.append(MCPToolSource([item]))
        else:
            plan.tools.append(as_tool(item))
    return plan


def give_transport(plan: ToolPlan, transport: Transport) -> None:
    """Hand the built-ins that make HTTP requests the transport they will use."""
    for tool in plan.needs_transport:
        tool.transport = transport
    plan.needs_transport.clear()


def _builtins_by_name(sandbox: SandboxPolicy | None) -> dict[str, Any]:
    from agentloom.tools.builtins import builtin_tools

    return {t.name: t for t in builtin_tools(policy=sandbox)}


def _is_mcp_source(item: Any) -> bool:
    # Checked by type name first so that plain tool lists never import the MCP module.
    if type(item).__name__ != "MCPToolSource":
        return False
    from agentloom.tools import MCPToolSource

    return isinstance(item, MCPToolSource)


def _is_mcp_config(item: Any) -> bool:
    if type(item).__name__ != "MCPServerConfig":
        return False
    from agentloom.tools import MCPServerConfig

    return isinstance(item, MCPServerConfig)
