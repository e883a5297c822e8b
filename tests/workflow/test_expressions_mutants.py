"""Expression rules a mutation run found untested: `or`, an `and` that comes out false and
what each returns, the size checks that must run *before* a repetition builds anything,
and every limit just under and just over."""

from __future__ import annotations

import re
import tracemalloc
from typing import Any

import pytest

from agentloom.workflow import ExpressionError, compile_expression
from agentloom.workflow.lang import expressions as ex


def ev(source: str, state: dict[str, Any] | None = None) -> Any:
    return compile_expression(source).evaluate(state or {})


# --- and / or ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("state.a or state.b", "b"),  # first falsy, so the second
        ("state.b or state.a", "b"),  # first truthy: returned as is
        ("state.a or state.z", 0),  # all falsy: the last
        ("state.z or state.a", ""),
        ("state.b and state.c", 3),  # all truthy: the last
        ("state.b and state.a", ""),  # stops at the first falsy, returns it
        ("state.a and state.b", ""),
        ("state.a and state.missing", ""),  # short-circuit: the missing path is never read
        ("state.b or state.missing", "b"),
        ("state.b and state.c and state.z", 0),
    ],
)
def test_and_or_return_the_deciding_operand(source: str, expected: Any) -> None:
    assert ev(source, {"a": "", "b": "b", "c": 3, "z": 0}) == expected


def test_and_reads_every_operand_it_needs() -> None:
    with pytest.raises(ExpressionError, match="the state has no 'missing'"):
        ev("state.b and state.missing", {"b": 1})
    with pytest.raises(ExpressionError, match="the state has no 'missing'"):
        ev("state.a or state.missing", {"a": 0})


def test_chained_comparisons_fail_on_any_link() -> None:
    assert ev("1 < 2 < 3") is True
    assert ev("1 < 3 < 2") is False
    assert ev("3 < 1 < 4") is False
    assert ev("1 <= 1 == 1 != 2") is True


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("not 0", True), ("not 'x'", False), ("-state.n", -5), ("+state.n", 5),
        ("7 - 2", 5), ("7 / 2", 3.5), ("7 // 2", 3), ("7 % 4", 3), ("2 ** 3", 8),
        ("1 if 0 else 2", 2), ("1 if 'y' else 2", 1), ("[1, 2]", [1, 2]), ("(1, 2)", (1, 2)),
        ("state.d.get('k', 9)", 9), ("state.d.keys()", ["a"]), ("state.d.values()", [1]),
        ("state.d.items()", [("a", 1)]), ("state.l.index(3)", 1), ("state.l.count(2)", 1),
        ("state.d['a']", 1), ("state.l[-1]", 3), ("float(' 2.5 ')", 2.5), ("int(' 7 ')", 7),
        ("float('1e3')", 1000.0), ("int(2.9)", 2), ("abs(-3)", 3), ("min(3, 1)", 1),
        ("max(3, 1)", 3), ("round(2.567, 2)", 2.57), ("lower('A')", "a"), ("upper('a')", "A"),
        ("strip(' a ')", "a"), ("bool('')", False), ("str(1)", "1"), ("len('abc')", 3),
        ("'a-b'.split('-')", ["a", "b"]), ("'x' is not None", True), ("1 not in [2]", True),
    ],
)
def test_each_operation_does_what_python_does(source: str, expected: Any) -> None:
    assert ev(source, {"n": 5, "d": {"a": 1}, "l": [2, 3]}) == expected


def test_a_method_outside_the_type_is_refused_when_evaluated() -> None:
    with pytest.raises(ExpressionError, match="int has no allowed method 'lower'"):
        ev("state.n.lower()", {"n": 1})
    with pytest.raises(ExpressionError, match="str has no allowed method 'index'"):
        ev("state.s.index('a')", {"s": "a"})
    with pytest.raises(ExpressionError, match="list has no allowed method 'get'"):
        ev("state.l.get(0)", {"l": [1]})


def test_subscripting_a_computed_value() -> None:
    assert ev("[5, 6][1]") == 6
    assert ev("{'k': 1}['k']" if False else "state.d.keys()[0]", {"d": {"k": 1}}) == "k"


# --- sizes: checked before the work -----------------------------------------------------


