"""Structured output: a step's `response_schema`, checked at load, sent in each provider's
form, and its reply parsed and validated with errors the model can fix.

Job: response schemas, validation and re-ask text; pure. May import: types and the
layers up to `recording` (tests/test_layers.py holds the rule).

`ResponseSchemaSpec.from_dict` reads the YAML block; `build_response_format` gives the
request's `ResponseFormat` (OpenAI's strict form when `strict`); `SchemaValidator` is the
loop's `OutputValidator`. The forced-tool mode (spec 004 `outputFormat: structured`) uses
`structured_tool`, `check_forced_tool_support` and `parse_forced_tool_call`.
`plan_output` decides where a schema goes on a request (JSON mode, or the system prompt
when tools are present). Each name loads its module on first use: a run whose steps
declare no schema loads none of them.
"""

from typing import TYPE_CHECKING

from agentloom._lazy import lazy_getattr

if TYPE_CHECKING:
    from agentloom.structured._extract import extract_json as extract_json
    from agentloom.structured._plan import OutputPlan as OutputPlan
    from agentloom.structured._plan import final_answer_instruction as final_answer_instruction
    from agentloom.structured._plan import output_spec as output_spec
    from agentloom.structured._plan import plan_output as plan_output
    from agentloom.structured._plan import with_system as with_system
    from agentloom.structured._spec import ResponseSchemaSpec as ResponseSchemaSpec
    from agentloom.structured._spec import build_response_format as build_response_format
    from agentloom.structured._spec import check_schema as check_schema
    from agentloom.structured._spec import import_model as import_model
    from agentloom.structured._spec import schema_name as schema_name
    from agentloom.structured._strict import to_strict as to_strict
    from agentloom.structured._validate import SchemaValidator as SchemaValidator
    from agentloom.structured._validate import (
        check_forced_tool_support as check_forced_tool_support,
    )
    from agentloom.structured._validate import lookup_field as lookup_field
    from agentloom.structured._validate import parse_forced_tool_call as parse_forced_tool_call
    from agentloom.structured._validate import structured_tool as structured_tool
    from agentloom.structured._validate import structured_tool_choice as structured_tool_choice
    from agentloom.structured._validate import to_plain as to_plain

__all__ = [
    "OutputPlan",
    "ResponseSchemaSpec",
    "SchemaValidator",
    "build_response_format",
    "check_forced_tool_support",
    "check_schema",
    "extract_json",
    "final_answer_instruction",
    "import_model",
    "lookup_field",
    "output_spec",
    "parse_forced_tool_call",
    "plan_output",
    "schema_name",
    "structured_tool",
    "structured_tool_choice",
    "to_plain",
    "to_strict",
    "with_system",
]

_LAZY = {
    "extract_json": "agentloom.structured._extract",
    "OutputPlan": "agentloom.structured._plan",
    "final_answer_instruction": "agentloom.structured._plan",
    "output_spec": "agentloom.structured._plan",
    "plan_output": "agentloom.structured._plan",
    "with_system": "agentloom.structured._plan",
    "ResponseSchemaSpec": "agentloom.structured._spec",
    "build_response_format": "agentloom.structured._spec",
    "check_schema": "agentloom.structured._spec",
    "import_model": "agentloom.structured._spec",
    "schema_name": "agentloom.structured._spec",
    "to_strict": "agentloom.structured._strict",
    "SchemaValidator": "agentloom.structured._validate",
    "check_forced_tool_support": "agentloom.structured._validate",
    "lookup_field": "agentloom.structured._validate",
    "parse_forced_tool_call": "agentloom.structured._validate",
    "structured_tool": "agentloom.structured._validate",
    "structured_tool_choice": "agentloom.structured._validate",
    "to_plain": "agentloom.structured._validate",
}

__getattr__ = lazy_getattr(__name__, _LAZY, globals())
