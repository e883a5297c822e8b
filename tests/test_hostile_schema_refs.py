"""A response schema whose `$ref`s can't be followed is refused when it loads.

Before, `{"$defs": {"x": {"$ref": "#/$defs/x"}}}` under a property passed every check;
the run then made its model call and failed on the reply with a RecursionError (a
`$ref` to nothing: a referencing error), every run, whatever the model said."""

from __future__ import annotations

from typing import Any

import pytest

from agentloom import Agent, ConfigError
from agentloom.structured import ResponseSchemaSpec, SchemaValidator
from agentloom.testing.scripted import ScriptedModel


def obj(a: dict[str, Any], **defs: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"a": a}, "required": ["a"],
            "additionalProperties": False, "$defs": defs}


CYCLES = {
    "itself": (obj({"$ref": "#/$defs/x"}, x={"$ref": "#/$defs/x"}), "#/$defs/x -> #/$defs/x"),
    "through allOf": (obj({"$ref": "#/$defs/x"}, x={"$ref": "#/$defs/y"},
                          y={"allOf": [{"$ref": "#/$defs/x"}]}), "#/$defs/y/allOf/0"),
    "through anyOf": (obj({"$ref": "#/$defs/x"}, x={"anyOf": [{"type": "null"},
                                                             {"$ref": "#/$defs/x"}]}),
                      "#/$defs/x/anyOf/1 -> #/$defs/x"),
    "through not": (obj({"not": {"$ref": "#/properties/a"}}), "#/properties/a/not"),
}


@pytest.mark.parametrize("name", list(CYCLES))
def test_a_ref_cycle_that_reads_no_value_is_refused_before_any_call(name: str) -> None:
    schema, where = CYCLES[name]
    model = ScriptedModel(['{"a": 1}'])
    with pytest.raises(ConfigError) as info:
        Agent(model, model="m", output_schema=schema)
    assert "$ref cycle" in str(info.value) and where in str(info.value)
    assert model.requests == []
    with pytest.raises(ConfigError):
        ResponseSchemaSpec.from_dict({"type": "json_schema", "schema": schema})


def test_a_ref_to_nothing_is_refused() -> None:
    with pytest.raises(ConfigError) as info:
        ResponseSchemaSpec.from_json_schema(obj({"$ref": "#/$defs/missing"}))
    assert "'#/$defs/missing' at #/properties/a points at nothing" in str(info.value)


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#"}}},
     "required": ["kids"], "additionalProperties": False},
    obj({"$ref": "#/$defs/node"}, node={
        "type": "object", "additionalProperties": False, "required": ["next"],
        "properties": {"next": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/node"}]}}}),
    obj({"$ref": "#/$defs/a~1b"}, **{"a/b": {"type": "integer"}}),
])
def test_recursive_schemas_that_read_deeper_still_work(schema: dict[str, Any]) -> None:
    validator = SchemaValidator(ResponseSchemaSpec.from_json_schema(schema))
    if "kids" in schema["properties"]:
        assert validator.validate('{"kids": [{"kids": [{"kids": []}]}]}')
    elif "node" in schema["$defs"]:
        assert validator.validate('{"a": {"next": {"next": null}}}')
    else:
        assert validator.validate('{"a": 3}') == {"a": 3}
