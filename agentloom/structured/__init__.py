"""Structured output: a step's `response_schema`, checked at load, sent in each provider's
form, and its reply parsed and validated with errors the model can fix.

Job: response schemas, validation and re-ask text; pure. May import: types and the
layers up to `recording` (tests/test_layers.py holds the rule).

`ResponseSchemaSpec.from_dict` reads the YAML block; `build_response_format` gives the
request's `ResponseFormat` (OpenAI's strict form when `strict`); `SchemaValidator` is the
loop's `OutputValidator`. The forced-tool mode (spec 004 `outputFormat: structured`) uses
`structured_tool`, `check_forced_tool_support` and `parse_forced_tool_call`.
`plan_output` decides where a schema goes on a request (JSON mode, or the system prompt
when tools are present).
"""

from agentloom.structured._extract import extract_json
from agentloom.structured._plan import (
    OutputPlan,
    final_answer_instruction,
    output_spec,
    plan_output,
    with_system,
)
from agentloom.structured._spec import (
    ResponseSchemaSpec,
    build_response_format,
    check_schema,
    import_model,
    schema_name,
)
from agentloom.structured._strict import to_strict
from agentloom.structured._validate import (
    SchemaValidator,
    check_forced_tool_support,
    lookup_field,
    parse_forced_tool_call,
    structured_tool,
    structured_tool_choice,
    to_plain,
)

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
