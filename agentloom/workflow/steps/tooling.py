"""The tools of one run: built-ins, the caller's tools, MCP servers, workflow functions.

`open_run_tools` is entered once per run by the engine (through the step library). It
copies the caller's registry (never changing it), starts the MCP servers the file
declares (once for the run, closed at its end, also on failure or cancellation), adds the
workflow functions,
then checks every tool name the file declares against what is now registered, before
any step runs: a typo fails the run at once with `file:line` and a did-you-mean, not
halfway through. Only the CLI loads `--tools` files and entry points (`base_registry`).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from agentloom import tools as toolkit
from agentloom.errors import ConfigError, WorkflowError
from agentloom.workflow.load.problems import WorkflowProblems
from agentloom.workflow.steps.functions import function_tool

if TYPE_CHECKING:
    from agentloom.tools import SandboxPolicy, ToolRegistry
    from agentloom.workflow.engine.context import ChildRunner, ClientFactory, ToolSource
    from agentloom.workflow.load.workflow import Workflow


def base_registry(
    *,
    transport: Any = None,
    policy: SandboxPolicy | None = None,
    tool_modules: Sequence[str] = (),
    entry_points: bool = False,
    tools: Iterable[Any] = (),
) -> ToolRegistry:
    """The built-ins (with `transport` for http_request), the `@tool` functions of each
    module or `.py` file, the `agentloom.tools` entry points if asked, and `tools`."""
    registry = toolkit.default_registry(transport=transport, policy=policy, tools=tools)
    for module in tool_modules:
        registry.register_all(toolkit.load_tools_from_module(module))
    if entry_points:
        registry.register_all(toolkit.load_entry_point_tools())
    return registry


def needs_tooling(workflow: Workflow) -> bool:
    return bool(workflow.functions or workflow.definition.mcp_servers or workflow.tool_refs)


def extends_tools(workflow: Workflow) -> bool:
    """Whether the run's tools need opening (MCP servers, workflow functions): otherwise
    `plain_run_tools` gives the same source without an async context."""
    return bool(workflow.functions or workflow.definition.mcp_servers)


def plain_run_tools(workflow: Workflow, tools: ToolSource | None,
                    transport: Any = None) -> ToolSource | None:
    """`open_run_tools` for a file without functions and MCP servers: nothing to start or
    close, so no context to enter per run."""
    if not workflow.tool_refs:
        return tools
    if tools is None:
        tools = base_registry(transport=transport)
    elif not isinstance(tools, toolkit.ToolRegistry):
        return tools
    check_tool_refs(workflow, tools)
    return tools


@contextlib.asynccontextmanager
async def open_run_tools(
    workflow: Workflow,
    *,
    tools: ToolSource | None,
    clients: ClientFactory,
    transport: Any = None,
    clock: Any = None,
    runner: ChildRunner,
) -> AsyncIterator[ToolSource | None]:
    """The run's tool source. `tools` None means the built-ins alone (http_request
    through `transport`); a `ToolRegistry` is copied and extended; any other ToolSource
    is used as is, which works only for files without functions and MCP servers."""
    if not needs_tooling(workflow):
        yield tools
        return
    definition = workflow.definition
    extends = bool(workflow.functions or definition.mcp_servers)
    if tools is None:
        registry = base_registry(transport=transport)
    elif isinstance(tools, toolkit.ToolRegistry) and not extends:
        registry = tools  # nothing to add: only the names are checked
    elif isinstance(tools, toolkit.ToolRegistry):
        registry = toolkit.ToolRegistry()
        for name in tools:
            registry.register(tools.get(name), name=name)
    elif extends:
        raise ConfigError(
            f"workflow {workflow.name!r} declares functions or MCP servers, which need a "
            f"ToolRegistry to be added to; got {type(tools).__name__}")
    else:
        yield tools
        return
    async with contextlib.AsyncExitStack() as stack:
        if definition.mcp_servers:
            source = await _start_mcp(workflow)
            stack.push_async_callback(source.aclose)
            registry.register_all(source.tools)
        if workflow.functions:
            for fn in workflow.functions.values():
                registry.register(function_tool(fn, runner=runner, clients=clients,
                                                tools=registry, transport=transport,
                                                clock=clock),
                                  replace=True)
        check_tool_refs(workflow, registry)
        yield registry


async def _start_mcp(workflow: Workflow) -> Any:
    # MCP is an optional extra (the `mcp` SDK): imported only by a file that uses it.
    from agentloom.tools import MCPServerConfig, MCPToolSource

    configs = []
    for name, decl in workflow.definition.mcp_servers.items():
        try:
            configs.append(MCPServerConfig.from_config(
                name, decl.model_dump(exclude_unset=True, exclude_none=True)))
        except ConfigError as exc:
            raise WorkflowError(str(exc), file=workflow.file,
                                field=f"mcp_servers.{name}") from None
    source = MCPToolSource(configs)
    try:
        await source.start()
    except ConfigError as exc:
        raise WorkflowError(str(exc), file=workflow.file, field="mcp_servers") from None
    return source


def check_tool_refs(workflow: Workflow, registry: ToolRegistry) -> None:
    """Every declared tool name must resolve in `registry` (MCP tool names are known only
    once their server runs): all problems at once, as `file:line`."""
    problems: list[WorkflowError] = []
    for ref in workflow.tool_refs:
        try:
            registry.resolve(ref.name)
        except ConfigError as exc:
            where = (f"function {ref.function!r}, step {ref.step_id!r}" if ref.function
                     else f"step {ref.step_id!r}")
            problems.append(WorkflowError(f"{where}, {ref.field}: {exc}", file=workflow.file,
                                          line=ref.line, field=ref.field))
    if problems:
        raise WorkflowProblems(problems)
