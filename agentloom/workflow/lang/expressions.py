"""Safe router expressions: a small interpreter over Python's `ast`, never `eval`.

An expression is parsed once, at load, and checked against an allow-list: literals, state
paths (`state.a.b`, `state.items[0]`), comparisons, `and`/`or`/`not`, arithmetic, `in`,
and a fixed set of pure functions and methods (`len`, `lower`, `strip`, ...). Anything
else (names, dunders, comprehensions, lambdas, keyword arguments) is refused with its
position. Evaluation walks our own compiled tree, with limits on size: numbers, strings
and lists that would grow past them raise instead of eating the machine. The arguments
that set an operation's cost (`round`'s digits, `**`'s exponent, `*`'s repeat count) are
checked *before* it runs. The language has no loops, so a compiled tree of at most
MAX_NODES parts does at most MAX_NODES operations, each bounded by those limits: an
evaluation ends in microseconds and cannot hold the event loop past the run's deadline.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentloom.errors import WorkflowError
from agentloom.workflow.lang.paths import MISSING, format_path, lookup

MAX_SOURCE = 2000
MAX_NODES = 200
MAX_DEPTH = 30
MAX_LEN = 100_000
MAX_EXPONENT = 64
MAX_INT_BITS = 4096
# round(x, -n) on an int computes 10**n; digits past a MAX_INT_BITS number's own are moot.
MAX_ROUND_DIGITS = 1300


class ExpressionError(WorkflowError):
    """An expression outside the allowed language, or one that fails when evaluated."""


_STR_METHODS = frozenset({
    "lower", "upper", "strip", "lstrip", "rstrip", "startswith", "endswith", "casefold",
    "title", "capitalize", "isdigit", "isalpha", "isalnum", "isspace", "isnumeric",
    "count", "find", "replace", "split", "removeprefix", "removesuffix",
})
_DICT_METHODS = frozenset({"get", "keys", "values", "items"})
_LIST_METHODS = frozenset({"count", "index"})


def _round(value: Any, ndigits: Any = None) -> Any:
    if isinstance(ndigits, int) and abs(ndigits) > MAX_ROUND_DIGITS:
        raise ExpressionError(f"round() digits beyond {MAX_ROUND_DIGITS} in magnitude")
    return round(value, ndigits)


def _num(v: Any) -> Any:
    if isinstance(v, str):
        v = v.strip()
        return float(v) if any(c in v for c in ".eE") else int(v)
    return v


_FUNCS: dict[str, Callable[..., Any]] = {
    "len": len, "str": str, "int": lambda v: int(_num(v)), "float": lambda v: float(_num(v)),
    "bool": bool, "abs": abs, "min": min, "max": max, "round": _round,
    "lower": lambda v: str(v).lower(), "upper": lambda v: str(v).upper(),
    "strip": lambda v: str(v).strip(),
}

_BINOPS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_CMPOPS: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
    ast.Is: operator.is_, ast.IsNot: operator.is_not,
}


@dataclass(slots=True, frozen=True)
class Expression:
    source: str
    _tree: ast.expr

    def state_paths(self) -> Iterator[tuple[str | int, ...]]:
        """The state paths the expression reads (`state.a.b` gives `a.b` and `a`), as the
        loader's static checks see them; method calls (`x.lower()`) are not reads."""
        tree = self._tree
        methods = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
        for sub in ast.walk(tree):
            if isinstance(sub, ast.Attribute | ast.Subscript) and id(sub) not in methods:
                path = _path_of(sub)
                if path:
                    yield path

    def evaluate(self, state: Mapping[str, Any]) -> Any:
        try:
            return _Eval(state).run(self._tree)
        except ExpressionError:
            raise
        except (TypeError, ValueError, ZeroDivisionError, OverflowError, IndexError,
                KeyError, AttributeError) as exc:
            raise ExpressionError(f"expression {self.source!r} failed: {exc}") from None
        except RecursionError:
            # Comparing or printing state nested thousands deep.
            raise ExpressionError(
                f"expression {self.source!r} failed: a value is nested too deeply") from None


def compile_expression(source: str) -> Expression:
    """Parse and check an expression. Raises ExpressionError naming what is refused and
    where (column, 1-based)."""
    if len(source) > MAX_SOURCE:
        raise ExpressionError(f"expression longer than {MAX_SOURCE} characters")
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"invalid expression: {exc.msg} at column {exc.offset}") from None
    except (RecursionError, MemoryError):
        raise ExpressionError("expression nested too deeply") from None
    _Check().run(tree.body)
    return Expression(source, tree.body)


