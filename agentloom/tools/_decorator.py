"""`@tool`: a Python function becomes a `Tool`, its JSON Schema drawn from the signature.

Pydantic builds the schema from the type hints (so Optional, defaults, enums, nested
models and dataclasses come out as any pydantic user expects), and the Google-style
`Args:` section of the docstring gives each parameter its description. The same model
converts the model's JSON arguments back into typed Python values before the call. A sync
function runs in a worker thread, so a slow one never blocks the event loop; a parameter
annotated `ToolContext` receives the call's context and is hidden from the model.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import re
from collections.abc import Callable
from typing import Any, get_type_hints, overload

from agentloom.errors import ConfigError, ToolError
from agentloom.tools._tool import Tool, check_tool_name
from agentloom.tools.contracts import ToolContext

_SECTION = re.compile(
    r"^\s*(Args|Arguments|Parameters|Returns|Return|Raises|Yields|Examples?|Notes?|"
    r"Attributes|See Also|Warnings?)\s*:\s*$"
)
_ARG_LINE = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """The summary text and the `Args:` descriptions of a Google-style docstring."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    summary: list[str] = []
    args: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    arg_indent: int | None = None
    for line in lines:
        header = _SECTION.match(line)
        if header:
            section = header.group(1).lower()
            current, arg_indent = None, None
            continue
        if section is None:
            summary.append(line)
            continue
        if section not in ("args", "arguments", "parameters") or not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        match = _ARG_LINE.match(line.strip())
        if match and (arg_indent is None or indent <= arg_indent):
            arg_indent = indent
            current = match.group(1).lstrip("*")
            args[current] = match.group(2).strip()
        elif current is not None:
            args[current] = f"{args[current]} {line.strip()}".strip()
    return "\n".join(summary).strip(), args


def _strip_titles(schema: Any) -> Any:
    """Pydantic adds a `title` to everything; the model needs none of them."""
    if isinstance(schema, dict):
        out = {}
        for key, value in schema.items():
            if key == "title" and isinstance(value, str):
                continue
            if key in ("properties", "$defs") and isinstance(value, dict):
                out[key] = {k: _strip_titles(v) for k, v in value.items()}
            else:
                out[key] = _strip_titles(value)
        return out
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    return schema


