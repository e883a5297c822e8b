"""The package's import graph, read with `ast` (no module is imported).

`tests/test_layers.py` holds the rules; this module only collects facts: every import of an
agentloom module (top level, inside functions, under TYPE_CHECKING), where it sits, and
every read of another object's private attribute.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent / "agentloom"


@dataclass(frozen=True, slots=True)
class Import:
    source: str
    """The importing module's dotted name."""
    target: str
    """The imported agentloom module's dotted name (a name imported from a package
    resolves to its submodule when one exists)."""
    line: int
    in_function: str | None
    """The enclosing function's name, or None at module or class level."""
    type_checking: bool
    names: tuple[str, ...] = ()
    """The names a `from ... import` takes (empty for a plain `import`)."""


@dataclass(frozen=True, slots=True)
class PrivateRead:
    source: str
    line: int
    text: str


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE_DIR.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


class _Collector(ast.NodeVisitor):
    def __init__(self, name: str, is_package: bool, modules: set[str]) -> None:
        self.name = name
        self.package = name if is_package else name.rpartition(".")[0]
        self.modules = modules
        self.imports: list[Import] = []
        self.private_reads: list[PrivateRead] = []
        self._function: list[str] = []
        self._type_checking = 0

    def _add(self, target: str, node: ast.stmt, names: tuple[str, ...] = ()) -> None:
        if target != "agentloom" and not target.startswith("agentloom."):
            return
        self.imports.append(
            Import(
                source=self.name,
                target=target,
                line=node.lineno,
                in_function=self._function[-1] if self._function else None,
                type_checking=self._type_checking > 0,
                names=names,
            )
        )

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name, node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base = self.package.split(".")
            base = base[: len(base) - (node.level - 1)]
            module = ".".join([*base, *([node.module] if node.module else [])])
        else:
            module = node.module or ""
        for alias in node.names:
            candidate = f"{module}.{alias.name}"
            if candidate in self.modules:
                self._add(candidate, node)
            else:
                self._add(module, node, (alias.name,))

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test):
            self._type_checking += 1
            for child in node.body:
                self.visit(child)
            self._type_checking -= 1
            for child in node.orelse:
                self.visit(child)
        else:
            self.generic_visit(node)

    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._function.append(node.name)
        self.generic_visit(node)
        self._function.pop()

    visit_FunctionDef = _visit_function
    visit_AsyncFunctionDef = _visit_function

    def visit_Attribute(self, node: ast.Attribute) -> None:
        attr = node.attr
        private = attr.startswith("_") and not (attr.startswith("__") and attr.endswith("__"))
        if private and not _is_own(node.value):
            self.private_reads.append(
                PrivateRead(self.name, node.lineno, ast.unparse(node))
            )
        self.generic_visit(node)


def _is_own(value: ast.expr) -> bool:
    """`self._x`, `cls._x`, `super()._x`, and module-level names (`_module._x` on an
    imported module is caught as a private-module import instead)."""
    if isinstance(value, ast.Name):
        return value.id in {"self", "cls"} or value.id.startswith("_")
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
        return value.func.id == "super"
    return False


def collect() -> tuple[list[Import], list[PrivateRead]]:
    modules = all_modules()
    names = set(modules)
    imports: list[Import] = []
    reads: list[PrivateRead] = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        collector = _Collector(name, path.name == "__init__.py", names)
        collector.visit(tree)
        imports.extend(collector.imports)
        reads.extend(collector.private_reads)
    return imports, reads


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one member (Tarjan), each
    sorted; a self-edge is not a cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(found)