class _Check:
    def __init__(self) -> None:
        self.nodes = 0

    def refuse(self, node: ast.AST, what: str) -> ExpressionError:
        col = getattr(node, "col_offset", 0) + 1
        return ExpressionError(f"{what} is not allowed in an expression (column {col})")

    def run(self, node: ast.expr, depth: int = 0) -> None:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise ExpressionError(f"expression has more than {MAX_NODES} parts")
        if depth > MAX_DEPTH:
            raise ExpressionError(f"expression nested deeper than {MAX_DEPTH}")
        d = depth + 1
        if isinstance(node, ast.Constant):
            if not isinstance(node.value, str | int | float | bool | type(None)):
                raise self.refuse(node, f"constant {node.value!r}")
        elif isinstance(node, ast.Name):
            if node.id not in ("state",):
                raise self.refuse(node, f"name {node.id!r}")
        elif isinstance(node, ast.Attribute):
            if node.attr.startswith("_"):
                raise self.refuse(node, f"attribute {node.attr!r}")
            if not _is_path(node):
                raise self.refuse(node, f"attribute {node.attr!r}")
            self.run(node.value, d)
        elif isinstance(node, ast.Subscript):
            if _index(node.slice) is None:
                raise self.refuse(node, "a subscript other than a constant index or key")
            self.run(node.value, d)
        elif isinstance(node, ast.Call):
            if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
                raise self.refuse(node, "keyword or starred arguments")
            func = node.func
            if isinstance(func, ast.Name):
                if func.id not in _FUNCS:
                    raise self.refuse(func, f"function {func.id!r}")
            elif isinstance(func, ast.Attribute):
                if func.attr not in _STR_METHODS | _DICT_METHODS | _LIST_METHODS:
                    raise self.refuse(func, f"method {func.attr!r}")
                self.run(func.value, d)
            else:
                raise self.refuse(func, "this call")
            for a in node.args:
                self.run(a, d)
        elif isinstance(node, ast.BoolOp):
            for v in node.values:
                self.run(v, d)
        elif isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, ast.Not | ast.USub | ast.UAdd):
                raise self.refuse(node, "this operator")
            self.run(node.operand, d)
        elif isinstance(node, ast.BinOp):
            if type(node.op) not in _BINOPS:
                raise self.refuse(node, "this operator")
            self.run(node.left, d)
            self.run(node.right, d)
        elif isinstance(node, ast.Compare):
            for op in node.ops:
                if type(op) not in _CMPOPS:
                    raise self.refuse(node, "this comparison")
            self.run(node.left, d)
            for c in node.comparators:
                self.run(c, d)
        elif isinstance(node, ast.List | ast.Tuple):
            for e in node.elts:
                if isinstance(e, ast.Starred):
                    raise self.refuse(e, "starred items")
                self.run(e, d)
        elif isinstance(node, ast.IfExp):
            self.run(node.test, d)
            self.run(node.body, d)
            self.run(node.orelse, d)
        else:
            raise self.refuse(node, type(node).__name__)


def _is_path(node: ast.expr) -> bool:
    """Attributes are only allowed as steps of a state path (`state.a.b[0].c`)."""
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return isinstance(node, ast.Name) and node.id == "state"


