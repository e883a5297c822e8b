"""YAML read with bounds on what it expands to, for any file somebody else may write.

PyYAML's `safe_load` builds an alias once and hands the same object to every place that
names it, so a "billion laughs" file of a few kilobytes loads in an instant and costs its
reader later: whatever walks the value walks every repetition. A price file of 43 KB
whose thousand providers each alias one thousand-model mapping made a million prices and
took 6.5 s of CPU; at the 16 MB the price reader allows it would take the machine. Here
the composed node graph is measured *before* anything is constructed, an alias counting
as the whole subtree it repeats, and a graph past `max_nodes` values or `max_depth`
levels is refused (`YamlTooBig`, with the line of the container that went past).

`load_bounded` is `safe_load` with that measure: the workflow loader reads its files
with it (through its own loader class, which records line marks), and so do price tables.
PyYAML is imported when a file is read: the price table's module is on every run's
import path, most of which read no YAML price file.
"""

from __future__ import annotations

from typing import Any

MAX_NODES = 50_000
"""Scalars, mappings and sequences after alias expansion."""
MAX_DEPTH = 200
"""Nesting of mappings and sequences (a recursive alias nests without end)."""


class YamlTooBig(ValueError):
    """A YAML document that expands past its bounds; `line` (1-based) is where, if known."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


def measure(root: Any, max_nodes: int = MAX_NODES, max_depth: int = MAX_DEPTH) -> None:
    """Refuse a composed node graph (`yaml.Node`) that expands past `max_nodes` or nests
    past `max_depth`. Aliases are the same node object reached twice, so sizes are
    memoized by node identity: the walk costs the number of distinct nodes, whatever they
    expand to."""
    import yaml

    memo: dict[int, tuple[int, int]] = {}  # id -> (expanded size, height)
    aliases = 0

    def walk(node: Any, depth: int) -> tuple[int, int]:
        nonlocal aliases
        known = memo.get(id(node))
        if known is not None:
            aliases += 1
        else:
            if depth > max_depth:
                raise YamlTooBig(
                    f"YAML nested deeper than {max_depth} levels (a recursive alias?)",
                    node.start_mark.line + 1)
            size, height = 1, 0
            if isinstance(node, yaml.MappingNode | yaml.SequenceNode):
                children = (
                    [n for pair in node.value for n in pair]
                    if isinstance(node, yaml.MappingNode) else node.value
                )
                for child in children:
                    child_size, child_height = walk(child, depth + 1)
                    size += child_size
                    height = max(height, child_height + 1)
                    if size > max_nodes:
                        why = " (aliases repeating aliases: a YAML bomb?)" if aliases else ""
                        raise YamlTooBig(
                            f"YAML expands to more than {max_nodes} values here{why}",
                            node.start_mark.line + 1)
            known = memo[id(node)] = (size, height)
        if depth + known[1] > max_depth:
            raise YamlTooBig(f"YAML nested deeper than {max_depth} levels",
                             node.start_mark.line + 1)
        return known

    walk(root, 0)


def load_bounded(text: str, loader_class: Any = None, max_nodes: int = MAX_NODES,
                 max_depth: int = MAX_DEPTH) -> Any:
    """`yaml.safe_load(text)`, refused with `YamlTooBig` when it expands past the bounds.
    `loader_class`: a SafeLoader subclass of the caller's (the workflow loader's records
    line marks); libyaml's when there is one, else PyYAML's. A malformed document raises
    PyYAML's own `YAMLError`."""
    import yaml

    if loader_class is None:
        loader_class = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        measure(node, max_nodes, max_depth)
        return loader.construct_document(node)
    except RecursionError:
        raise YamlTooBig(f"YAML nested deeper than {max_depth} levels") from None
    finally:
        loader.dispose()
