"""Checking a reply against its schema, in words the model can act on; and reading values.

`SchemaValidator` is the loop's `OutputValidator`: its `ValueError` message goes back to
the model verbatim on a re-ask, so it lists at most a few errors as `path: message`, with
long values cut, never a dump of the whole reply. A json_schema reply is checked against
the full schema as written, not the strict or provider-adapted form sent on the wire.

The forced-tool mode (spec 004, `outputFormat: structured`) reaches the same validator:
the schema becomes the one tool, and the call's arguments are the reply.

`to_plain` and `lookup_field` let checkpoints, `--json` and templates treat a pydantic
instance and a dict alike.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from agentloom import _jsontext
from agentloom.errors import ConfigError
from agentloom.messages import ModelResponse, NamedToolChoice, ToolSpec
from agentloom.structured._extract import extract_json
from agentloom.structured._spec import ResponseSchemaSpec, schema_name
from agentloom.structured._strict import drop_optional_nulls

if TYPE_CHECKING:
    from agentloom.providers import Capabilities

MAX_ERRORS = 5
"""Errors listed in one re-ask; more are counted, not shown."""


class SchemaValidator:
    """Parse and validate a final reply (implements `agentloom.loop.OutputValidator`).

    validator = SchemaValidator(spec)
    value = validator.validate(reply_text)   # a pydantic instance or a dict
    """

    __slots__ = ("_checker", "spec")

    def __init__(self, spec: ResponseSchemaSpec) -> None:
        self.spec = spec
        self._checker: Any = None
        if spec.type == "json_schema" and spec.schema is not None:
            from jsonschema.validators import validator_for  # type: ignore[import-untyped]

            cls = validator_for(spec.schema)
            self._checker = cls(spec.schema, format_checker=cls.FORMAT_CHECKER)

    def validate(self, text: str) -> Any:
        """The value in `text`; ValueError (shown to the model) if there is none or it
        doesn't fit the schema.

        A reply that only parses with a `{` put before it is read that way: it is the
        rest of an Anthropic reply prefilled with `{`, when the decoder left it off.
        """
        value = _prefilled(text)
        if value is None:
            value = extract_json(text)
        return self.validate_value(value)

    def validate_value(self, value: Any) -> Any:
        """Validate an already parsed value, such as a forced tool call's arguments."""
        spec = self.spec
        if not isinstance(value, dict):
            raise ValueError(f"expected a JSON object, got {_json_type(value)}")
        if spec.strict and spec.schema is not None:
            drop_optional_nulls(value, spec.schema, spec.schema)
        if spec.type == "pydantic" and spec.model_class is not None:
            from pydantic import ValidationError

            try:
                return spec.model_class.model_validate(value)
            except ValidationError as exc:
                lines = [
                    f"{_loc(err.get('loc', ()))}: {_short(err.get('msg', 'invalid'))}"
                    for err in exc.errors()
                ]
                raise ValueError(_summary(lines)) from None
        if self._checker is not None:
            errors = sorted(self._checker.iter_errors(value), key=lambda e: list(e.path))
            if errors:
                raise ValueError(
                    _summary([f"{_loc(e.absolute_path)}: {_short(e.message)}" for e in errors])
                )
        return value


def _prefilled(text: str) -> dict[str, Any] | None:
    """The object when `text` is the rest of a reply prefilled with `{` (it starts with a
    key or the closing brace, and parses once the brace is put back; words after it are
    ignored as they are around any JSON)."""
    import json

    stripped = text.strip()
    if not stripped or stripped[0] not in '"}':
        return None
    try:
        value, _ = json.JSONDecoder().raw_decode("{" + stripped)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _summary(lines: list[str]) -> str:
    shown = lines[:MAX_ERRORS]
    text = "the JSON does not match the schema:\n" + "\n".join(f"- {ln}" for ln in shown)
    if len(lines) > MAX_ERRORS:
        text += f"\n- ... and {len(lines) - MAX_ERRORS} more"
    return text


def _loc(parts: Iterable[Any]) -> str:
    out = "$"
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


