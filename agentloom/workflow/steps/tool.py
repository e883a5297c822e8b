"""The `tool` step: the workflow, not the model, picks a tool and its arguments.

String arguments are templates (`"echo {state.greeting}"`); an argument that is exactly
one reference (`"{state.items}"`), or the public AgentLoom's bare `"state.url"`, passes
the state value itself, typed. The call goes through the same `ToolBox` (registry and
sandbox) as a model's tool calls; a tool's error fails the step.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentloom import _jsontext
from agentloom.errors import ConfigError, TemplateError, ToolError
from agentloom.loop import ToolContext
from agentloom.messages import ToolCallPart
from agentloom.workflow.engine.nested import NESTED_USAGE, sum_usage
from agentloom.workflow.engine.result import StepOutcome
from agentloom.workflow.lang.paths import parse_path
from agentloom.workflow.lang.templates import Ref, Template, compile_template

if TYPE_CHECKING:
    from collections.abc import Iterator

    from agentloom.workflow.engine.context import RunContext
    from agentloom.workflow.load.loader import PrepareContext
    from agentloom.workflow.load.workflow import StepNode
    from agentloom.workflow.schema.other_steps import ToolStep

_LOOKS_LIKE_REF = re.compile(r"\{\s*(state|steps)[.\[]")
_NAME = r"[A-Za-z_][A-Za-z0-9_\-]*"
_BARE_STATE = re.compile(rf"^state\.{_NAME}(\.{_NAME}|\[-?\d+\])*$")


@dataclass(slots=True, frozen=True)
class Prepared:
    args: Any
    """The arguments with every string replaced by a compiled Template."""

    def templates(self) -> Iterator[tuple[tuple[str | int, ...], Template]]:
        yield from _walk(self.args, ("tool_args",))


FieldPath = tuple[str | int, ...]


def _walk(value: Any, at: FieldPath) -> Iterator[tuple[FieldPath, Template]]:
    if isinstance(value, Template):
        yield at, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _walk(v, (*at, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _walk(v, (*at, i))


def prepare(step: ToolStep, pc: PrepareContext) -> Prepared:
    def compile_value(value: Any, at: tuple[str | int, ...]) -> Any:
        if isinstance(value, str):
            if _BARE_STATE.match(value):
                path = parse_path(value)
                return Template((Ref("state", path[1:], value),), value)
            if _LOOKS_LIKE_REF.search(value) is None:
                # JSON bodies and other literal text with braces: the public AgentLoom's
                # files pass them as they are, so a string that is no valid template and
                # names no reference stays literal.
                try:
                    return compile_template(value)
                except TemplateError:
                    return compile_template(value.replace("{", "{{").replace("}", "}}"))
            return pc.template(value, *at)
        if isinstance(value, dict):
            return {k: compile_value(v, (*at, k)) for k, v in value.items()}
        if isinstance(value, list):
            return [compile_value(v, (*at, i)) for i, v in enumerate(value)]
        return value

    return Prepared(args=compile_value(step.tool_args, ("tool_args",)))


def _render(value: Any, ctx: RunContext) -> Any:
    if isinstance(value, Template):
        return value.value(ctx.scope)
    if isinstance(value, dict):
        return {k: _render(v, ctx) for k, v in value.items()}
    if isinstance(value, list):
        return [_render(v, ctx) for v in value]
    return value


async def execute(node: StepNode, ctx: RunContext) -> StepOutcome:
    step: ToolStep = node.step  # type: ignore[assignment]
    if ctx.tools is None:
        raise ConfigError(f"step {node.id!r}: no tool registry is set to run {step.tool_name!r}")
    args = _render(node.prepared.args, ctx)
    box = ctx.tools.toolbox([step.tool_name], policy=ctx.sandbox_policy())
    call = ToolCallPart(id=f"{node.id}-call", name=step.tool_name,
                        arguments=json.dumps(args, ensure_ascii=False, default=str))
    nested: list[Any] = []  # a workflow function's model usage is this step's
    token = NESTED_USAGE.set(nested)
    try:
        result = await box.call(call, ToolContext(run_id=ctx.run_id, step_id=node.id))
    finally:
        NESTED_USAGE.reset(token)
    if result.is_error:
        err = ToolError(f"tool {step.tool_name!r} failed in step {node.id!r}: {result.content}")
        err.usage = sum_usage(nested)  # type: ignore[attr-defined]
        raise err
    return StepOutcome(value=_maybe_json(result.content), text=result.content,
                       usage=sum_usage(nested))


def _maybe_json(text: str) -> Any:
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        try:
            return _jsontext.loads(stripped)
        except ValueError:
            return text
    return text

