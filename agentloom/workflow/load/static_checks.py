"""What `validate` can tell about state reads without running anything.

Warnings (state may still come from `--state`, so none is an error):
- a template or router condition reads a state key that only steps write, none of which
  the reader depends on: it may run before the write (add `depends_on`);
- a path below a key the file's state gives as a literal, that no step rewrites, does not
  exist in that literal (`{state.user.nmae}` against `user: {name: ...}`);
- a router condition reads a key that neither the file's state nor any step provides;
- a map runs over a key the file's state sets to something other than a list.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from agentloom.errors import kind_of
from agentloom.workflow.lang.paths import MISSING, format_path, lookup

if TYPE_CHECKING:
    from agentloom.workflow.load.workflow import StepNode

FieldPath = tuple[str | int, ...]
StatePath = tuple[str | int, ...]


def state_reads(node: StepNode) -> Iterator[tuple[FieldPath, StatePath, str]]:
    """(field of the step, state path, how it is written) for each state read of a step
    that the loader can see: template references and router conditions."""
    prepared = node.prepared
    templates = getattr(prepared, "templates", None)
    if templates is not None:
        for field_path, template in templates():
            for ref in template.refs:
                if ref.root == "state" and ref.path:
                    yield field_path, tuple(ref.path), "{" + ref.source + "}"
    if node.type == "map" and getattr(prepared, "over", None):
        yield ("over",), tuple(prepared.over), "state." + format_path(prepared.over)
    for i, (expression, _target) in enumerate(getattr(prepared, "conditions", ()) or ()):
        for path in expression.state_paths():
            yield ("conditions", i, "expression"), path, "state." + format_path(path)


def check_state_reads(nodes: dict[str, StepNode], state: dict[str, Any],
                      ancestors: Callable[[str], set[str]],
                      warn: Callable[[StepNode, FieldPath, str], None]) -> None:
    writers: dict[str | int, list[str]] = {}
    for n in nodes.values():
        if n.output_path:
            writers.setdefault(n.output_path[0], []).append(n.id)
    for node in nodes.values():
        seen: set[tuple[StatePath, FieldPath]] = set()
        for field_path, path, text in state_reads(node):
            key = path[0]
            # a condition's `state.a.b` yields `a.b` and `a`: keep the longest per field
            if any(p[:len(path)] == path and len(p) > len(path) and f == field_path
                   for p, f in seen):
                continue
            seen.add((path, field_path))
            by = [w for w in writers.get(key, []) if w != node.id]
            if key not in state:
                if by and not any(w in ancestors(node.id) for w in by):
                    names = ", ".join(repr(w) for w in by)
                    warn(node, field_path,
                         f"step {node.id!r} reads {text}, which only step(s) {names} "
                         f"write, and {node.id!r} does not depend on them: it may run "
                         "first; add depends_on")
                elif not by and field_path[:1] == ("conditions",):
                    warn(node, field_path,
                         f"router {node.id!r} reads {text}, which neither the file's "
                         "state nor any step's output provides; pass it with --state")
                continue
            if by:
                continue
            if field_path == ("over",):
                value = lookup(state, path)
                if value is not MISSING and not isinstance(value, list):
                    warn(node, field_path,
                         f"map {node.id!r} runs over {text}, which the file's state sets "
                         f"to {kind_of(value)}, not a list")
            if len(path) == 1:
                continue
            if lookup(state, path) is MISSING and isinstance(state[key], dict | list):
                warn(node, field_path,
                     f"step {node.id!r} reads {text}, but the file's state has no "
                     f"{format_path(path)!r} and no step writes {key!r}")
