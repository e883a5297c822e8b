"""Where a schema goes on a request: the provider's JSON mode, or the system prompt.

One rule for every caller (the workflow's `agent` and `llm_call` steps, the Python
`Agent`): with no tools, the schema goes in the provider's native form
(`build_response_format`), which also checks at construction that strict mode can
express it. With tools, a native JSON mode (and Anthropic's `{` prefill that comes with
it) would keep the model from calling them, so the schema becomes a system-prompt
sentence instead; either way `SchemaValidator` checks the final reply and the loop
re-asks with its errors. A forced-tool plan (spec 004 `outputFormat: structured`) makes
the schema the one tool the model must call instead.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentloom.errors import ConfigError
from agentloom.messages import Message, ModelRequest, NamedToolChoice, ResponseFormat, ToolSpec
from agentloom.structured._spec import ResponseSchemaSpec, build_response_format, schema_name
from agentloom.structured._validate import (
    SchemaValidator,
    structured_tool,
    structured_tool_choice,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class OutputPlan:
    """What a schema puts on a request, computed once.

    plan = plan_output(ResponseSchemaSpec.from_model(City), "agent", with_tools=False)
    request = plan.apply(request)        # then run_loop(..., validator=plan.validator)
    """

    spec: ResponseSchemaSpec
    validator: SchemaValidator
    response_format: ResponseFormat | None = None
    """Set when the schema goes in the provider's JSON mode (no tools)."""
    instruction: str | None = None
    """Set when the schema goes in the system prompt (tools present)."""
    tool: ToolSpec | None = None
    """Set in forced-tool mode: the schema as the one tool the model must call."""
    tool_choice: NamedToolChoice | None = None
    """The forced call of `tool` (forced-tool mode)."""

    @property
    def forced_tool(self) -> bool:
        return self.tool is not None

    def apply(self, request: ModelRequest) -> ModelRequest:
        if self.tool is not None:
            return request.replace(tools=(self.tool,), tool_choice=self.tool_choice)
        if self.instruction is not None:
            return request.replace(messages=with_system(request.messages, self.instruction))
        return request.replace(response_format=self.response_format)


def plan_output(spec: ResponseSchemaSpec, name: str, *, with_tools: bool,
                forced_tool: bool = False) -> OutputPlan:
    """The plan for `spec`. `name` names the schema when the spec doesn't (a step id, an
    agent's name). Raises ConfigError when strict mode can't express the schema, with or
    without tools, so a schema is refused the same way wherever it is used.
    `forced_tool` asks for the forced-tool mode (whether the model can be forced to call
    a tool is the caller's check: it knows the provider)."""
    if forced_tool:
        return OutputPlan(spec=spec, validator=SchemaValidator(spec),
                          tool=structured_tool(spec, name),
                          tool_choice=structured_tool_choice(spec, name))
    fmt = build_response_format(spec, name)
    validator = SchemaValidator(spec)
    if with_tools:
        return OutputPlan(spec=spec, validator=validator,
                          instruction=final_answer_instruction(spec, name))
    return OutputPlan(spec=spec, validator=validator, response_format=fmt)


def output_spec(schema: Any) -> ResponseSchemaSpec:
    """A spec from what a Python caller passes as an output schema: a pydantic class, a
    JSON Schema (a mapping), or a ResponseSchemaSpec as is."""
    if isinstance(schema, ResponseSchemaSpec):
        return schema
    if isinstance(schema, Mapping):
        return ResponseSchemaSpec.from_json_schema(schema)
    from pydantic import BaseModel

    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return ResponseSchemaSpec.from_model(schema)
    raise ConfigError(
        f"output_schema must be a pydantic model class, a JSON Schema dict or a "
        f"ResponseSchemaSpec, got {schema!r}"
    )


def final_answer_instruction(spec: ResponseSchemaSpec, name: str) -> str:
    """The system-prompt sentence that asks for the schema when tools are present."""
    text = ("Use your tools as you need them. When you give your final answer, reply with "
            "a single JSON object and nothing else")
    if spec.schema is None:
        return text + "."
    shape = json.dumps(spec.schema, ensure_ascii=False, sort_keys=True)
    return text + f", conforming to this JSON Schema ({schema_name(spec, name)}):\n{shape}"


def with_system(messages: tuple[Message, ...], text: str) -> tuple[Message, ...]:
    """`messages` with a system message of `text` after the leading system messages."""
    lead = 0
    while lead < len(messages) and messages[lead].role == "system":
        lead += 1
    return (*messages[:lead], Message.system(text), *messages[lead:])
