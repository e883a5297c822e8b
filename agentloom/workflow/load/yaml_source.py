"""YAML that remembers where things are.

A SafeLoader whose mappings and sequences record the line of every key and item in a
side table (keyed by the id of the container), so that any later error, from pydantic or
from our own checks, can name `file:line` without the data itself carrying marks.
Duplicate keys, which PyYAML would silently collapse to the last, are errors here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from agentloom.errors import WorkflowError
from agentloom.workflow.load.problems import WorkflowProblems


@dataclass(slots=True)
class Marks:
    """Lines (1-based) of containers, their keys and their items."""

    start: dict[int, int] = field(default_factory=dict)
    keys: dict[int, dict[Any, int]] = field(default_factory=dict)
    items: dict[int, list[int]] = field(default_factory=dict)
    keep: list[Any] = field(default_factory=list)
    """Keeps every marked container alive, so an id is never reused while we hold marks."""

    def line_of(self, container: Any, key: Any = None) -> int | None:
        cid = id(container)
        if key is not None:
            if isinstance(container, dict):
                line = self.keys.get(cid, {}).get(key)
                if line is not None:
                    return line
            elif isinstance(container, list) and isinstance(key, int):
                lines = self.items.get(cid)
                if lines and 0 <= key < len(lines):
                    return lines[key]
        return self.start.get(cid)


def load_yaml(text: str, filename: str) -> tuple[Any, Marks]:
    marks = Marks()
    errors: list[WorkflowError] = []

    # libyaml's parser when present: 5-10x faster, with the same marks.
    base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(base):  # type: ignore[misc,valid-type]
        pass

    def construct_mapping(loader: Any, node: yaml.MappingNode) -> dict[Any, Any]:
        loader.flatten_mapping(node)
        out: dict[Any, Any] = {}
        key_lines: dict[Any, int] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if key in key_lines:
                errors.append(WorkflowError(
                    f"duplicate key {key!r} (first at line {key_lines[key]})",
                    file=filename, line=line, field=str(key),
                ))
            key_lines[key] = line
            out[key] = loader.construct_object(value_node, deep=True)
        marks.start[id(out)] = node.start_mark.line + 1
        marks.keys[id(out)] = key_lines
        marks.keep.append(out)
        return out

    def construct_sequence(loader: Any, node: yaml.SequenceNode) -> list[Any]:
        out = [loader.construct_object(child, deep=True) for child in node.value]
        marks.start[id(out)] = node.start_mark.line + 1
        marks.items[id(out)] = [child.start_mark.line + 1 for child in node.value]
        marks.keep.append(out)
        return out

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, construct_sequence)
    try:
        data = yaml.load(text, Loader=Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        raise WorkflowError(f"invalid YAML: {exc.problem or exc}", file=filename,
                            line=line) from None
    except yaml.YAMLError as exc:
        raise WorkflowError(f"invalid YAML: {exc}", file=filename) from None
    if errors:
        raise WorkflowProblems(errors)
    return data, marks