class PythonTool:
    """A Python function as a Tool. Made by `@tool` or `as_tool(fn)`."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        idempotent: bool = False,
        validate_arguments: bool = False,
        timeout: float | None = None,
    ) -> None:
        import pydantic

        if not callable(fn):
            raise ConfigError(f"@tool needs a function, got {type(fn).__name__}")
        if timeout is not None and timeout <= 0:
            raise ConfigError(f"tool timeout must be positive, got {timeout}")
        self.fn = fn
        self.name = check_tool_name(name or str(getattr(fn, "__name__", "")))
        summary, arg_docs = parse_docstring(inspect.getdoc(fn))
        self.description = description if description is not None else summary
        self.idempotent = idempotent
        self.validate_arguments = validate_arguments
        self.timeout = timeout
        self._is_async = inspect.iscoroutinefunction(fn)

        signature = inspect.signature(fn)
        try:
            hints = get_type_hints(fn, include_extras=True)
        except Exception as exc:  # an unresolvable forward reference
            raise ConfigError(f"tool {self.name!r}: cannot read its type hints: {exc}") from exc
        fields: dict[str, Any] = {}
        self._ctx_param: str | None = None
        self._positional: list[str] = []
        self._var_kw = False
        for pname, param in signature.parameters.items():
            annotation = hints.get(pname, Any)
            if annotation is ToolContext:
                self._ctx_param = pname
                continue
            if param.kind is inspect.Parameter.VAR_POSITIONAL:
                raise ConfigError(f"tool {self.name!r}: *{pname} cannot be given by a model")
            if param.kind is inspect.Parameter.VAR_KEYWORD:
                self._var_kw = True
                continue
            if param.kind is inspect.Parameter.POSITIONAL_ONLY:
                self._positional.append(pname)
            default = ... if param.default is inspect.Parameter.empty else param.default
            fields[pname] = (
                annotation,
                pydantic.Field(default=default, description=arg_docs.get(pname)),
            )
        config = pydantic.ConfigDict(
            arbitrary_types_allowed=True, extra="allow" if self._var_kw else "ignore"
        )
        try:
            self._model = pydantic.create_model(
                f"{self.name}_arguments", __config__=config, **fields
            )
            schema = self._model.model_json_schema()
        except Exception as exc:
            raise ConfigError(
                f"tool {self.name!r}: no JSON Schema for its parameters: {exc}"
            ) from exc
        # What `model_validate` runs, without its keyword handling, and the exception
        # it raises: a call's arguments are checked through them (`_bind`).
        self._validate = self._model.__pydantic_validator__.validate_python
        self._invalid = pydantic.ValidationError
        schema = _strip_titles(schema)
        schema.setdefault("properties", {})
        if self._var_kw:
            schema.pop("additionalProperties", None)
        self.parameters: dict[str, Any] = schema
        functools.update_wrapper(self, fn)

    def __repr__(self) -> str:
        return f"<PythonTool {self.name!r}>"

    def _bind(
        self, arguments: dict[str, Any], ctx: ToolContext
    ) -> tuple[list[Any], dict[str, Any]]:
        try:
            model = self._validate(arguments)
        except self._invalid as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or '(arguments)'}: {e['msg']}"
                for e in exc.errors()
            )
            raise ToolError(f"invalid arguments for {self.name}: {problems}") from None
        # A model's fields, in their order, are its instance dict (extras and private
        # attributes are kept elsewhere); `model_fields` is a costly class property.
        values = dict(model.__dict__)
        if self._var_kw and model.model_extra:
            values.update(model.model_extra)
        if self._ctx_param is not None:
            values[self._ctx_param] = ctx
        args = [values.pop(p) for p in self._positional] if self._positional else []
        return args, values

    async def __call__(self, arguments: dict[str, Any], ctx: ToolContext) -> Any:
        args, kwargs = self._bind(arguments, ctx)
        if self._is_async:
            call = self.fn(*args, **kwargs)
        else:
            # A sync tool can't be interrupted: on timeout the thread finishes on its own.
            call = asyncio.to_thread(self.fn, *args, **kwargs)
        if self.timeout is None:
            return await call
        try:
            async with asyncio.timeout(self.timeout):
                return await call
        except TimeoutError:
            raise ToolError(f"tool {self.name} timed out after {self.timeout:g} s") from None


@overload
def tool(fn: Callable[..., Any], /) -> PythonTool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    idempotent: bool = False,
    validate_arguments: bool = False,
    timeout: float | None = None,
) -> Callable[[Callable[..., Any]], PythonTool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    idempotent: bool = False,
    validate_arguments: bool = False,
    timeout: float | None = None,
) -> PythonTool | Callable[[Callable[..., Any]], PythonTool]:
    """Make a function a tool: `@tool`, or `@tool(name=..., description=..., timeout=...)`.

    The decorated object is still callable as the tool (`await t(arguments, ctx)`); the
    original function is `t.fn`.
    """

    def wrap(f: Callable[..., Any]) -> PythonTool:
        return PythonTool(
            f,
            name=name,
            description=description,
            idempotent=idempotent,
            validate_arguments=validate_arguments,
            timeout=timeout,
        )

    if fn is not None:
        return wrap(fn)
    return wrap


def as_tool(obj: Any) -> Any:
    """A Tool as is; a plain function wrapped as `@tool` would."""

    if isinstance(obj, PythonTool):
        return obj
    if isinstance(obj, Tool):
        return obj
    if callable(obj) and (
        inspect.isfunction(obj)
        or inspect.ismethod(obj)
        or inspect.isbuiltin(obj)
        or isinstance(obj, functools.partial)
    ):
        return PythonTool(obj)
    raise ConfigError(
        f"not a tool: {obj!r} (expected a function, an @tool function or a Tool object)"
    )
