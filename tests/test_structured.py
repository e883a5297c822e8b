"""Structured output: the response_schema block, strict form, extraction and validation."""

from __future__ import annotations

import json
import sys
import textwrap
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from pydantic import BaseModel

from agentloom.errors import ConfigError
from agentloom.messages import (
    ModelResponse,
    NamedToolChoice,
    TextPart,
    ToolCallPart,
    Usage,
)
from agentloom.providers._base import Capabilities
from agentloom.structured import (
    ResponseSchemaSpec,
    SchemaValidator,
    build_response_format,
    check_forced_tool_support,
    extract_json,
    import_model,
    lookup_field,
    parse_forced_tool_call,
    structured_tool,
    structured_tool_choice,
    to_plain,
    to_strict,
)

EXTRACT_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "date": {"type": "string", "format": "date"}},
    "required": ["name", "date"],
}


class Inner(BaseModel):
    a: int


class Classification(BaseModel):
    """The intent of a message."""

    label: str
    confidence: float = 0.5
    note: str | None = None
    inner: Inner | None = None
    items: list[Inner] = []


def pydantic_spec(**kw: Any) -> ResponseSchemaSpec:
    return ResponseSchemaSpec.from_dict(
        {"type": "pydantic", "model": f"{__name__}:Classification", **kw}
    )


# --- the block ---------------------------------------------------------------------------


def test_default_type_is_json_object() -> None:
    spec = ResponseSchemaSpec.from_dict({})
    assert spec.type == "json_object"
    fmt = build_response_format(spec, "ideas")
    assert (fmt.kind, fmt.schema, fmt.name) == ("json_object", None, "ideas")


def test_json_schema_block_keeps_full_schema_and_names_it_after_step() -> None:
    spec = ResponseSchemaSpec.from_dict({"type": "json_schema", "schema": EXTRACT_SCHEMA})
    assert spec.schema == EXTRACT_SCHEMA
    fmt = build_response_format(spec, "extract.v2")
    assert fmt.kind == "json_schema"
    assert fmt.name == "extract_v2"  # OpenAI's name pattern
    assert fmt.strict is True
    assert fmt.schema is not None and fmt.schema["additionalProperties"] is False


def test_pydantic_block_names_schema_after_class() -> None:
    spec = pydantic_spec()
    assert spec.model_class is Classification
    fmt = build_response_format(spec, "classify")
    assert fmt.name == "Classification"
    assert fmt.description == "The intent of a message."
    assert build_response_format(pydantic_spec(name="intent"), "c").name == "intent"


@pytest.mark.parametrize(
    ("block", "words"),
    [
        ({"type": "xml"}, "expected pydantic, json_schema or json_object"),
        ({"type": "json_schema"}, "needs schema"),
        ({"type": "pydantic"}, "needs model"),
        ({"type": "json_object", "schema": {"type": "object"}}, "takes neither"),
        ({"type": "json_schema", "schema": EXTRACT_SCHEMA, "stric": False}, "'stric'"),
        ({"strict": "yes"}, "true or false"),
        ({"name": "has space"}, "letters, digits"),
        ({"type": "json_schema", "schema": {"type": "array", "items": {}}}, "describe an object"),
    ],
)
def test_bad_blocks_are_config_errors(block: dict[str, Any], words: str) -> None:
    with pytest.raises(ConfigError, match=words.replace("(", r"\(")):
        ResponseSchemaSpec.from_dict(block)


