"""What a tool is: a name, a description, a JSON Schema and an async call.

`Tool` is a Protocol so that Python functions, built-ins, MCP tools and workflow functions
are all plain objects the `ToolSet` can run the same way; `BaseTool` gives the optional
attributes their defaults. A tool returns a string (sent as is) or any value, which is
JSON-encoded for the model (pydantic models, dataclasses and dates included).
"""

from __future__ import annotations

import re
from typing import Any, Protocol, runtime_checkable

from agentloom.errors import ConfigError
from agentloom.tools.contracts import ToolContext

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]{0,127}$")


@runtime_checkable
class Tool(Protocol):
    """A callable the model may ask for.

    `idempotent`: a durable run re-runs a call that was in flight at a crash only if
    True. `validate_arguments`: check the model's arguments against `parameters` before
    the call (off by default: spec 000 says arguments aren't checked).
    """

    name: str
    description: str
    parameters: dict[str, Any]
    idempotent: bool
    validate_arguments: bool

    async def __call__(self, arguments: dict[str, Any], ctx: ToolContext) -> Any: ...


class BaseTool:
    """A convenient base: set the class attributes, write `__call__`.

    The public AgentLoom's form works too (the migration path): a subclass that sets
    `parameters_schema` and writes `async def execute(self, **kwargs)` gets that schema
    as `parameters` and is called with the arguments as keywords.
    """

    name: str = ""
    description: str = ""
    parameters: dict[str, Any] = {"type": "object", "properties": {}}
    idempotent: bool = False
    validate_arguments: bool = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        schema = cls.__dict__.get("parameters_schema")
        if isinstance(schema, dict) and "parameters" not in cls.__dict__:
            cls.parameters = schema

    async def __call__(self, arguments: dict[str, Any], ctx: ToolContext) -> Any:
        execute = getattr(self, "execute", None)
        if execute is None:
            raise NotImplementedError(f"{type(self).__name__} defines neither __call__ "
                                      "nor execute(**kwargs)")
        return await execute(**arguments)

    @property
    def parameters_schema(self) -> dict[str, Any]:
        """The public AgentLoom's name for `parameters`."""
        return self.parameters

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


def check_tool_name(name: str) -> str:
    """Names are what the model writes back: keep them plain."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError(
            f"invalid tool name {name!r}: use letters, digits, '_', '-' or '.', "
            "starting with a letter or '_', at most 128 characters"
        )
    return name


_CHECKED: dict[str, None] = {}
"""Schemas (as canonical JSON) that passed the metaschema check: that check costs about
a millisecond, and a step's tool set is built on every run."""


def _schema_key(parameters: dict[str, Any]) -> str | None:
    import json

    try:
        return json.dumps(parameters, sort_keys=True, default=repr)
    except (TypeError, ValueError):
        return None


def trust_parameters(parameters: dict[str, Any]) -> None:
    """Mark a schema that ships with AgentLoom (the built-ins') as checked. Their schemas
    are verified against the metaschema by the test suite, so a run that registers them
    doesn't pay for importing jsonschema (~35 ms of every CLI start)."""
    key = _schema_key(parameters)
    if key is not None:
        _CHECKED[key] = None


def check_parameters(name: str, parameters: Any) -> dict[str, Any]:
    """A tool's parameters must be a JSON Schema of an object (checked with the metaschema)."""
    if not isinstance(parameters, dict):
        raise ConfigError(
            f"tool {name!r}: parameters must be a JSON Schema object, got "
            f"{type(parameters).__name__}"
        )
    key = _schema_key(parameters)
    if key is not None and key in _CHECKED:
        return parameters
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
    from jsonschema.exceptions import SchemaError  # type: ignore[import-untyped]

    try:
        Draft202012Validator.check_schema(parameters)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        raise ConfigError(
            f"tool {name!r}: parameters are not a valid JSON Schema at {where}: {exc.message}"
        ) from None
    if parameters.get("type") != "object":
        raise ConfigError(
            f'tool {name!r}: parameters must describe an object ("type": "object"), '
            f"got type {parameters.get('type')!r}"
        )
    if key is not None:
        if len(_CHECKED) >= 1024:
            _CHECKED.clear()
        _CHECKED[key] = None
    return parameters


def encode_result(value: Any) -> str:
    """A tool's return value as the text the model reads."""
    if isinstance(value, str):
        return value
    import pydantic_core

    return pydantic_core.to_json(value, fallback=repr).decode("utf-8")
