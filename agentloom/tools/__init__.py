"""Tools the model can call: the protocol, `@tool`, the registry and per-step `ToolSet`,
the sandbox and the built-ins, MCP servers, workflow functions and vendor tools.

Job: the Tool protocol and its seams for the loop (`tools.contracts`), the registry,
built-ins, sandbox, MCP and vendor tools. May import: the layers up to
`structured`/`conversation` (tests/test_layers.py holds the rule).

Every name loads its module on first use (the registry, the sandbox and the built-ins,
MCP, which imports the `mcp` SDK, the loaders, and `@tool`, `ToolSet` too), so a run
whose steps call no tool loads only what it touches (`tools.contracts` for the loop).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentloom._lazy import lazy_getattr

if TYPE_CHECKING:
    from agentloom.tools._decorator import PythonTool as PythonTool
    from agentloom.tools._decorator import as_tool as as_tool
    from agentloom.tools._decorator import tool as tool
    from agentloom.tools._functions import ArgSpec as ArgSpec
    from agentloom.tools._functions import FunctionTool as FunctionTool
    from agentloom.tools._isolation import detect_bwrap as detect_bwrap
    from agentloom.tools._loading import load_entry_point_tools as load_entry_point_tools
    from agentloom.tools._loading import load_tools_from_module as load_tools_from_module
    from agentloom.tools._mcp import MCPServerConfig as MCPServerConfig
    from agentloom.tools._mcp import MCPToolSource as MCPToolSource
    from agentloom.tools._mcp import require_mcp as require_mcp
    from agentloom.tools._registry import ToolRegistry as ToolRegistry
    from agentloom.tools._registry import default_registry as default_registry
    from agentloom.tools._sandbox import SandboxPolicy as SandboxPolicy
    from agentloom.tools._sandbox import SandboxViolation as SandboxViolation
    from agentloom.tools._tool import BaseTool as BaseTool
    from agentloom.tools._tool import Tool as Tool
    from agentloom.tools._tool import check_parameters as check_parameters
    from agentloom.tools._tool import encode_result as encode_result
    from agentloom.tools._toolset import DeclaredTool as DeclaredTool
    from agentloom.tools._toolset import ToolSet as ToolSet
    from agentloom.tools._vendor import normalize_vendor_tools as normalize_vendor_tools
    from agentloom.tools.builtins import builtin_tools as builtin_tools

_LAZY = {
    "PythonTool": "agentloom.tools._decorator",
    "as_tool": "agentloom.tools._decorator",
    "tool": "agentloom.tools._decorator",
    "BaseTool": "agentloom.tools._tool",
    "Tool": "agentloom.tools._tool",
    "check_parameters": "agentloom.tools._tool",
    "encode_result": "agentloom.tools._tool",
    "DeclaredTool": "agentloom.tools._toolset",
    "ToolSet": "agentloom.tools._toolset",
    "ArgSpec": "agentloom.tools._functions",
    "FunctionTool": "agentloom.tools._functions",
    "load_entry_point_tools": "agentloom.tools._loading",
    "load_tools_from_module": "agentloom.tools._loading",
    "MCPServerConfig": "agentloom.tools._mcp",
    "MCPToolSource": "agentloom.tools._mcp",
    "MCPTool": "agentloom.tools._mcp",
    "require_mcp": "agentloom.tools._mcp",
    "detect_bwrap": "agentloom.tools._isolation",
    "normalize_vendor_tools": "agentloom.tools._vendor",
    "builtin_tools": "agentloom.tools.builtins",
    "BUILTIN_NAMES": "agentloom.tools.builtins",
    "ToolRegistry": "agentloom.tools._registry",
    "default_registry": "agentloom.tools._registry",
    "SandboxPolicy": "agentloom.tools._sandbox",
    "SandboxViolation": "agentloom.tools._sandbox",
}


__getattr__ = lazy_getattr(__name__, _LAZY, globals())
