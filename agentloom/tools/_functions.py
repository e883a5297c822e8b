"""Workflow functions as tools (spec 004): typed args, a body the workflow runs.

A `functions:` entry declares a description and args typed `str`, `int`, `float`,
`bool`, `list` or `object`. Here they become a JSON Schema for the model, and the
model's arguments are checked and coerced to the declared types before the body runs
(a number sent as `"3"` for an `int` is accepted; `"three"` is an error the model reads
and can fix). The body itself (the function's steps) is supplied by the workflow layer.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from agentloom import _jsontext
from agentloom.errors import ConfigError, ToolError
from agentloom.tools._tool import BaseTool, check_tool_name
from agentloom.tools.contracts import ToolContext

ArgType = Literal["str", "int", "float", "bool", "list", "object"]
_JSON_TYPES: dict[str, str] = {
    "str": "string",
    "int": "integer",
    "float": "number",
    "bool": "boolean",
    "list": "array",
    "object": "object",
}
_ALIASES = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "array": "list",
    "dict": "object",
}
_MISSING: Any = object()


@dataclass(slots=True, frozen=True, kw_only=True)
class ArgSpec:
    """One declared argument. Optional when it has a default or `required` is False."""

    type: ArgType = "str"
    description: str = ""
    required: bool = True
    default: Any = _MISSING

    @classmethod
    def from_config(cls, name: str, config: Any) -> ArgSpec:
        """`{type: int, description: ...}` or the type alone (`"int"`)."""
        if isinstance(config, str):
            config = {"type": config}
        if not isinstance(config, Mapping):
            raise ConfigError(f"arg {name!r}: expected a mapping with type and description")
        unknown = set(config) - {"type", "description", "required", "default"}
        if unknown:
            raise ConfigError(f"arg {name!r}: unknown field(s) {', '.join(sorted(unknown))}")
        kind = _ALIASES.get(str(config.get("type", "str")), str(config.get("type", "str")))
        if kind not in _JSON_TYPES:
            raise ConfigError(
                f"arg {name!r}: type must be one of "
                f"{', '.join(_JSON_TYPES)}, got {config.get('type')!r}"
            )
        return cls(
            type=kind,  # type: ignore[arg-type]
            description=str(config.get("description", "")),
            required=bool(config.get("required", "default" not in config)),
            default=config.get("default", _MISSING),
        )

    @property
    def optional(self) -> bool:
        return not self.required or self.default is not _MISSING

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": _JSON_TYPES[self.type]}
        if self.description:
            out["description"] = self.description
        if self.default is not _MISSING:
            out["default"] = self.default
        return out


def args_schema(args: Mapping[str, ArgSpec]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {name: spec.schema() for name, spec in args.items()},
        "required": [name for name, spec in args.items() if not spec.optional],
    }


def coerce(kind: str, value: Any) -> Any:
    """The value as the declared type, or ValueError saying why not."""
    if kind == "str":
        if isinstance(value, str):
            return value
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
    elif kind == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
    elif kind == "int":
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError:
                pass
    elif kind == "float":
        if isinstance(value, int | float) and not isinstance(value, bool):
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError("expected a finite number")
            return float(value)
        if isinstance(value, str):
            try:
                number = float(value.strip())
            except ValueError:
                pass
            else:
                if math.isfinite(number):
                    return number
    elif kind in ("list", "object"):
        want = list if kind == "list" else dict
        if isinstance(value, want):
            return value
        if isinstance(value, str):
            try:
                parsed = _jsontext.loads(value)
            except ValueError:
                parsed = None
            if isinstance(parsed, want):
                return parsed
    raise ValueError(f"expected {_JSON_TYPES[kind]}, got {json.dumps(value)[:100]}")


class FunctionTool(BaseTool):
    """A workflow function the model calls like any tool.

    Args:
        name: the function's name.
        description: what the model reads to decide when to call it.
        args: the declared arguments (ArgSpec, or their YAML form).
        body: runs the function's steps with the coerced arguments and returns its
            `return` value; supplied by the workflow layer.
    """

    def __init__(
        self,
        name: str,
        description: str,
        args: Mapping[str, ArgSpec | Mapping[str, Any] | str],
        body: Callable[[dict[str, Any]], Awaitable[object]],
        *,
        idempotent: bool = False,
    ) -> None:
        self.name = check_tool_name(name)
        if not description:
            raise ConfigError(
                f"function {name!r}: a description is required (the model "
                "reads it to decide when to call the function)"
            )
        self.description = description
        self.args: dict[str, ArgSpec] = {
            k: v if isinstance(v, ArgSpec) else ArgSpec.from_config(k, v) for k, v in args.items()
        }
        self.parameters = args_schema(self.args)
        self.body = body
        self.idempotent = idempotent
        self.validate_arguments = False  # done by coerce_arguments, always

    def coerce_arguments(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The arguments as the declared types; ToolError naming every problem."""
        problems: list[str] = []
        out: dict[str, Any] = {}
        for name, spec in self.args.items():
            if name not in arguments or arguments[name] is None:
                if spec.default is not _MISSING:
                    out[name] = spec.default
                elif spec.required:
                    problems.append(f"{name}: missing (required {_JSON_TYPES[spec.type]})")
                continue
            try:
                out[name] = coerce(spec.type, arguments[name])
            except ValueError as exc:
                problems.append(f"{name}: {exc}")
        extra = sorted(set(arguments) - set(self.args))
        if extra:
            problems.append(
                f"unexpected argument(s) {', '.join(extra)}; "
                f"this function takes {', '.join(self.args) or 'none'}"
            )
        if problems:
            raise ToolError(f"invalid arguments for {self.name}: " + "; ".join(problems))
        return out

    async def __call__(self, arguments: dict[str, Any], ctx: ToolContext) -> Any:
        return await self.body(self.coerce_arguments(arguments))
