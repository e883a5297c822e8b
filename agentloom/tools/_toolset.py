"""`ToolSet`: the tools one step may use, and the one place a tool call is run.

The loop hands every call to `ToolSet.call`, which turns each way a call can go wrong
(unknown name, arguments that aren't a JSON object, invalid arguments when the tool asks
for checking, an exception, a timeout, a sandbox refusal) into a result with
`is_error=True` that the model can read and act on. Only cancellation and the control
signals named at construction (a durable run's pause) propagate: nothing a model sends
can crash the run. The model-facing names are made provider-safe here, because OpenAI
and Anthropic refuse the dots of MCP names (`server.tool`).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agentloom import _jsontext
from agentloom.errors import ToolError, kind_of
from agentloom.messages import ToolCallPart, ToolResultPart, ToolSpec
from agentloom.tools._decorator import as_tool
from agentloom.tools._tool import Tool, encode_result
from agentloom.tools.contracts import ToolContext

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(slots=True, frozen=True, kw_only=True)
class DeclaredTool:
    """A tool as a step declares it: a registered name, optionally what the model sees.

    `description`/`parameters` left None take the registered tool's own."""

    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None


def wire_safe(name: str, taken: set[str]) -> str:
    """A name every provider accepts (letters, digits, `_`, `-`, at most 64), unique."""
    safe = _UNSAFE.sub("_", name)[:64]
    candidate, n = safe, 2
    while candidate in taken:
        suffix = f"_{n}"
        candidate, n = safe[: 64 - len(suffix)] + suffix, n + 1
    return candidate


class ToolSet:
    """Implements `agentloom.loop.ToolBox` over a fixed list of tools.

    Args:
        entries: (tool, spec) pairs; the spec is what the model sees (built by
            `ToolRegistry.toolbox`, or from the tool itself).
        timeout: a cap in seconds on every call, on top of the tool's own.
        error_prompt: text appended to every failing tool's result (a profile's tool
            error prompt, spec 004).
        on_tool_end: called after each call with (tool name, seconds, is_error), for
            summaries and metrics.
        control_signals: exception types that are not tool failures and must reach the
            loop (a pause request); BaseExceptions such as cancellation always do.
    """

    def __init__(
        self,
        entries: Sequence[tuple[Tool, ToolSpec]],
        *,
        timeout: float | None = None,
        error_prompt: str | None = None,
        on_tool_end: Callable[[str, float, bool], None] | None = None,
        control_signals: tuple[type[BaseException], ...] = (),
    ) -> None:
        self.timeout = timeout
        self.error_prompt = error_prompt or None
        self.on_tool_end = on_tool_end
        self.control_signals = control_signals
        self._by_name: dict[str, Tool] = {}
        self._wire: dict[str, str] = {}
        specs: list[ToolSpec] = []
        taken: set[str] = set()
        for tool, spec in entries:
            wire = wire_safe(spec.name, taken)
            taken.add(wire)
            self._by_name[spec.name] = tool
            self._by_name.setdefault(wire, tool)
            self._wire[spec.name] = wire
            specs.append(
                ToolSpec(name=wire, description=spec.description, parameters=spec.parameters)
            )
        self._specs = tuple(specs)
        self._registered = {wire: name for name, wire in self._wire.items()}

    @classmethod
    def of(cls, tools: Sequence[Any], **kwargs: Any) -> ToolSet:
        """A ToolSet of tools (or plain functions) as they describe themselves."""

        made = [as_tool(t) for t in tools]
        return cls(
            [
                (t, ToolSpec(name=t.name, description=t.description, parameters=t.parameters))
                for t in made
            ],
            **kwargs,
        )

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        return self._specs

    @property
    def names(self) -> tuple[str, ...]:
        """The registered names, in the order of `specs`."""
        return tuple(self._wire)

    def wire_name(self, name: str) -> str:
        """The name the model sees for a registered name (for a named tool_choice)."""
        return self._wire.get(name, name)

    def registered_name(self, name: str) -> str:
        """The registered name behind a name the model used (its wire-safe form)."""
        return self._registered.get(name, name)

    def get(self, name: str) -> Tool | None:
        return self._by_name.get(name)

    async def call(self, call: ToolCallPart, ctx: ToolContext) -> ToolResultPart:
        start = time.perf_counter()
        tool = self._by_name.get(call.name)
        is_error = True
        try:
            if tool is None:
                content = self._unknown(call.name)
            else:
                content, is_error = await self._run(tool, call, ctx)
        finally:
            if self.on_tool_end is not None:
                self.on_tool_end(
                    tool.name if tool else call.name, time.perf_counter() - start, is_error
                )
        if is_error and self.error_prompt:
            content = f"{content}\n\n{self.error_prompt}"
        return ToolResultPart(call_id=call.id, name=call.name, content=content, is_error=is_error)

    def _unknown(self, name: str) -> str:
        available = ", ".join(s.name for s in self._specs) or "none"
        return f"unknown tool {name!r}; available tools: {available}"

    async def _run(self, tool: Tool, call: ToolCallPart, ctx: ToolContext) -> tuple[str, bool]:
        arguments = parse_arguments(call.arguments)
        if isinstance(arguments, str):
            return arguments, True
        if tool.validate_arguments:
            problem = check_arguments(tool.parameters, arguments)
            if problem:
                return f"invalid arguments for {call.name}: {problem}", True
        try:
            if self.timeout is None:
                value = await tool(arguments, ctx)
            else:
                async with asyncio.timeout(self.timeout):
                    value = await tool(arguments, ctx)
            return encode_result(value), False
        except self.control_signals:
            raise
        except ToolError as exc:
            return str(exc) or type(exc).__name__, True
        except TimeoutError:
            limit = f" after {self.timeout:g} s" if self.timeout is not None else ""
            return f"tool {call.name} timed out{limit}", True
        except Exception as exc:
            message = str(exc)
            return (f"{type(exc).__name__}: {message}" if message else type(exc).__name__), True


def parse_arguments(raw: str | dict[str, Any] | None) -> dict[str, Any] | str:
    """The model's arguments as a dict, or the readable reason they aren't one."""
    if isinstance(raw, dict):
        return raw
    if raw is None or not raw.strip():
        return {}
    try:
        value = _jsontext.loads(raw)
    except json.JSONDecodeError as exc:
        return f"arguments are not valid JSON ({exc.msg} at position {exc.pos}): {raw[:200]!r}"
    except ValueError as exc:
        return f"arguments are not valid JSON ({exc}): {raw[:200]!r}"
    if not isinstance(value, dict):
        return f"arguments must be a JSON object, got {kind_of(value)}: {raw[:200]!r}"
    return value


def check_arguments(schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """Every schema violation, one per line, or None."""
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

    errors = sorted(Draft202012Validator(schema).iter_errors(arguments), key=lambda e: e.path)
    if not errors:
        return None
    return "; ".join(
        f"{'/'.join(str(p) for p in e.absolute_path) or '(arguments)'}: {e.message}" for e in errors
    )
