"""Structured output: a step's `response_schema`, checked at load, sent in each provider's
form, and its reply parsed and validated with errors the model can fix.

`ResponseSchemaSpec.from_dict` reads the YAML block; `build_response_format` gives the
request's `ResponseFormat` (OpenAI's strict form when `strict`); `SchemaValidator` is the
loop's `OutputValidator`. The forced-tool mode (spec 004 `outputFormat: structured`) uses
`structured_tool`, `check_forced_tool_support` and `parse_forced_tool_call`.
"""

from agentloom.structured._extract import extract_json
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
    "ResponseSchemaSpec",
    "SchemaValidator",
    "build_response_format",
    "check_forced_tool_support",
    "check_schema",
    "extract_json",
    "import_model",
    "lookup_field",
    "parse_forced_tool_call",
    "schema_name",
    "structured_tool",
    "structured_tool_choice",
    "to_plain",
    "to_strict",
]