def test_invalid_json_schema_is_refused_with_its_path() -> None:
    bad = {"type": "object", "properties": {"n": {"type": "integr"}}}
    with pytest.raises(ConfigError) as info:
        ResponseSchemaSpec.from_dict({"type": "json_schema", "schema": bad})
    assert "not valid JSON Schema" in str(info.value)
    assert "properties.n.type" in str(info.value)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": True},
        {
            "type": "object",
            "properties": {
                "deep": {
                    "type": "array",
                    "items": {"type": "object", "properties": {}, "additionalProperties": True},
                }
            },
        },
        {
            "type": "object",
            "properties": {"x": {"$ref": "#/$defs/X"}},
            "$defs": {"X": {"type": "object", "additionalProperties": {}}},
        },
        {
            "type": "object",
            "properties": {"x": {"anyOf": [{"type": "object", "additionalProperties": True}]}},
        },
    ],
)
def test_additional_properties_true_is_refused_at_any_depth(schema: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="additionalProperties: true is not allowed"):
        ResponseSchemaSpec.from_dict({"type": "json_schema", "schema": schema})


def test_a_property_named_additional_properties_is_not_the_keyword() -> None:
    schema = {
        "type": "object",
        "properties": {"additionalProperties": {"type": "boolean"}},
        "required": ["additionalProperties"],
    }
    spec = ResponseSchemaSpec.from_dict({"type": "json_schema", "schema": schema})
    assert SchemaValidator(spec).validate('{"additionalProperties": true}') == {
        "additionalProperties": True
    }


def test_pydantic_open_dict_field_is_refused() -> None:
    class Open(BaseModel):
        meta: dict[str, Any]

    sys.modules[__name__].Open = Open  # type: ignore[attr-defined]
    try:
        with pytest.raises(ConfigError, match=r"at \$\.properties\.meta"):
            ResponseSchemaSpec.from_dict({"type": "pydantic", "model": f"{__name__}.Open"})
    finally:
        del sys.modules[__name__].Open  # type: ignore[attr-defined]


# --- importing a model from the run directory --------------------------------------------


def test_pydantic_path_imports_from_the_run_directory(tmp_path: Path) -> None:
    pkg = tmp_path / "my_schemas_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "models.py").write_text(
        textwrap.dedent(
            """
            from pydantic import BaseModel

            class Ticket(BaseModel):
                title: str
                priority: int
            """
        )
    )
    before = list(sys.path)
    try:
        for path in ("my_schemas_pkg.models.Ticket", "my_schemas_pkg.models:Ticket"):
            spec = ResponseSchemaSpec.from_dict(
                {"type": "pydantic", "model": path}, base_dir=tmp_path
            )
            assert spec.model_class is not None and spec.model_class.__name__ == "Ticket"
            value = SchemaValidator(spec).validate('{"title": "x", "priority": 2}')
            assert value.priority == 2
        assert sys.path == before  # the run directory was only on sys.path for the import
    finally:
        for name in [m for m in sys.modules if m.startswith("my_schemas_pkg")]:
            del sys.modules[name]


def test_import_failures_name_the_path_and_cause(tmp_path: Path) -> None:
    (tmp_path / "broken_schemas_mod.py").write_text("import does_not_exist_anywhere\n")
    (tmp_path / "plain_schemas_mod.py").write_text("Ticket = 3\n")
    try:
        with pytest.raises(ConfigError) as info:
            import_model("broken_schemas_mod.Ticket", tmp_path)
        msg = str(info.value)
        assert "'broken_schemas_mod.Ticket'" in msg and "does_not_exist_anywhere" in msg
        assert "ModuleNotFoundError" in msg
        with pytest.raises(ConfigError, match="has no 'Nope'"):
            import_model("plain_schemas_mod.Nope", tmp_path)
        with pytest.raises(ConfigError, match="not a pydantic BaseModel"):
            import_model("plain_schemas_mod.Ticket", tmp_path)
        with pytest.raises(ConfigError, match="not a dotted path"):
            import_model("Ticket", tmp_path)
        with pytest.raises(ConfigError, match="could not be imported"):
            import_model("no_such_module_here.Ticket", tmp_path)
    finally:
        for name in ("broken_schemas_mod", "plain_schemas_mod"):
            sys.modules.pop(name, None)


# --- strict form -------------------------------------------------------------------------