def peak_bytes(source: str, state: dict[str, Any]) -> int:
    expr = compile_expression(source)
    tracemalloc.start()
    try:
        with pytest.raises(ExpressionError):
            expr.evaluate(state)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(
    "source",
    ["state.s * state.k", "state.k * state.s", "state.l * state.k", "state.k * state.l"],
)
def test_a_repetition_too_big_is_refused_before_anything_is_built(source: str) -> None:
    # 10 MB of string or 80 MB of list if the check came after the multiplication.
    assert peak_bytes(source, {"s": "x" * 10, "l": [0] * 10, "k": 1_000_000}) < 1_000_000


def test_a_repetition_of_nested_lists_counts_the_nested_items() -> None:
    state = {"l": [[0] * 1000], "k": 1000}  # 1000 outer items, a million nested
    assert peak_bytes("state.l * state.k", state) < 1_000_000


def test_a_replace_too_big_is_refused_before_it_runs() -> None:
    state = {"s": "x" * 50_000, "r": "y" * 100}
    assert peak_bytes("state.s.replace('x', state.r)", state) < 1_000_000
    assert ev("'ab'.replace('a', 'xy')") == "xyb"


def test_repetition_just_under_and_just_over_the_limit() -> None:
    assert len(ev(f"'x' * {ex.MAX_LEN}")) == ex.MAX_LEN
    with pytest.raises(ExpressionError, match=f"would exceed {ex.MAX_LEN} items"):
        ev(f"'x' * {ex.MAX_LEN + 1}")
    assert len(ev(f"[0] * {ex.MAX_LEN}")) == ex.MAX_LEN
    with pytest.raises(ExpressionError, match=f"would exceed {ex.MAX_LEN} items"):
        ev(f"{ex.MAX_LEN + 1} * [0]")


def test_values_just_under_and_just_over_the_length_limit() -> None:
    assert len(ev("state.s + 'x'", {"s": "x" * (ex.MAX_LEN - 1)})) == ex.MAX_LEN
    with pytest.raises(ExpressionError, match=f"exceeds {ex.MAX_LEN} items"):
        ev("state.s + 'x'", {"s": "x" * ex.MAX_LEN})
    nested = [[0] * 499 for _ in range(200)]  # 200 + 200*499 = 100,000 items
    assert ev("state.l + []", {"l": nested}) == nested
    with pytest.raises(ExpressionError, match="exceeds"):
        ev("state.l + [0]", {"l": nested})


def test_weight_counts_nested_items_and_stops_past_the_limit() -> None:
    assert ex._weight("abc") == 3
    assert ex._weight(5) == 1
    assert ex._weight([1, [2, 3], "ab"]) == 3 + 2 + 2
    assert ex._weight(([1],)) == 2
    huge = [[0] * 10] * (ex.MAX_LEN + 5)
    assert ex.MAX_LEN < ex._weight(huge) <= ex.MAX_LEN + 5 + 10


def test_exponent_just_under_and_just_over_the_limit() -> None:
    assert ev(f"1 ** {ex.MAX_EXPONENT}") == 1
    assert ev(f"1 ** -{ex.MAX_EXPONENT}") == 1.0
    with pytest.raises(ExpressionError, match=f"exponent above {ex.MAX_EXPONENT}"):
        ev(f"1 ** {ex.MAX_EXPONENT + 1}")
    with pytest.raises(ExpressionError, match=f"exponent above {ex.MAX_EXPONENT}"):
        ev(f"1 ** -{ex.MAX_EXPONENT + 1}")
    with pytest.raises(ExpressionError, match="exponent above"):
        ev("2 ** '3'")


def test_power_just_under_and_just_over_the_bit_limit() -> None:
    # 2**64 has 65 bits; 65 * 63 = 4095 <= 4096 allowed, 65 * 64 = 4160 refused.
    assert ev("(2 ** 64) ** 63") == (2**64) ** 63
    with pytest.raises(ExpressionError, match="power too large"):
        ev("(2 ** 64) ** 64")
    assert ev("2.0 ** 64") == 2.0**64


def test_numbers_just_under_and_just_over_the_bit_limit() -> None:
    at_limit = 2**ex.MAX_INT_BITS - 1
    assert ev("state.n + 0", {"n": at_limit}) == at_limit
    with pytest.raises(ExpressionError, match="a number in the expression is too large"):
        ev("state.n + 1", {"n": at_limit})
    assert ev("True + 0") == 1


