"""Template rules a mutation run found untested: a step with no output, values rendered as
JSON (pydantic models, non-ASCII, what JSON can't hold), `{args.x}`, the brace rules at
the end of a template, and each error message."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from pydantic import BaseModel

from agentloom.errors import TemplateError
from agentloom.workflow.lang.templates import Ref, Scope, compile_template, to_text


def render(source: str, state: dict[str, Any] | None = None, steps: dict[str, str] | None = None,
           args: dict[str, Any] | None = None) -> str:
    return compile_template(source).render(Scope(state or {}, steps or {}, args))


class Invoice(BaseModel):
    total: float
    when: dt.date
    owner: str


def test_a_step_that_produced_no_output_is_an_error_not_null() -> None:
    with pytest.raises(TemplateError, match=r"\{steps.draft.output\}: step 'draft' has no output"):
        render("Review: {steps.draft.output}", steps={"other": "x"})
    assert render("Review: {steps.draft.output}", steps={"draft": ""}) == "Review: "
    assert render("{steps.draft.output}!", steps={"draft": "text"}) == "text!"


def test_a_pydantic_value_renders_as_its_json() -> None:
    invoice = Invoice(total=12.5, when=dt.date(2026, 1, 2), owner="Zoë")
    assert render("I: {state.inv}", {"inv": invoice}) == (
        'I: {"total": 12.5, "when": "2026-01-02", "owner": "Zoë"}'
    )
    # Inside a list, a model is not JSON: it renders through str(), quoted.
    assert render("{state.items}", {"items": [invoice]}) == (
        "[\"total=12.5 when=datetime.date(2026, 1, 2) owner='Zoë'\"]"
    )
    assert to_text(invoice) == '{"total": 12.5, "when": "2026-01-02", "owner": "Zoë"}'


def test_non_ascii_is_kept_as_is() -> None:
    assert render("{state.d}", {"d": {"name": "Zoë", "city": "東京"}}) == (
        '{"name": "Zoë", "city": "東京"}'
    )
    assert render("héllo {state.s} ✓", {"s": "wörld"}) == "héllo wörld ✓"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("plain", "plain"),
        (3, "3"),
        (2.5, "2.5"),
        (True, "true"),
        (None, "null"),
        ([1, "a"], '[1, "a"]'),
        ({"k": [1]}, '{"k": [1]}'),
        (dt.date(2026, 1, 2), '"2026-01-02"'),  # not JSON: its str, quoted as a JSON string
        (float("nan"), "NaN"),
    ],
)
def test_values_render_as_text(value: Any, text: str) -> None:
    assert to_text(value) == text
    assert render("{state.v}", {"v": value}) == text


def test_a_str_subclass_renders_as_json_text_and_a_circular_value_as_str() -> None:
    class Tag(str):
        pass

    assert to_text(Tag("x")) == '"x"'
    loop: list[Any] = []
    loop.append(loop)
    assert to_text(loop) == "[[...]]"


def test_a_single_reference_keeps_the_value_and_anything_else_is_text() -> None:
    scope = Scope({"n": 3, "l": [1]}, {"s": "out"}, {"a": 7})
    assert compile_template("{state.n}").value(scope) == 3
    assert compile_template("{state.l}").value(scope) == [1]
    assert compile_template("{args.a}").value(scope) == 7
    assert compile_template("{steps.s.output}").value(scope) == "out"
    assert compile_template("n={state.n}").value(scope) == "n=3"
    assert compile_template("literal").value(scope) == "literal"


def test_args_are_read_only_inside_functions() -> None:
    assert render("{args.city}", args={"city": "Oslo"}) == "Oslo"
    with pytest.raises(TemplateError, match=r"\{args.city\}: no argument 'city'"):
        render("{args.city}", args={})
    with pytest.raises(TemplateError, match="args exist only in a function's steps"):
        render("{args.city}")


def test_refs_and_step_ids() -> None:
    template = compile_template("{state.a} and {steps.b.output} and {args.c} {{x}}")
    assert [r.root for r in template.refs] == ["state", "steps", "args"]
    assert [r.step_id for r in template.refs] == [None, "b", None]
    assert not template.is_literal
    assert compile_template("a {{b}}").is_literal
    assert compile_template("a {{b}}").parts == ("a {b}",)
    assert compile_template("").parts == ("",)
    assert compile_template("").render(Scope({}, {})) == ""


def test_literal_parts_next_to_each_other_are_merged() -> None:
    template = compile_template("a{{b}}c{state.x}d}}")
    assert template.parts == ("a{b}c", Ref("state", ("x",), "state.x"), "d}")


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("x {", r"unclosed '\{' at column 3"),
        ("{", r"unclosed '\{' at column 1"),
        ("{a {b}", r"unclosed '\{' at column 1"),
        ("a }", r"single '\}' at column 3"),
        ("}", r"single '\}' at column 1"),
        ("{}", r"empty '\{\}' at column 1"),
        ("{ }", r"empty '\{\}' at column 1"),
        ("{state}", r"\{state\} at column 1: name a state key"),
        ("{steps.x}", r"a step reference reads \{steps.<id>.output\}"),
        ("{steps.x.text}", r"a step reference reads"),
        ("{steps.x.output.y}", r"a step reference reads"),
        ("{steps[0].output}", r"a step reference reads"),
        ("{args}", r"unknown reference"),
        ("{a..b}", r"at column 1: .*write '\{\{' and '\}\}' for literal braces"),
    ],
)
def test_broken_templates_name_the_column(source: str, message: str) -> None:
    with pytest.raises(TemplateError, match=message):
        compile_template(source)


def test_a_doubled_brace_at_the_very_end_is_literal() -> None:
    assert render("a{{") == "a{"
    assert render("a}}") == "a}"
    assert render("{{}}") == "{}"


def test_a_bare_name_reads_the_state() -> None:
    assert render("{question}?", {"question": "why"}) == "why?"
    with pytest.raises(TemplateError, match=r"\{nope\}: the state has no 'nope'"):
        render("{nope}")


def test_a_bare_args_reference_suggests_the_state_key() -> None:
    with pytest.raises(TemplateError, match=r"unknown reference, .*; did you mean "
                                            r"\{state\.args\}\? \(write"):
        compile_template("{args}")
