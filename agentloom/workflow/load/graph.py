"""The steps' dependency graph: a cycle in it, found without recursion."""

from __future__ import annotations


def find_cycle(deps_of: dict[str, list[str]]) -> list[str] | None:
    """A dependency cycle as [a, b, ..., a], or None. Iterative, so deep chains are fine."""
    state: dict[str, int] = {}
    for start in deps_of:
        if state.get(start):
            continue
        stack: list[tuple[str, int]] = [(start, 0)]
        path: list[str] = []
        while stack:
            node, i = stack.pop()
            if i == 0:
                state[node] = 1
                path.append(node)
            deps = deps_of.get(node, [])
            if i < len(deps):
                stack.append((node, i + 1))
                nxt = deps[i]
                if state.get(nxt) == 1:
                    cyc = [*path[path.index(nxt):], nxt]
                    cyc.reverse()
                    return cyc
                if not state.get(nxt):
                    stack.append((nxt, 0))
            else:
                state[node] = 2
                path.pop()
    return None
