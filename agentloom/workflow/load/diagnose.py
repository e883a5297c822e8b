"""Pydantic's validation errors, told the way a person fixes a file.

Each error's location is walked over the raw YAML data to find the line of the deepest
key that exists, and named in the file's own words (`step 'x' (llm_call), retry`). An
unknown field gets the closest real field name of the model that refused it. A value of
the wrong kind says what was expected, in YAML's words: `timeout: expected a number of
seconds, got true`. A section checked by a parser of its own (`profiles`, `rate_limits`,
`circuit_breaker`, `prices`, `fallback`) names the place inside it in its message
(`profiles.fast.retries: ...`): that place is walked too, for its line and field.
"""

from __future__ import annotations

import re
import types
import typing
from typing import Any

from pydantic import BaseModel

from agentloom.workflow.load.yaml_source import Marks
from agentloom.workflow.schema.step_types import STEP_TYPE_NAMES, step_model
from agentloom.workflow.schema.steps import EXPONENT_NUMBER
from agentloom.workflow.schema.workflow import WorkflowDefinition


def describe(e: Any, prefix: tuple[str | int, ...], data: Any, marks: Marks
         ) -> tuple[str, int | None, str]:
    """(message, line, field) of one pydantic error, `prefix` + its loc walked over the raw
    data to find the line of the deepest key that exists."""
    tail = tuple(e["loc"])
    if prefix[:1] == ("steps",) and len(prefix) == 2 and tail and tail[0] in STEP_TYPE_NAMES:
        # The union's tag (the step type) is no key of the file; skipping it keeps a
        # step field that shares its name (`agent:` of an agent step) from matching it.
        tail = tail[1:]
    loc = prefix + tail
    container: Any = data
    line = marks.line_of(container)
    real: list[str | int] = []
    for part in loc:
        if has(container, part):
            line = marks.line_of(container, part) or line
            container = container[part]
            real.append(part)
    kind = e["type"]
    where, _ = describe_place(data, real)
    msg = str(e.get("msg", "invalid value")).removeprefix("Value error, ")
    field = dotted(real)
    if kind == "extra_forbidden":
        key = str(real[-1])
        parent_where, parent_model = describe_place(data, real[:-1])
        message = f"unknown field {key!r} in {parent_where}"
        if parent_model is not None:
            names = _field_names(parent_model)
            import difflib  # on an error only (its import is ~2 M instructions)
            close = difflib.get_close_matches(key, names, n=1, cutoff=0.6)
            if close:
                message += f"; did you mean {close[0]!r}?"
    elif kind == "missing":
        message = f"{where}: missing required field {str(loc[-1])!r}"
        field = dotted([*real, loc[-1]])
    elif kind == "string_pattern_mismatch" and real and real[-1] == "id":
        parent_where, _ = describe_place(data, real[:-1])
        message = (f"{parent_where}: bad step id {e.get('input')!r}: ids start with a "
                   "letter or _ and hold letters, digits, _ and -")
    elif kind in ("union_tag_invalid", "union_tag_not_found"):
        given = container.get("type") if isinstance(container, dict) else None
        types_ = ", ".join(STEP_TYPE_NAMES)
        if given is None:
            message = f"{where}: missing 'type' (one of {types_})"
        else:
            message = f"{where}: unknown step type {given!r}; expected one of {types_}"
            import difflib  # on an error only (its import is ~2 M instructions)
            close = difflib.get_close_matches(str(given), list(STEP_TYPE_NAMES), n=1)
            if close:
                message += f"; did you mean {close[0]!r}?"
            line = marks.line_of(container, "type") or line
        field = dotted([*real, "type"])
    else:
        # The offending value is shown when the error is about one field's value.
        at_leaf = bool(real) and real[-1] == loc[-1]
        inner = _inner_place(msg, real, container, marks) if kind == "value_error" else None
        if at_leaf and kind in _EXPECTED:
            name = real[-1]
            unit = _UNITS.get(name) if isinstance(name, str) else None
            wanted = _EXPECTED[kind] + (f" of {unit}" if unit and kind in _NUMBERS else "")
            message = f"{where}: expected {wanted}, got {_as_written(e.get('input'), kind)}"
        elif at_leaf and inner is not None:
            place, detail, inner_line, inner_field = inner
            message = f"{where.removesuffix(str(real[-1]))}{place}: {detail}"
            line, field = inner_line or line, inner_field
        elif at_leaf:
            shown = repr(e.get("input"))
            if len(shown) > 60:
                shown = shown[:57] + "..."
            message = f"{where}: {msg} (got {shown})"
        else:
            message = f"{where}: {msg}"
    return message, line, field


_EXPECTED = {"int_type": "a whole number", "int_parsing": "a whole number",
             "int_from_float": "a whole number", "float_type": "a number",
             "float_parsing": "a number", "bool_type": "true or false",
             "bool_parsing": "true or false"}
"""What a field of each kind takes, by pydantic's error type (the format's numbers and
flags are strict: `true` is no number, `1` no flag, `'3'` is text)."""
_NUMBERS = frozenset(k for k in _EXPECTED if not k.startswith("bool"))
_UNITS = {"timeout": "seconds", "timeout_seconds": "seconds", "backoff_max": "seconds",
          "latency_ms": "milliseconds", "budget_usd": "US dollars", "max_tokens": "tokens",
          "max_tokens_per_run": "tokens", "budget_tokens": "tokens",
          "max_output_bytes": "bytes", "max_write_bytes": "bytes", "max_reply_bytes": "bytes"}
