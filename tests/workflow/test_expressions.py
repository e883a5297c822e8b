"""The router's expression interpreter: what it allows, and hostile input it refuses."""

from __future__ import annotations

import pytest

from agentloom.workflow import ExpressionError, compile_expression

STATE = {"classification": " Billing ", "score": 7, "tags": ["a", "b"],
         "user": {"plan": "pro"}, "decision": "APPROVE it"}


@pytest.mark.parametrize(("source", "expected"), [
    ("state.classification.strip().lower() == 'billing'", True),
    ("'approve' in state.decision.strip().lower()", True),
    ("state.score > 5 and state.score <= 7", True),
    ("not state.tags", False),
    ("len(state.tags) == 2 and 'a' in state.tags", True),
    ("state.user.plan in ['pro', 'team']", True),
    ("state['user']['plan'].upper()", "PRO"),
    ("state.tags[-1]", "b"),
    ("state.score * 2 + 1", 15),
    ("int('3') + 1", 4),
    ("'x' if state.score > 10 else 'y'", "y"),
    ("state.get('nope') is None", True),
])
def test_allowed(source: str, expected: object) -> None:
    assert compile_expression(source).evaluate(STATE) == expected


@pytest.mark.parametrize("source", [
    "().__class__.__bases__[0].__subclasses__()",
    "state.__class__",
    "state.classification.__len__()",
    "__import__('os').system('id')",
    "open('/etc/passwd').read()",
    "eval('1')",
    "getattr(state, 'x')",
    "[x for x in state.tags]",
    "{k: 1 for k in 'ab'}",
    "lambda: 1",
    "(lambda x: x)(1)",
    "type(state)",
    "x",
    "state.classification.format(1)",
    "len(*state.tags)",
    "max(state.tags, key=len)",
    "(y := 1)",
    "f'{state.score}'",
    "b'bytes'",
    "state[0:1]",
    "1 if True else __import__('os')",
])
def test_refused_at_compile(source: str) -> None:
    with pytest.raises(ExpressionError) as info:
        compile_expression(source)
    assert "not allowed" in str(info.value) or "invalid expression" in str(info.value)


def test_refusal_names_the_offender_and_column() -> None:
    with pytest.raises(ExpressionError, match=r"function 'open' .* \(column 12\)"):
        compile_expression("state.a or open('x')")


@pytest.mark.parametrize("source", [
    "9 ** 9 ** 9",
    "2 ** 100000",
    "'a' * 10 ** 9",
    "state.tags * 100000000",
    "10 ** 60 * 10 ** 60 * 10 ** 60 * 10 ** 60 * 10 ** 60 * 10 ** 60 * 10 ** 60 * 10 ** 60"
    " * 10 ** 60 * 10 ** 60 * 10 ** 60 * 10 ** 60 * 10 ** 60 * 10 ** 60 * 10 ** 60 * 10 ** 60"
    " * 10 ** 60 * 10 ** 60 * 10 ** 60 * 10 ** 60 * 10 ** 60 * 10 ** 60",
])
def test_huge_values_are_refused_when_evaluated(source: str) -> None:
    with pytest.raises(ExpressionError):
        compile_expression(source).evaluate(STATE)


def test_deep_nesting_and_size_are_bounded() -> None:
    with pytest.raises(ExpressionError):
        compile_expression("[" * 50 + "]" * 50)
    with pytest.raises(ExpressionError):
        compile_expression(" + ".join(["1"] * 300))
    with pytest.raises(ExpressionError):
        compile_expression("not " * 100 + "1")


def test_missing_state_path_is_reported() -> None:
    with pytest.raises(ExpressionError, match=r"the state has no 'nope\.x'"):
        compile_expression("state.nope.x == 1").evaluate(STATE)
