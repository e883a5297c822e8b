"""JSON Schema surgery: walking subschemas, OpenAI's strict form, and reading nulls back.

OpenAI's strict mode accepts a subset of JSON Schema: every object closed
(`additionalProperties: false`), every property listed in `required`, and no keywords it
doesn't know. We rewrite a schema into that form once, when the step loads, and keep the
original for validation, so nothing the user wrote is lost: constraints strict mode can't
carry are moved into the description, where the model still reads them, and the reply is
still checked against them.

Optional properties become required *and nullable*; a null the model then sends for one
is read as "absent" (`drop_optional_nulls`) before validation, so the field takes its
default instead of failing.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from agentloom.errors import ConfigError

# Keywords whose value is a map of name -> subschema.
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
# Keywords whose value is one subschema.
_SCHEMA_ONE = (
    "additionalProperties",
    "items",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
)
# Keywords whose value is a list of subschemas.
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")

# Dropped in strict form: OpenAI refuses them and they carry nothing the model needs.
_STRICT_DROP = ("default", "$schema", "$id", "discriminator", "examples")
# Kept out of strict form but shown to the model in the description (and still validated).
_STRICT_TO_DESCRIPTION = (
    "minLength",
    "maxLength",
    "patternProperties",
    "unevaluatedProperties",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "unevaluatedItems",
    "contains",
    "minContains",
    "maxContains",
    "uniqueItems",
    "dependentRequired",
    "dependentSchemas",
)


def subschemas(schema: Any, path: str = "$") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema object inside `schema` (itself included), with a readable path.

    Schema-aware: a property *named* `additionalProperties` is a name, not a keyword.
    """
    if not isinstance(schema, dict):
        return
    yield path, schema
    for key in _SCHEMA_MAPS:
        children = schema.get(key)
        if isinstance(children, dict):
            for name, child in children.items():
                yield from subschemas(child, f"{path}.{key}.{name}")
    for key in _SCHEMA_ONE:
        child = schema.get(key)
        if isinstance(child, dict):
            yield from subschemas(child, f"{path}.{key}")
        elif isinstance(child, list):  # draft-4 style tuple `items`
            for i, item in enumerate(child):
                yield from subschemas(item, f"{path}.{key}[{i}]")
    for key in _SCHEMA_LISTS:
        children = schema.get(key)
        if isinstance(children, list):
            for i, child in enumerate(children):
                yield from subschemas(child, f"{path}.{key}[{i}]")


def open_objects(schema: dict[str, Any]) -> list[str]:
    """Paths where `additionalProperties` is `true` (or `{}`, which means the same)."""
    return [
        path
        for path, node in subschemas(schema)
        if node.get("additionalProperties") is True or node.get("additionalProperties") == {}
    ]


def _is_object(node: dict[str, Any]) -> bool:
    kind = node.get("type")
    return (
        kind == "object"
        or (isinstance(kind, list) and "object" in kind)
        or ("properties" in node and kind is None)
    )


def accepts_null(node: Any, root: dict[str, Any]) -> bool:
    """Whether `null` is a valid instance of `node` (following local `$ref`s)."""
    if not isinstance(node, dict):
        return node is True
    node = resolve_ref(node, root)
    if not node:
        return True
    kind = node.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if "const" in node and node["const"] is None:
        return True
    if None in node.get("enum", ()):
        return True
    return any(accepts_null(b, root) for k in ("anyOf", "oneOf") for b in node.get(k, ()))


