"""The `$ref`s of a response schema, checked when it loads.

A schema can be valid JSON Schema and still impossible to check a reply against: a
`$ref` that points at nothing in it, or references that lead back to themselves
without reaching a value (`x: {$ref: x}`, `x: {allOf: [{$ref: y}]}, y: {$ref: x}`).
The validator follows such a cycle until Python's recursion limit, so every reply of
the run failed, after its model call was made and billed, with a RecursionError. Both
are refused here, as a ConfigError naming the reference. A cycle through a property or
an item (a tree: `children: {items: {$ref: "#"}}`) is a recursive schema, not a loop:
each step reads a level deeper into the reply, whose depth is bounded.

Only references inside the document are followed (`#` and `#/json/pointer`); in a
schema with embedded resources (an `$id` below the root) a pointer's base is not the
root, so such a schema is left to the validator.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from agentloom.errors import ConfigError

Pointer = tuple[str, ...]

# Applicators that check the same value (a step along them reads nothing deeper).
_IN_PLACE_ONE = ("not", "if", "then", "else")
_IN_PLACE_LISTS = ("allOf", "anyOf", "oneOf")
_IN_PLACE_MAPS = ("dependentSchemas",)
# Every other keyword whose value holds subschemas.
_DEEPER_ONE = ("additionalProperties", "items", "contains", "propertyNames",
               "unevaluatedProperties", "unevaluatedItems", "additionalItems")
_DEEPER_LISTS = ("prefixItems", "items")
_DEEPER_MAPS = ("properties", "patternProperties", "$defs", "definitions")


def check_refs(schema: dict[str, Any]) -> None:
    """Raise ConfigError for a local `$ref` to nothing or a cycle that reads no value."""
    nodes = _subschemas(schema)
    if any(("$id" in node or "id" in node) and at for at, node in nodes.items()):
        return
    state: dict[Pointer, int] = {}  # 1: on the current path, 2: done
    for start in nodes:
        if start in state:
            continue
        path: list[Pointer] = [start]
        pending: list[list[Pointer]] = [_next(schema, start)]
        state[start] = 1
        while pending:
            if not pending[-1]:
                state[path.pop()] = 2
                pending.pop()
                continue
            step = pending[-1].pop()
            seen = state.get(step)
            if seen == 1:
                loop = [*path[path.index(step):], step]
                raise ConfigError(
                    "response_schema.schema: the $ref cycle "
                    f"{' -> '.join(_shown(p) for p in loop)} never reaches a value, so no "
                    "reply could be checked against it")
            if seen is None:
                state[step] = 1
                path.append(step)
                pending.append(_next(schema, step))


def _next(root: dict[str, Any], at: Pointer) -> list[Pointer]:
    """Where checking the value at `at` goes next without reading deeper into it."""
    node = _lookup(root, at)
    if not isinstance(node, dict):
        return []
    out: list[Pointer] = []
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#") and not ref.startswith("#/") and ref != "#":
        pass  # an $anchor name: left to the validator
    elif isinstance(ref, str) and ref.startswith("#"):
        target = tuple(_unescape(t) for t in unquote(ref[1:]).split("/")[1:])
        if _lookup(root, target) is _MISSING:
            raise ConfigError(f"response_schema.schema: $ref {ref[:200]!r} at {_shown(at)} "
                              "points at nothing in the schema")
        out.append(target)
    for key in _IN_PLACE_ONE:
        if isinstance(node.get(key), dict):
            out.append((*at, key))
    for key in _IN_PLACE_LISTS:
        if isinstance(node.get(key), list):
            out.extend((*at, key, str(i)) for i in range(len(node[key])))
    for key in _IN_PLACE_MAPS:
        if isinstance(node.get(key), dict):
            out.extend((*at, key, name) for name in node[key])
    return out


_MISSING = object()


def _lookup(root: Any, at: Pointer) -> Any:
    node = root
    for token in at:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return _MISSING
    return node


def _subschemas(schema: dict[str, Any]) -> dict[Pointer, dict[str, Any]]:
    """Every schema object in `schema` by its pointer (walked without recursion)."""
    found: dict[Pointer, dict[str, Any]] = {}
    stack: list[tuple[Pointer, Any]] = [((), schema)]
    while stack:
        at, node = stack.pop()
        if not isinstance(node, dict):
            continue
        found[at] = node
        for key in (*_IN_PLACE_ONE, *_DEEPER_ONE):
            if isinstance(node.get(key), dict):
                stack.append(((*at, key), node[key]))
        for key in (*_IN_PLACE_LISTS, *_DEEPER_LISTS):
            if isinstance(node.get(key), list):
                stack.extend(((*at, key, str(i)), c) for i, c in enumerate(node[key]))
        for key in (*_IN_PLACE_MAPS, *_DEEPER_MAPS):
            if isinstance(node.get(key), dict):
                stack.extend(((*at, key, name), c) for name, c in node[key].items())
    return found


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _shown(at: Pointer) -> str:
    text = "#" + "".join("/" + t.replace("~", "~0").replace("/", "~1") for t in at)
    return text if len(text) <= 200 else text[:200] + "..."