def test_strict_form_of_a_pydantic_model() -> None:
    strict = to_strict(Classification.model_json_schema())
    Draft202012Validator.check_schema(strict)
    assert strict["required"] == ["label", "confidence", "note", "inner", "items"]
    assert strict["additionalProperties"] is False
    assert strict["$defs"]["Inner"]["additionalProperties"] is False
    assert strict["properties"]["confidence"]["type"] == ["number", "null"]
    assert {"type": "null"} in strict["properties"]["note"]["anyOf"]
    assert "default" not in json.dumps(strict)
    # the original is untouched
    assert "default" in json.dumps(Classification.model_json_schema())


def test_strict_form_renames_definitions_and_moves_unsupported_keywords() -> None:
    schema = {
        "type": "object",
        "properties": {
            "tag": {"$ref": "#/definitions/Tag"},
            "code": {"type": "string", "minLength": 3, "description": "A code."},
        },
        "required": ["tag", "code"],
        "definitions": {"Tag": {"type": "object", "properties": {"v": {"type": "string"}}}},
    }
    strict = to_strict(schema)
    assert strict["properties"]["tag"] == {"$ref": "#/$defs/Tag"}
    assert strict["$defs"]["Tag"]["required"] == ["v"]
    assert "minLength" not in strict["properties"]["code"]
    assert strict["properties"]["code"]["description"] == "A code. (minLength=3)"


@pytest.mark.parametrize(
    ("schema", "words"),
    [
        ({"type": "object", "properties": {"m": {"type": "object"}}}, "without properties"),
        (
            {
                "type": "object",
                "properties": {
                    "m": {"type": "object", "additionalProperties": {"type": "integer"}}
                },
            },
            "map with free keys",
        ),
    ],
)
def test_strict_refuses_what_it_cannot_express(schema: dict[str, Any], words: str) -> None:
    spec = ResponseSchemaSpec.from_dict({"type": "json_schema", "schema": schema})
    with pytest.raises(ConfigError, match=words):
        build_response_format(spec, "s")
    relaxed = ResponseSchemaSpec.from_dict(
        {"type": "json_schema", "schema": schema, "strict": False}
    )
    assert build_response_format(relaxed, "s").schema == schema


def test_strict_null_for_an_optional_field_means_absent() -> None:
    value = SchemaValidator(pydantic_spec()).validate(
        '{"label": "refund", "confidence": null, "note": null, "inner": null, "items": null}'
    )
    assert isinstance(value, Classification)
    assert (value.confidence, value.note, value.items) == (0.5, None, [])


