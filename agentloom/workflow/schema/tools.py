"""The workflow file's tool declarations: `functions:` (workflow functions the model can
call, spec 004) and `mcp_servers:` (MCP servers whose tools steps may use).

Kept apart from `_schema.py` so the tool vocabulary lives in one place; the function
body's steps stay raw here because the loader checks them as a small workflow of their
own, with line numbers (see `_functions.py`).
"""


from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from agentloom.workflow.schema.steps import Number, Strict, empty_dict, empty_list

ArgTypeName = Literal["str", "int", "float", "bool", "list", "object"]


class FunctionArg(Strict):
    """One typed argument of a workflow function; the model reads the description."""

    type: ArgTypeName = "str"
    description: str = ""
    required: bool | None = Field(default=None, strict=True)
    """Unset: required unless a default is given."""
    default: Any = None


class FunctionDecl(Strict):
    """A workflow function: the model calls it like any tool, its steps run with the
    arguments in scope as `{args.<name>}`, and its `return` template is the result."""

    description: str = Field(min_length=1)
    args: dict[str, FunctionArg] = Field(default_factory=empty_dict)
    steps: list[dict[str, Any]] = Field(default_factory=empty_list)
    return_: str = Field(alias="return")
    """Rendered after the steps: `{steps.<id>.output}`, `{state.x}`, `{args.x}`."""

    @field_validator("args", mode="before")
    @classmethod
    def _short_args(cls, v: Any) -> Any:
        # `sql: str` is short for `sql: {type: str}`.
        if isinstance(v, dict):
            return {k: {"type": a} if isinstance(a, str) else a for k, a in v.items()}
        return v


class MCPServerDecl(Strict):
    """An MCP server: `command` (+ `args`, `env`, `cwd`) for stdio, or a streamable HTTP
    `url`. Started once per run, closed at its end."""

    command: str | list[str] | None = None
    args: list[str] = Field(default_factory=empty_list)
    env: dict[str, str] | None = None
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] | None = None
    timeout: Number = Field(default=30.0, gt=0, strict=True)
    """Seconds to start and list tools, and the limit of each call."""
    max_output_bytes: int = Field(default=1_000_000, gt=0, strict=True)
    """A call's text result is cut here (UTF-8 bytes), the cut said at its end."""

    @model_validator(mode="after")
    def _one_transport(self) -> "MCPServerDecl":
        if (self.command is None) == (self.url is None):
            raise ValueError("an MCP server needs exactly one of command (stdio) or url")
        return self
