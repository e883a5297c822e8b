"""The built-ins skip the metaschema check at run time (see trust_parameters), so their
schemas are checked here instead."""

from __future__ import annotations

from jsonschema import Draft202012Validator

from agentloom.tools.builtins import builtin_tools


def test_builtin_parameters_are_valid_object_schemas() -> None:
    tools = builtin_tools()
    assert [t.name for t in tools] == ["http_request", "shell_command", "file_read", "file_write"]
    for tool in tools:
        Draft202012Validator.check_schema(tool.parameters)
        assert tool.parameters["type"] == "object"