def resolve_ref(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """Follow a local `#/...` reference; anything else is returned as is."""
    seen = 0
    while isinstance(node.get("$ref"), str) and node["$ref"].startswith("#") and seen < 32:
        target: Any = root
        for part in node["$ref"][1:].split("/"):
            if not part:
                continue
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(target, dict) or part not in target:
                return node
            target = target[part]
        if not isinstance(target, dict):
            return node
        node = target
        seen += 1
    return node


def to_strict(schema: dict[str, Any]) -> dict[str, Any]:
    """OpenAI's strict form of `schema` (a new dict; the argument is not changed).

    Raises ConfigError where strict mode can't say what the schema says: an object with
    no `properties` (a free-form map) or with a schema-valued `additionalProperties`.
    """
    out = copy.deepcopy(schema)
    if "definitions" in out:
        # One home for definitions, so every $ref below points at `#/$defs/`.
        defs = out.pop("definitions")
        out.setdefault("$defs", {}).update(defs)
        _rewrite_refs(out)
    _strict_node(out, "$", out)
    return out


def _rewrite_refs(node: Any) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/definitions/"):
            node["$ref"] = "#/$defs/" + ref[len("#/definitions/") :]
        for value in node.values():
            _rewrite_refs(value)
    elif isinstance(node, list):
        for value in node:
            _rewrite_refs(value)


def _strict_node(node: dict[str, Any], path: str, root: dict[str, Any]) -> None:
    for key in _STRICT_DROP:
        node.pop(key, None)
    if "$ref" in node and len(node) > 1:
        # A $ref with siblings isn't accepted; the target carries the meaning.
        for key in [k for k in node if k != "$ref"]:
            del node[key]
    notes = [f"{k}={node.pop(k)!r}" for k in _STRICT_TO_DESCRIPTION if k in node]
    if notes:
        base = node.get("description", "")
        node["description"] = (base + " " if base else "") + "(" + ", ".join(notes) + ")"
    if "oneOf" in node and "anyOf" not in node:
        # Strict mode takes anyOf only; the full schema still holds the reply to oneOf.
        node["anyOf"] = node.pop("oneOf")
    if len(node.get("allOf", ())) == 1 and isinstance(node["allOf"][0], dict):
        only = node.pop("allOf")[0]
        for key, value in only.items():
            node.setdefault(key, value)
    if _is_object(node):
        extra = node.get("additionalProperties")
        if isinstance(extra, dict) and extra:
            raise ConfigError(
                f"strict mode can't express a map with free keys at {path} "
                "(additionalProperties with a schema): list its properties, "
                "or set strict: false"
            )
        props = node.get("properties")
        if not isinstance(props, dict):
            raise ConfigError(
                f"strict mode can't express an object without properties at {path}: "
                "list its properties, or set strict: false"
            )
        required = set(node.get("required", ()))
        for name, sub in list(props.items()):
            if name not in required and isinstance(sub, dict) and not accepts_null(sub, root):
                props[name] = _nullable(sub)
        node["required"] = list(props)
        node["additionalProperties"] = False
    for key in _SCHEMA_MAPS:
        children = node.get(key)
        if isinstance(children, dict):
            for name, child in children.items():
                if isinstance(child, dict):
                    _strict_node(child, f"{path}.{key}.{name}", root)
    for key in _SCHEMA_ONE:
        child = node.get(key)
        if isinstance(child, dict) and key != "additionalProperties":
            _strict_node(child, f"{path}.{key}", root)
    for key in _SCHEMA_LISTS:
        for i, child in enumerate(node.get(key, ())):
            if isinstance(child, dict):
                _strict_node(child, f"{path}.{key}[{i}]", root)


def _nullable(sub: dict[str, Any]) -> dict[str, Any]:
    kind = sub.get("type")
    if (
        isinstance(kind, str)
        and "$ref" not in sub
        and not any(k in sub for k in ("anyOf", "oneOf", "allOf", "enum", "const"))
    ):
        return {**sub, "type": [kind, "null"]}
    wrapped: dict[str, Any] = {"anyOf": [sub, {"type": "null"}]}
    if "description" in sub and "$ref" not in sub:
        wrapped["description"] = sub["description"]
    return wrapped


def drop_optional_nulls(value: Any, schema: dict[str, Any], root: dict[str, Any]) -> Any:
    """Remove `"key": null` where `key` is optional in the original schema and null isn't
    valid for it: the strict form made the model send something, and null means "absent".
    Works in place on dicts and lists, and returns `value`."""
    node = resolve_ref(schema, root)
    if isinstance(value, dict):
        props = node.get("properties")
        if isinstance(props, dict):
            required = set(node.get("required", ()))
            for key in list(value):
                sub = props.get(key)
                if not isinstance(sub, dict):
                    continue
                if value[key] is None and key not in required and not accepts_null(sub, root):
                    del value[key]
                else:
                    drop_optional_nulls(value[key], sub, root)
            return value
    if isinstance(value, list) and isinstance(node.get("items"), dict):
        for item in value:
            drop_optional_nulls(item, node["items"], root)
        return value
    branches = [
        b
        for b in node.get("anyOf", node.get("oneOf", ()))
        if isinstance(b, dict) and not accepts_null(b, root)
    ]
    if len(branches) == 1 and value is not None:
        drop_optional_nulls(value, branches[0], root)
    if len(node.get("allOf", ())) == 1:
        drop_optional_nulls(value, node["allOf"][0], root)
    return value