def _index(node: ast.expr) -> int | str | None:
    """A subscript's constant key or index (`[0]`, `[-1]`, `['k']`), else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _index(node.operand)
        return -inner if isinstance(inner, int) else None
    if isinstance(node, ast.Constant) and not isinstance(node.value, bool) \
            and isinstance(node.value, int | str):
        return node.value
    return None


def _path_of(node: ast.expr) -> tuple[str | int, ...] | None:
    parts: list[str | int] = []
    while isinstance(node, ast.Attribute | ast.Subscript):
        if isinstance(node, ast.Attribute):
            parts.append(node.attr)
        else:
            key = _index(node.slice)
            assert key is not None
            parts.append(key)
        node = node.value
    if isinstance(node, ast.Name) and node.id == "state":
        return tuple(reversed(parts))
    return None


class _Eval:
    def __init__(self, state: Mapping[str, Any]) -> None:
        self.state = state

    def run(self, node: ast.expr) -> Any:
        try:
            return self._run(node)
        except ExpressionError as exc:
            if getattr(exc, "column", None) is None:
                # The innermost node that refused names the place, once.
                col = getattr(node, "col_offset", 0) + 1
                located = ExpressionError(f"{exc.message} (column {col})")
                located.column = col  # type: ignore[attr-defined]
                raise located from None
            raise

    def _run(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return self.state
        if isinstance(node, ast.Attribute | ast.Subscript):
            path = _path_of(node)
            if path is not None:
                value = lookup(self.state, path)
                if value is MISSING:
                    raise ExpressionError(f"the state has no {format_path(path)!r}")
                return value
            base = self.run(node.value)
            assert isinstance(node, ast.Subscript)
            return base[_index(node.slice)]
        if isinstance(node, ast.Call):
            args = [self.run(a) for a in node.args]
            if isinstance(node.func, ast.Name):
                return _sized(_FUNCS[node.func.id](*args))
            target = self.run(node.func.value)  # type: ignore[attr-defined]
            name = node.func.attr  # type: ignore[attr-defined]
            if isinstance(target, str) and name in _STR_METHODS:
                if name == "replace" and len(args) >= 2:
                    _check_len(len(target) * (len(str(args[1])) + 1))
                return _sized(getattr(target, name)(*args))
            if isinstance(target, Mapping) and name in _DICT_METHODS:
                return list(getattr(target, name)(*args)) if name != "get" else target.get(*args)
            if isinstance(target, Sequence) and not isinstance(target, str) \
                    and name in _LIST_METHODS:
                return getattr(target, name)(*args)
            raise ExpressionError(f"{type(target).__name__} has no allowed method {name!r}")
        if isinstance(node, ast.BoolOp):
            if isinstance(node.op, ast.And):
                result: Any = True
                for v in node.values:
                    result = self.run(v)
                    if not result:
                        return result
                return result
            result = False
            for v in node.values:
                result = self.run(v)
                if result:
                    return result
            return result
        if isinstance(node, ast.UnaryOp):
            operand = self.run(node.operand)
            if isinstance(node.op, ast.Not):
                return not operand
            return -operand if isinstance(node.op, ast.USub) else +operand
        if isinstance(node, ast.BinOp):
            left, right = self.run(node.left), self.run(node.right)
            if isinstance(node.op, ast.Pow):
                if not isinstance(right, int | float) or abs(right) > MAX_EXPONENT:
                    raise ExpressionError(f"exponent above {MAX_EXPONENT}")
                if isinstance(left, int) and left.bit_length() * abs(right) > MAX_INT_BITS:
                    raise ExpressionError("power too large")
            if isinstance(node.op, ast.Mult):
                for seq, k in ((left, right), (right, left)):
                    if isinstance(seq, str | list | tuple) and isinstance(k, int):
                        _check_len(_weight(seq) * k)
            if isinstance(node.op, ast.Mod) and isinstance(left, str):
                # printf-style formatting can widen a field to any size ('%99999999s').
                raise ExpressionError("string formatting with % is not allowed")
            return _sized(_BINOPS[type(node.op)](left, right))
        if isinstance(node, ast.Compare):
            left = self.run(node.left)
            for op, comp in zip(node.ops, node.comparators, strict=True):
                right = self.run(comp)
                if not _CMPOPS[type(op)](left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.List):
            return [self.run(e) for e in node.elts]
        if isinstance(node, ast.Tuple):
            return tuple(self.run(e) for e in node.elts)
        if isinstance(node, ast.IfExp):
            return self.run(node.body) if self.run(node.test) else self.run(node.orelse)
        raise ExpressionError(f"{type(node).__name__} is not allowed")  # checked at load


def _check_len(n: int) -> None:
    if n > MAX_LEN:
        raise ExpressionError(f"a value in the expression would exceed {MAX_LEN} items")


def _weight(value: Any) -> int:
    """Items in a value, nested lists counted in full (a list repeating one big list is
    big: comparing or printing it walks every copy); stops counting past MAX_LEN."""
    if isinstance(value, str):
        return len(value)
    if not isinstance(value, list | tuple):
        return 1
    total = len(value)
    for item in value:
        if total > MAX_LEN:
            break
        if isinstance(item, list | tuple | str):
            total += _weight(item)
    return total


def _sized(value: Any) -> Any:
    if isinstance(value, str | list | tuple) and _weight(value) > MAX_LEN:
        raise ExpressionError(f"a value in the expression exceeds {MAX_LEN} items")
    if isinstance(value, int) and not isinstance(value, bool) \
            and value.bit_length() > MAX_INT_BITS:
        raise ExpressionError("a number in the expression is too large")
    return value