"""The unit of a number, by its field's name, for `expected a number of seconds`."""
_FLAG_WORDS = frozenset({"true", "false", "yes", "no", "on", "off"})
_NUMBER_TEXT = re.compile(r"\s*[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9]+)\s*")


def _as_written(value: Any, kind: str) -> str:
    """A value as the file spells it: `true`, `null`, `2.5`, `the text '3'`."""
    if value is True or value is False:
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        if EXPONENT_NUMBER.fullmatch(value):
            return value  # `1e6` unquoted: YAML 1.1 made it text, the person wrote a number
        shown = repr(value) if len(value) <= 40 else repr(value[:37]) + "..."
        # Plain YAML reads `3`, `0.5` and `true` as a number and a flag: this was quoted.
        quoted = (value.strip().lower() in _FLAG_WORDS if kind.startswith("bool")
                  else _NUMBER_TEXT.fullmatch(value) is not None)
        return f"the text {shown}" + (" (write it without quotes)" if quoted else "")
    shown = repr(value)
    return shown if len(shown) <= 60 else shown[:57] + "..."


_INNER = re.compile(r"([^\s:]+): (.+)", re.S)
_INDEX = re.compile(r"\[(\d+)\]\.?")


def _inner_place(msg: str, real: list[str | int], container: Any, marks: Marks
                 ) -> tuple[str, str, int | None, str] | None:
    """For a message that a field's own parser wrote as `<field>.<place>: what`, such as
    `profiles.fast.retries: expected ...` of the field `profiles`: (the place, what, the
    line of the deepest key of it in the file, its dotted field). None for any other."""
    match = _INNER.fullmatch(msg)
    if match is None or not real or not isinstance(real[-1], str):
        return None
    place, detail = match.group(1), match.group(2)
    head = real[-1]
    if place != head and not place.startswith((f"{head}.", f"{head}[")):
        return None
    rest = place[len(head):].removeprefix(".")
    node, line, walked = container, None, [*real]
    while rest:  # a key may hold dots itself (`gpt-4.1`): the longest key that fits
        if isinstance(node, list):
            index = _INDEX.match(rest)
            if index is None or int(index.group(1)) >= len(node):
                break
            key: str | int = int(index.group(1))
            rest = rest[index.end():]
        elif isinstance(node, dict):
            fits = [k for k in node if isinstance(k, str)
                    and (rest == k or rest.startswith((f"{k}.", f"{k}[")))]
            if not fits:
                break
            key = max(fits, key=len)
            rest = rest[len(key):].removeprefix(".")
        else:
            break
        line = marks.line_of(node, key) or line
        node = node[key]
        walked.append(key)
    field = dotted(walked)
    if rest:
        field += rest if rest.startswith("[") else f".{rest}"
    return place, detail, line, field


def describe_place(data: Any, real: list[str | int]) -> tuple[str, type[BaseModel] | None]:
    """A readable name for a location, and the model class that validates it."""
    model: type[BaseModel] | None = WorkflowDefinition
    head = ""
    path: list[str | int] = []
    raw: Any = data
    skip_key = False
    i = 0
    while i < len(real):
        part = real[i]
        if part == "steps" and i == 0 and len(real) > 1 and isinstance(raw, dict):
            index = real[1]
            step = raw["steps"][index]
            sid = step.get("id") if isinstance(step, dict) else None
            stype = step.get("type") if isinstance(step, dict) else None
            head = f"step {sid!r} ({stype})" if sid else f"step #{int(index) + 1}"
            model = step_model(str(stype))
            raw = step
            i += 2
            continue
        if skip_key:
            skip_key = False
        elif model is not None and isinstance(part, str):
            model, skip_key = _field_model(model, part)
        path.append(part)
        raw = raw[part] if has(raw, part) else None
        i += 1
    text = dotted(path)
    if head:
        return (f"{head}, {text}" if text else head), model
    return text or "the workflow", model


def has(container: Any, part: Any) -> bool:
    if isinstance(container, dict):
        return part in container
    return isinstance(container, list) and isinstance(part, int) and part < len(container)


def dotted(parts: list[Any]) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _field_names(model: type[BaseModel]) -> list[str]:
    names = []
    for name, info in model.model_fields.items():
        names.append(info.alias or name)
    return names


def _field_model(model: type[BaseModel], name: str) -> tuple[type[BaseModel] | None, bool]:
    """The model validating field `name`, and whether the field is a mapping of them
    (whose keys are names the user chose, not fields)."""
    for fname, info in model.model_fields.items():
        if name in (fname, info.alias):
            is_map = typing.get_origin(info.annotation) is dict
            return _first_model(info.annotation), is_map
    return None, False


def _first_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin = typing.get_origin(annotation)
    if origin is None and not isinstance(annotation, types.UnionType):
        return None
    args = typing.get_args(annotation)
    if origin is dict and len(args) == 2:
        args = (args[1],)
    for arg in args:
        found = _first_model(arg)
        if found is not None:
            return found
    return None