# --- reading JSON out of a reply ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ("  [1, 2]  ", [1, 2]),
        ('Sure!\n```json\n{"a": 2}\n```\nHope it helps.', {"a": 2}),
        ('```\n{"a": 3}\n```', {"a": 3}),
        ('```python\nx = {"no": 1}\n```\n```json\n{"a": 4}\n```', {"a": 4}),
        (
            'Result: {"a": "has } and { inside", "b": {"c": "\\"}"}} done',
            {"a": "has } and { inside", "b": {"c": '"}'}},
        ),
        ('see {not json} then {"a": 5}', {"a": 5}),
    ],
)
def test_extract_json(text: str, expected: Any) -> None:
    assert extract_json(text) == expected


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "empty"),
        ("no json here at all", "holds no JSON object"),
        ('{"a": 1,', "no valid JSON"),
        ('here: {"a": tru}', "no valid JSON"),
    ],
)
def test_extract_json_explains_failure(text: str, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        extract_json(text)


# --- validation errors the model can act on ----------------------------------------------


def test_json_schema_errors_are_short_and_located() -> None:
    spec = ResponseSchemaSpec.from_dict({"type": "json_schema", "schema": EXTRACT_SCHEMA})
    validator = SchemaValidator(spec)
    assert validator.validate('{"name": "Ada", "date": "2026-05-01"}') == {
        "name": "Ada",
        "date": "2026-05-01",
    }
    with pytest.raises(ValueError) as info:
        validator.validate('{"name": 7, "date": "2026-13-45"}')
    msg = str(info.value)
    assert "$.name: 7 is not of type 'string'" in msg
    assert "$.date:" in msg and "date" in msg  # the format is checked too
    with pytest.raises(ValueError, match="'date' is a required property"):
        validator.validate('{"name": "Ada"}')


def test_json_schema_validates_against_the_full_schema_not_the_strict_form() -> None:
    schema = {
        "type": "object",
        "properties": {"code": {"type": "string", "minLength": 3}},
        "required": ["code"],
    }
    spec = ResponseSchemaSpec.from_dict({"type": "json_schema", "schema": schema})
    sent = build_response_format(spec, "s").schema
    assert sent is not None and "minLength" not in sent["properties"]["code"]
    with pytest.raises(ValueError, match="too short"):
        SchemaValidator(spec).validate('{"code": "ab"}')


def test_long_values_and_many_errors_are_cut() -> None:
    schema = {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(9)}}
    spec = ResponseSchemaSpec.from_dict({"type": "json_schema", "schema": schema})
    reply = json.dumps({f"p{i}": "x" * 5000 for i in range(9)})
    with pytest.raises(ValueError) as info:
        SchemaValidator(spec).validate(reply)
    msg = str(info.value)
    assert len(msg) < 1500
    assert "... and 4 more" in msg


def test_pydantic_errors_are_readable() -> None:
    with pytest.raises(ValueError) as info:
        SchemaValidator(pydantic_spec()).validate(
            'Here you go: {"confidence": "high", "items": [{"a": "x"}]}'
        )
    msg = str(info.value)
    assert "$.label: Field required" in msg
    assert "$.confidence:" in msg
    assert "$.items[0].a:" in msg
    assert "pydantic" not in msg.lower()  # no links to the pydantic docs


def test_json_object_needs_an_object() -> None:
    validator = SchemaValidator(ResponseSchemaSpec.from_dict({"type": "json_object"}))
    assert validator.validate('```json\n{"names": ["a"]}\n```') == {"names": ["a"]}
    with pytest.raises(ValueError, match="expected a JSON object, got an array"):
        validator.validate("[1, 2]")


# --- forced tool call --------------------------------------------------------------------


def _response(*parts: Any) -> ModelResponse:
    return ModelResponse(
        parts=parts, usage=Usage(), finish_reason="tool_calls", model="m", provider="p"
    )


def test_forced_tool_mode_round_trip() -> None:
    spec = ResponseSchemaSpec.from_dict(
        {"type": "json_schema", "schema": EXTRACT_SCHEMA, "name": "record"}
    )
    tool = structured_tool(spec, "extract")
    assert tool.name == "record" and tool.parameters == EXTRACT_SCHEMA
    assert structured_tool_choice(spec, "extract") == NamedToolChoice(name="record")
    reply = _response(
        ToolCallPart(id="c1", name="record", arguments='{"name": "Ada", "date": "2026-05-01"}')
    )
    args = parse_forced_tool_call(reply, expected="record")
    assert args == {"name": "Ada", "date": "2026-05-01"}
    assert parse_forced_tool_call(reply, keyed=True) == {"record": args}
    assert SchemaValidator(spec).validate_value(args) == args


@pytest.mark.parametrize(
    ("parts", "words"),
    [
        ((TextPart(text="I think it is Ada"),), "answered with text"),
        ((ToolCallPart(id="c", name="other", arguments="{}"),), "you called `other`"),
        ((ToolCallPart(id="c", name="record", arguments='{"a": '),), "not valid JSON"),
        ((ToolCallPart(id="c", name="record", arguments="[1]"),), "must be a JSON object"),
    ],
)
def test_forced_tool_call_problems_are_reask_messages(parts: tuple[Any, ...], words: str) -> None:
    with pytest.raises(ValueError, match=words):
        parse_forced_tool_call(_response(*parts), expected="record")


