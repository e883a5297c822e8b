"""Hostile router expressions: every escape and every resource bomb is refused, naming
what was refused and where (column), and none takes noticeable time."""

from __future__ import annotations

import pytest

from agentloom.workflow import ExpressionError, compile_expression

STATE = {"a": "x", "n": 4, "items": [1, 2], "d": {"k": "v"}}

# (expression, words the refusal must contain, column it must name)
REFUSED_AT_LOAD = [
    # dunder access and attribute walks
    ("state.a.__class__", "'__class__'", 1),
    ("state.__class__.__mro__", "'__mro__'", 1),
    ("state.a.__class__.__base__.__subclasses__()", "'__subclasses__'", 1),
    ("().__class__", "'__class__'", 1),
    ("state.a.lower.__self__", "'__self__'", 1),
    ("state.a.__dict__", "'__dict__'", 1),
    ("state.d._private", "'_private'", 1),
    ("'x'.lower().__len__()", "'__len__'", 1),
    ("len.__call__('x')", "'__call__'", 1),
    # names and calls outside the list
    ("__import__('os')", "'__import__'", 1),
    ("open('/etc/passwd')", "'open'", 1),
    ("eval('1+1')", "'eval'", 1),
    ("exec('x=1')", "'exec'", 1),
    ("getattr(state, 'a')", "'getattr'", 1),
    ("type(state)", "'type'", 1),
    ("globals()", "'globals'", 1),
    ("vars()", "'vars'", 1),
    ("print(1)", "'print'", 1),
    ("1 + os", "'os'", 5),
    ("str.lower('A')", "'str'", 1),
    ("state.a.format(state)", "'format'", 1),
    ("state.items.pop()", "'pop'", 1),
    ("state.d.update(a=1)", "keyword", 1),
    ("''.join(['a'])", "'join'", 1),
    ("len(state.a, key=1)", "keyword", 1),
    ("len(*state.items)", "starred", 1),
    # comprehensions, lambdas, generators and other statements in disguise
    ("[x for x in state.items]", "ListComp", 1),
    ("{x for x in state.items}", "SetComp", 1),
    ("{k: 1 for k in state.d}", "DictComp", 1),
    ("(x for x in state.items)", "GeneratorExp", 1),
    ("(lambda: 1)()", "this call", 2),
    ("lambda: 1", "Lambda", 1),
    ("f'{state.a}'", "JoinedStr", 1),
    ("{**state.d}", "Dict", 1),
    ("{1, 2}", "Set", 1),
    ("state.items[0:1]", "subscript", 1),
    ("state.items[state.n]", "subscript", 1),
    ("1 << 100000", "operator", 1),
    ("~1", "operator", 1),
    ("b'bytes' == state.a", "constant", 1),
]


@pytest.mark.parametrize(("source", "what", "column"), REFUSED_AT_LOAD,
                         ids=[c[0][:40] for c in REFUSED_AT_LOAD])
def test_refused_at_load_with_name_and_column(source: str, what: str, column: int) -> None:
    with pytest.raises(ExpressionError) as info:
        compile_expression(source)
    message = info.value.message
    assert what in message, message
    assert f"column {column}" in message, message


SYNTAX = ["x := 1", "yield 1", "await state.a", "*state.items", "import os",
          "state.a; 1", "def f(): pass"]


@pytest.mark.parametrize("source", SYNTAX)
def test_statements_and_walrus_are_syntax_errors_with_a_column(source: str) -> None:
    with pytest.raises(ExpressionError) as info:
        compile_expression(source)
    message = info.value.message
    assert "column" in message or "Await" in message, message


DEEP = [
    "-" * 60 + "1",
    "not " * 60 + "1",
    "len(" * 40 + "'a'" + ")" * 40,
    "[" * 40 + "1" + "]" * 40,
    "(1 if " * 40 + "1" + " else 1)" * 40,
]


@pytest.mark.parametrize("source", DEEP, ids=["neg", "not", "calls", "lists", "ifexp"])
def test_deep_nesting_is_refused(source: str) -> None:
    with pytest.raises(ExpressionError) as info:
        compile_expression(source)
    assert "nested" in info.value.message or "parts" in info.value.message


def test_thousands_of_parentheses_do_not_crash_the_parser() -> None:
    with pytest.raises(ExpressionError):
        compile_expression("(" * 5000 + "1" + ")" * 5000)


def test_too_many_parts_and_too_long_are_refused() -> None:
    with pytest.raises(ExpressionError, match="more than 200 parts"):
        compile_expression(" and ".join(["1"] * 300))
    with pytest.raises(ExpressionError, match="longer than 2000"):
        compile_expression("state.a == '" + "x" * 3000 + "'")


# Bombs that parse: refused when evaluated, before the work is done, at their column.
REFUSED_AT_RUN = [
    ("2 ** 10000000", "exponent", 1),
    ("9 ** 9 ** 9", "exponent", 1),
    ("10 ** 64 ** 2", "exponent", 1),
    ("(10 ** 60) ** 60", "power too large", 1),
    ("state.n == (2 ** 64) ** 64", "power too large", 12),
    ("'a' * 10 ** 9", "exceed", 1),
    ("'ab' * 60000", "exceed", 1),
    ("state.a * 1000000000", "exceed", 1),
    ("[0] * 200000", "exceed", 1),
    ("[[0] * 1000] * 1000 == [[0] * 1000] * 1000", "exceed", 1),
    ("len(str([[0] * 100000] * 100000)) > 0", "exceed", 9),
    ("state.a.replace('', 'y' * 90000)", "exceed", 1),
    ("('x' * 50000).replace('x', 'yy')", "exceed", 1),
    ("'%99999999s' % state.a", "formatting", 1),
    ("'%.99999f' % 1.0", "formatting", 1),
    ("int('9' * 4000) > 1", "too large", 1),
    ("state.missing.lower() == 'x'", "no 'missing'", 1),
    ("state.n.lower()", "no allowed method 'lower'", 1),
]


@pytest.mark.parametrize(("source", "what", "column"), REFUSED_AT_RUN,
                         ids=[c[0][:40] for c in REFUSED_AT_RUN])
def test_bombs_refused_when_evaluated(source: str, what: str, column: int) -> None:
    expression = compile_expression(source)
    with pytest.raises(ExpressionError) as info:
        expression.evaluate(STATE)
    message = info.value.message
    assert what in message, message
    assert f"column {column}" in message, message


def test_state_keys_named_like_dunders_are_just_missing_keys() -> None:
    with pytest.raises(ExpressionError, match="no '__class__'"):
        compile_expression("state['__class__']").evaluate(STATE)
    assert compile_expression("state.get('__class__')").evaluate(STATE) is None


ALLOWED = [
    ("state.a.lower() == 'x'", True),
    ("state.n % 2 == 0", True),
    ("len(state.items) >= 2 and 'k' in state.d", True),
    ("state.d.get('k', 'none').upper()", "V"),
    ("[0] * 1000 == [0] * 1000", True),
    ("2 ** 64 > 10", True),
]


@pytest.mark.parametrize(("source", "value"), ALLOWED)
def test_the_allowed_language_still_works(source: str, value: object) -> None:
    assert compile_expression(source).evaluate(STATE) == value
