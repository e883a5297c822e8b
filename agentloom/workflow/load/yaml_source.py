"""YAML that remembers where things are.

A SafeLoader whose mappings and sequences record the line of every key and item in a
side table (keyed by the id of the container), so that any later error, from pydantic or
from our own checks, can name `file:line` without the data itself carrying marks.
Duplicate keys, which PyYAML would silently collapse to the last, are errors here.

Bounded, because a workflow file may be hostile: the file's size is capped before it is
read, its bytes must be UTF-8 (one clear line otherwise), and the composed node graph is
measured *before* anything is constructed: an alias counts as the whole subtree it
repeats, so a "billion laughs" file is refused at the line of the container that expands
past MAX_NODES, instead of passing `validate` and exploding later in a deep copy (the
measure is `agentloom._yaml`'s, which price files are read with too).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from agentloom._files import FileTooLarge, read_regular
from agentloom._yaml import MAX_DEPTH as MAX_DEPTH
from agentloom._yaml import MAX_NODES as MAX_NODES
from agentloom._yaml import YamlTooBig, load_bounded
from agentloom.errors import WorkflowError
from agentloom.workflow.load.problems import WorkflowProblems

MAX_FILE_BYTES = 1024 * 1024
"""A workflow (or `--state-file`) larger than this is refused unread."""

_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"),
         (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16"))


class Marks:
    """Lines (1-based) of containers, their keys and their items."""

    # A plain class: a generated dataclass costs its `exec`s on every start of the CLI.
    __slots__ = ("items", "keep", "keys", "start")

    def __init__(self) -> None:
        self.start: dict[int, int] = {}
        self.keys: dict[int, dict[Any, int]] = {}
        self.items: dict[int, list[int]] = {}
        self.keep: list[Any] = []
        """Keeps every marked container alive, so an id is never reused while we hold
        marks."""

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


def read_source(path: Path, what: str = "workflow file") -> str:
    """A YAML file's text, refused with one line when it is too big or not UTF-8.
    OSError (missing, unreadable) is left to the caller, which knows how to word it."""
    try:  # a FIFO or device is refused (an OSError) before a byte is read
        data = read_regular(path, MAX_FILE_BYTES)
    except FileTooLarge:
        raise WorkflowError(f"{what} is larger than {MAX_FILE_BYTES // (1024 * 1024)} MB",
                            file=str(path)) from None
    return decode_source(data, str(path))


def decode_source(data: bytes, filename: str) -> str:
    for bom, name in _BOMS:
        if data.startswith(bom):
            raise WorkflowError(f"the file is {name}-encoded; save it as UTF-8",
                                file=filename)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = data[: exc.start]
        line = before.count(b"\n") + 1
        column = exc.start - (before.rfind(b"\n") + 1) + 1
        raise WorkflowError(
            f"not valid UTF-8: byte 0x{data[exc.start]:02x} at column {column}; "
            "save the file as UTF-8", file=filename, line=line) from None
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise WorkflowError("the file contains NUL bytes (UTF-16 without a BOM?); "
                            "save it as UTF-8", file=filename, line=line)
    return text.removeprefix("\ufeff")


def load_yaml(text: str, filename: str) -> tuple[Any, Marks]:
    if len(text) > MAX_FILE_BYTES:
        raise WorkflowError(f"YAML text is larger than {MAX_FILE_BYTES // (1024 * 1024)} MB",
                            file=filename)
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
        data = load_bounded(text, Loader, MAX_NODES, MAX_DEPTH)
    except YamlTooBig as exc:
        raise WorkflowError(str(exc), file=filename, line=exc.line) from None
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