def _short(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _json_type(value: Any) -> str:
    names = {
        list: "an array",
        str: "a string",
        bool: "a boolean",
        type(None): "null",
        int: "a number",
        float: "a number",
    }
    return names.get(type(value), type(value).__name__)


# --- forced tool call (spec 004 outputFormat: structured) --------------------------------


def structured_tool(spec: ResponseSchemaSpec, step_id: str) -> ToolSpec:
    """The one tool whose parameters are the schema. The full schema is used: tool
    parameters aren't sent in strict form, and the arguments are validated anyway."""
    parameters = spec.schema if spec.schema is not None else {"type": "object"}
    description = spec.description or (
        "Give your answer by calling this function; its arguments are the answer."
    )
    return ToolSpec(name=schema_name(spec, step_id), description=description, parameters=parameters)


def structured_tool_choice(spec: ResponseSchemaSpec, step_id: str) -> NamedToolChoice:
    """The tool choice that forces the model to call `structured_tool`."""
    return NamedToolChoice(name=schema_name(spec, step_id))


def check_forced_tool_support(
    capabilities: Capabilities, *, provider: str | None = None, model: str | None = None
) -> None:
    """ConfigError, before anything is sent, for a model that can't be forced to call a
    tool (Ollama ignores tool_choice)."""
    if capabilities.tools and capabilities.forced_tool_choice:
        return
    who = (
        " ".join(
            x
            for x in (
                f"provider {provider!r}" if provider else "",
                f"model {model!r}" if model else "",
            )
            if x
        )
        or "this model"
    )
    lack = "takes no tools" if not capabilities.tools else "can't force a tool choice"
    raise ConfigError(
        f"structured output through a forced tool call needs a forced tool choice, "
        f"and {who} {lack}; use response_schema without outputFormat: structured instead"
    )


def parse_forced_tool_call(
    response: ModelResponse, *, expected: str | None = None, keyed: bool = False
) -> dict[str, Any]:
    """The arguments of the reply's first tool call, as a dict.

    With `keyed`, the spec 004 shape `{functionName: arguments}`. ValueError (a re-ask
    message) when the model wrote text instead, called another tool, or sent arguments
    that aren't a JSON object.
    """
    calls = response.tool_calls
    if not calls:
        want = f" `{expected}`" if expected else ""
        raise ValueError(f"you answered with text; call the function{want} with your answer")
    call = calls[0]
    if expected is not None and call.name != expected:
        raise ValueError(f"you called `{call.name}`; call `{expected}` with your answer")
    import json

    try:
        args = _jsontext.loads(call.arguments) if call.arguments.strip() else {}
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"the arguments of `{call.name}` are not valid JSON: {exc.msg} at column {exc.colno}"
        ) from None
    if not isinstance(args, dict):
        raise ValueError(
            f"the arguments of `{call.name}` must be a JSON object, got {_json_type(args)}"
        )
    return {call.name: args} if keyed else args


# --- reading values ----------------------------------------------------------------------


def to_plain(value: Any) -> Any:
    """JSON-ready data: pydantic instances become dicts (recursively), tuples lists."""
    from pydantic import BaseModel

    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {k: to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    return value


def lookup_field(value: Any, name: str) -> Any:
    """`value[name]` for a dict, the field `name` of a pydantic instance, or item `name`
    (digits) of a list. Only declared fields, extra fields and computed fields of a
    pydantic instance are reachable: never methods or private attributes.

    Raises:
        KeyError: no such field or key.
    """
    from pydantic import BaseModel

    if isinstance(value, BaseModel):
        cls = type(value)
        if name in cls.model_fields or name in cls.model_computed_fields:
            return getattr(value, name)
        extra = value.model_extra
        if extra and name in extra:
            return extra[name]
        raise KeyError(name)
    if isinstance(value, dict):
        return value[name]
    if isinstance(value, (list, tuple)) and name.lstrip("-").isdigit():
        try:
            return value[int(name)]
        except IndexError:
            raise KeyError(name) from None
    raise KeyError(name)