def test_round_digits_just_under_and_just_over_the_limit() -> None:
    assert ev(f"round(5, {ex.MAX_ROUND_DIGITS})") == 5
    assert ev(f"round(5, -{ex.MAX_ROUND_DIGITS})") == 0
    with pytest.raises(ExpressionError, match=f"beyond {ex.MAX_ROUND_DIGITS}"):
        ev(f"round(5, {ex.MAX_ROUND_DIGITS + 1})")
    with pytest.raises(ExpressionError, match=f"beyond {ex.MAX_ROUND_DIGITS}"):
        ev(f"round(5, -{ex.MAX_ROUND_DIGITS + 1})")
    assert ev("round(2.5)") == 2


def test_percent_formatting_of_a_string_is_refused_and_modulo_of_numbers_is_not() -> None:
    with pytest.raises(ExpressionError, match="string formatting with % is not allowed"):
        ev("'%s' % 1")
    assert ev("10 % 3") == 1


def test_source_length_just_under_and_just_over() -> None:
    ok = "1" + " " * (ex.MAX_SOURCE - 1)
    assert compile_expression(ok).evaluate({}) == 1
    with pytest.raises(ExpressionError, match=f"longer than {ex.MAX_SOURCE} characters"):
        compile_expression(ok + " ")


def test_part_count_just_under_and_just_over() -> None:
    assert compile_expression("[" + ", ".join(["1"] * (ex.MAX_NODES - 1)) + "]")
    with pytest.raises(ExpressionError, match=f"more than {ex.MAX_NODES} parts"):
        compile_expression("[" + ", ".join(["1"] * ex.MAX_NODES) + "]")


def test_depth_just_under_and_just_over() -> None:
    def nested(depth: int) -> str:
        return "-" * depth + "1"

    assert ev(nested(ex.MAX_DEPTH)) == (-1) ** ex.MAX_DEPTH
    with pytest.raises(ExpressionError, match=f"nested deeper than {ex.MAX_DEPTH}"):
        compile_expression(nested(ex.MAX_DEPTH + 1))


# --- the checks at load ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "what"),
    [
        ("b'x'", "constant b'x'"),
        ("state._x", "attribute '_x'"),
        ("len(x=1)", "keyword or starred arguments"),
        ("len(*state.l)", "keyword or starred arguments"),
        ("state.a.pop()", "method 'pop'"),
        ("lambda: 1", "Lambda"),
        ("~1", "this operator"),
        ("1 << 2", "this operator"),
        ("[*state.l]", "starred items"),
        ("state[state.k]", "a subscript other than a constant index or key"),
        ("state[True]", "a subscript other than a constant index or key"),
        ("state[-'a']", "a subscript other than a constant index or key"),
        ("len('a').x", "attribute 'x'"),
        ("state.a()", "method 'a'"),
        ("len()()", "this call"),
        ("{1: 2}", "Dict"),
    ],
)
def test_refused_at_load_naming_what(source: str, what: str) -> None:
    with pytest.raises(ExpressionError, match=re.escape(f"{what} is not allowed")):
        compile_expression(source)


def test_the_column_of_a_refusal_is_one_based() -> None:
    with pytest.raises(ExpressionError, match=r"name 'x' is not allowed in an expression "
                                              r"\(column 5\)"):
        compile_expression("1 + x")


def test_an_evaluation_error_names_the_column_once() -> None:
    with pytest.raises(ExpressionError) as info:
        ev("1 + state.missing", {})
    assert str(info.value).count("(column") == 1
    assert "(column 5)" in str(info.value)


@pytest.mark.parametrize(
    ("source", "state", "what"),
    [
        ("1 / 0", {}, "division by zero"),
        ("int('x')", {}, "invalid literal"),
        ("[1][5]", {}, "failed: list index out of range"),
        ("1 < 'a'", {}, "not supported"),
    ],
)
def test_runtime_errors_become_expression_errors(
    source: str, state: dict[str, Any], what: str
) -> None:
    with pytest.raises(ExpressionError, match=what):
        ev(source, state)


def test_state_paths_lists_reads_not_method_calls() -> None:
    expr = compile_expression("state.a.b.lower() == state['c'][0] and len(state.d)")
    assert sorted(map(str, expr.state_paths())) == sorted(
        map(str, [("a", "b"), ("a",), ("c", 0), ("c",), ("d",)])
    )


def test_every_step_of_a_state_path_counts_as_a_part() -> None:
    # `state.a` is two parts (the name and the attribute); 99 of them in a list: 199.
    assert compile_expression("[" + ", ".join(["state.a"] * 99) + "]")
    with pytest.raises(ExpressionError, match=f"more than {ex.MAX_NODES} parts"):
        compile_expression("[" + ", ".join(["state.a"] * 100) + "]")
