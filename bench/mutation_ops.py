"""The mutants of bench/mutation.py: where in a module's source a mutation goes, and the
source with it applied. Pure functions over `ast`; nothing runs here."""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass


@dataclass
class Mutant:
    line: int
    start: tuple[int, int]
    end: tuple[int, int]
    replacement: str
    what: str
    source_line: str = ""



_CMP_SWAP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
_BIN_SWAP: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Add,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Mult,
}
_DROPPABLE = (ast.Expr, ast.Raise, ast.Assign, ast.AugAssign, ast.Continue, ast.Break)


def _is_bare_constant(node: ast.stmt) -> bool:
    """Docstrings and `...`: dropping them changes nothing."""
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)


def _is_type_alias(node: ast.stmt) -> bool:
    if not isinstance(node, ast.Assign):
        return False
    text = ast.unparse(node.value)
    return text.startswith(("Literal[", "TypeVar(", "Union[")) or "TypeAlias" in text


def _is_log_call(node: ast.stmt) -> bool:
    if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
        return False
    func = node.value.func
    return isinstance(func, ast.Attribute) and "log" in ast.unparse(func.value).lower()


class _Finder(ast.NodeVisitor):
    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.found: list[Mutant] = []
        self._string_ok: set[int] = set()

    def _add(self, node: ast.AST, replacement: str, what: str) -> None:
        line = node.lineno  # type: ignore[attr-defined]
        if "no mutate" in self.lines[line - 1]:
            return
        self.found.append(
            Mutant(
                line=line,
                start=(line, node.col_offset),  # type: ignore[attr-defined]
                end=(node.end_lineno, node.end_col_offset),  # type: ignore[attr-defined]
                replacement=replacement,
                what=what,
                source_line=self.lines[line - 1].strip(),
            )
        )

    def _expr(self, original: ast.expr, new: ast.expr, what: str) -> None:
        self._add(original, f"({ast.unparse(new)})", what)

    # skipped subtrees: annotations, f-strings, TYPE_CHECKING blocks
    def visit_arg(self, node: ast.arg) -> None:
        return

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        return

    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for default in [*node.args.defaults, *node.args.kw_defaults]:
            if default is not None:
                self.visit(default)
        self._body(node, node.body)

    visit_FunctionDef = _visit_function
    visit_AsyncFunctionDef = _visit_function

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._body(node, node.body)

    def visit_Module(self, node: ast.Module) -> None:
        self._body(node, node.body)

    def _body(self, parent: ast.AST, body: list[ast.stmt]) -> None:
        for stmt in body:
            if isinstance(stmt, ast.If) and "TYPE_CHECKING" in ast.unparse(stmt.test):
                continue
            if isinstance(stmt, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id in ("__all__", "__slots__")
                for t in stmt.targets
            ):
                continue  # names and memory layout, not behaviour
            if isinstance(stmt, ast.Import | ast.ImportFrom) or _is_type_alias(stmt):
                continue
            if (
                isinstance(stmt, _DROPPABLE)
                and not _is_bare_constant(stmt)
                and not _is_log_call(stmt)
            ):
                self._add(stmt, "pass", f"drop `{short(ast.unparse(stmt))}`")
            self.visit(stmt)

    def generic_visit(self, node: ast.AST) -> None:
        for name, value in ast.iter_fields(node):
            is_body = name in ("body", "orelse", "finalbody") and isinstance(value, list)
            if is_body and value and isinstance(value[0], ast.stmt):
                self._body(node, value)
                continue
            if name in ("returns", "annotation", "decorator_list"):
                continue
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST):
                        self.visit(item)
            elif isinstance(value, ast.AST):
                self.visit(value)

    def visit_If(self, node: ast.If) -> None:
        self._negate(node.test)
        self.generic_visit(node)

    def visit_While(self, node: ast.While) -> None:
        self._negate(node.test)
        self.generic_visit(node)

    def visit_IfExp(self, node: ast.IfExp) -> None:
        self._negate(node.test)
        self.generic_visit(node)

    def _negate(self, test: ast.expr) -> None:
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return  # dropping the `not` covers it
        self._expr(test, ast.UnaryOp(op=ast.Not(), operand=test), "negate condition")

    def visit_Compare(self, node: ast.Compare) -> None:
        for i, op in enumerate(node.ops):
            swap = _CMP_SWAP.get(type(op))
            if swap is not None:
                new = copy.deepcopy(node)
                new.ops[i] = swap()
                self._expr(node, new, f"`{_op(node, op)}` -> `{_op(new, new.ops[i])}`")
        for operand in [node.left, *node.comparators]:
            self._string_ok.add(id(operand))
        self.generic_visit(node)

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        new = copy.deepcopy(node)
        new.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        self._expr(node, new, "`and` -> `or`" if isinstance(node.op, ast.And) else "`or` -> `and`")
        self.generic_visit(node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        if isinstance(node.op, ast.Not):
            self._expr(node, node.operand, "drop `not`")
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        swap = _BIN_SWAP.get(type(node.op))
        if swap is not None and not _is_str(node.left) and not _is_str(node.right):
            new = copy.deepcopy(node)
            new.op = swap()
            self._expr(node, new, f"`{_binop(node.op)}` -> `{_binop(new.op)}`")
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if isinstance(node.value, ast.Name) and node.value.id in ("Literal", "TypeVar"):
            return  # a type, not a value
        self._string_ok.add(id(node.slice))
        self.generic_visit(node)

    def visit_Dict(self, node: ast.Dict) -> None:
        for key in node.keys:
            if key is not None:
                self._string_ok.add(id(key))
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id == "field":
            return  # a dataclass field's repr/compare flags, not the code's behaviour
        if isinstance(func, ast.Attribute) and func.attr in ("get", "pop") and node.args:
            self._string_ok.add(id(node.args[0]))
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        value = node.value
        if isinstance(value, bool):
            self._expr(node, ast.Constant(not value), f"`{value}` -> `{not value}`")
        elif isinstance(value, int):
            self._expr(node, ast.Constant(value + 1), f"`{value}` -> `{value + 1}`")
        elif isinstance(value, float):
            new = value * 2 if value else 1.0
            self._expr(node, ast.Constant(new), f"`{value}` -> `{new}`")
        elif isinstance(value, str) and id(node) in self._string_ok:
            new_s = value + "_X"
            self._expr(node, ast.Constant(new_s), f"`{value!r}` -> `{new_s!r}`")


def short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 60 else text[:57] + "..."


def _op(node: ast.Compare, op: ast.cmpop) -> str:
    mini = ast.Compare(left=ast.Name("a"), ops=[op], comparators=[ast.Name("b")])
    return ast.unparse(mini)[2:-2]


def _binop(op: ast.operator) -> str:
    return ast.unparse(ast.BinOp(left=ast.Name("a"), op=op, right=ast.Name("b")))[2:-2]


def _is_str(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def find_mutants(source: str) -> list[Mutant]:
    finder = _Finder(source.splitlines())
    finder.visit(ast.parse(source))
    return finder.found


def apply(source: str, mutant: Mutant) -> str | None:
    """The source with one segment replaced (ast offsets count UTF-8 bytes), or None when
    the result does not parse."""
    lines = source.encode().splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    data = source.encode()
    start = offsets[mutant.start[0] - 1] + mutant.start[1]
    end = offsets[mutant.end[0] - 1] + mutant.end[1]
    mutated = (data[:start] + mutant.replacement.encode() + data[end:]).decode()
    try:
        ast.parse(mutated)
    except SyntaxError:
        return None
    return mutated