def test_forced_tool_support_is_checked_up_front() -> None:
    check_forced_tool_support(Capabilities())
    with pytest.raises(ConfigError, match=r"provider 'ollama' model 'llama3'.*can't force"):
        check_forced_tool_support(
            Capabilities(forced_tool_choice=False), provider="ollama", model="llama3"
        )
    with pytest.raises(ConfigError, match="takes no tools"):
        check_forced_tool_support(Capabilities(tools=False))


# --- plain values and field lookup -------------------------------------------------------


def test_to_plain_and_lookup_field_treat_instances_and_dicts_alike() -> None:
    value = Classification(label="refund", inner=Inner(a=1), items=[Inner(a=2)])
    plain = to_plain({"c": value, "t": (Decimal("1.5"),)})
    assert plain["c"] == {
        "label": "refund",
        "confidence": 0.5,
        "note": None,
        "inner": {"a": 1},
        "items": [{"a": 2}],
    }
    assert isinstance(plain["t"], list)
    json.dumps(plain["c"])
    for v in (value, plain["c"]):
        assert lookup_field(v, "label") == "refund"
        assert lookup_field(lookup_field(v, "inner"), "a") == 1
        assert lookup_field(lookup_field(lookup_field(v, "items"), "0"), "a") == 2
        with pytest.raises(KeyError):
            lookup_field(v, "missing")
    for private in ("model_dump", "__class__", "_abc"):
        with pytest.raises(KeyError):
            lookup_field(value, private)
    with pytest.raises(KeyError):
        lookup_field([1], "5")


def test_reply_continuing_a_prefilled_brace_is_read() -> None:
    spec = ResponseSchemaSpec.from_json_schema(EXTRACT_SCHEMA)
    validator = SchemaValidator(spec)
    assert validator.validate('"name": "Ada", "date": "2026-05-01"}') == {
        "name": "Ada",
        "date": "2026-05-01",
    }
    with pytest.raises(ValueError, match="holds no JSON object"):
        validator.validate("no json")


def test_specs_from_python() -> None:
    spec = ResponseSchemaSpec.from_model(Classification, name="intent")
    assert spec.model_class is Classification and spec.type == "pydantic"
    assert build_response_format(spec, "s").name == "intent"
    assert ResponseSchemaSpec.from_json_schema(EXTRACT_SCHEMA, strict=False).strict is False
    with pytest.raises(ConfigError, match="additionalProperties"):
        ResponseSchemaSpec.from_json_schema(
            {"type": "object", "properties": {}, "additionalProperties": True}
        )


def test_strict_form_of_a_discriminated_union() -> None:
    from typing import Literal

    from pydantic import Field

    class Cat(BaseModel):
        kind: Literal["cat"]
        lives: int

    class Dog(BaseModel):
        kind: Literal["dog"]
        good: bool

    class Pet(BaseModel):
        pet: Cat | Dog = Field(discriminator="kind")

    strict = to_strict(Pet.model_json_schema())
    Draft202012Validator.check_schema(strict)
    text = json.dumps(strict)
    assert "oneOf" not in text and "discriminator" not in text
    assert len(strict["properties"]["pet"]["anyOf"]) == 2
    spec = ResponseSchemaSpec.from_model(Pet)
    assert SchemaValidator(spec).validate('{"pet": {"kind": "dog", "good": true}}').pet == Dog(
        kind="dog", good=True
    )


def test_prefill_continuation_wins_over_an_inner_object() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "object", "properties": {"b": {"type": "integer"}}}},
        "required": ["a"],
    }
    validator = SchemaValidator(ResponseSchemaSpec.from_json_schema(schema))
    assert validator.validate(' "a": {"b": 1}}') == {"a": {"b": 1}}
    assert validator.validate('"a": {"b": 1}} and some words') == {"a": {"b": 1}}
