"""Templates: parsed once, rendered fast, values never evaluated again."""

from __future__ import annotations

import pytest

from agentloom.errors import TemplateError
from agentloom.workflow import compile_template
from agentloom.workflow.lang.templates import Scope


def render(source: str, state: dict, steps: dict | None = None) -> str:  # type: ignore[type-arg]
    return compile_template(source).render(Scope(state, steps or {}))


def test_paths_indexes_and_steps() -> None:
    state = {"a": {"b": "deep"}, "items": ["x", "y"], "n": 3}
    assert render("{state.a.b}/{state.items[0]}/{state.items[-1]}/{state.n}", state) == \
        "deep/x/y/3"
    assert render("{steps.s.output}!", {}, {"s": "raw"}) == "raw!"


def test_literal_braces_are_doubled() -> None:
    assert render('{{"k": {state.v}}}', {"v": 1}) == '{"k": 1}'


def test_values_are_text_never_evaluated_again() -> None:
    state = {"evil": "{state.secret}", "secret": "s3", "d": {"k": [1, None, True]}}
    assert render("{state.evil}", state) == "{state.secret}"
    assert render("{state.d}", state) == '{"k": [1, null, true]}'


@pytest.mark.parametrize("bad", [
    "{state.a", "oops }", "{}", "{state.}", "{state a}", "{steps.a}",
    "{steps.a.text}", "{state.a[}", "{state.__class__.x[}",
])
def test_broken_templates_fail_at_compile(bad: str) -> None:
    with pytest.raises(TemplateError) as info:
        compile_template(bad)
    assert str(info.value).startswith("Prompt template error: ")


def test_a_bare_name_is_a_state_key_as_in_the_public_agentloom() -> None:
    assert render("Answer: {topic} ({meta.n})", {"topic": "tides", "meta": {"n": 2}}) == (
        "Answer: tides (2)")
    with pytest.raises(TemplateError, match=r"the state has no 'topic'"):
        render("{topic}", {})


def test_missing_state_key_is_a_template_error() -> None:
    with pytest.raises(TemplateError, match=r"the state has no 'a\.b'"):
        render("{state.a.b}", {"a": {}})


def test_attributes_are_not_walked() -> None:
    # Only mappings, sequences and model fields: a str's methods are out of reach.
    with pytest.raises(TemplateError):
        render("{state.s.upper}", {"s": "x"})


def test_compiled_once_literal_fast_path() -> None:
    t = compile_template("no braces at all")
    assert t.is_literal and t.parts == ("no braces at all",)
    assert t.render(Scope({}, {})) == "no braces at all"


def test_single_reference_value_keeps_type() -> None:
    t = compile_template("{state.items}")
    assert t.value(Scope({"items": [1, 2]}, {})) == [1, 2]


def test_state_paths_are_bounded_in_depth_and_index_size() -> None:
    from agentloom.workflow.lang.paths import MAX_PATH_PARTS, PathError, parse_path

    deepest = ".".join(["a"] * MAX_PATH_PARTS)
    assert len(parse_path(deepest)) == MAX_PATH_PARTS
    with pytest.raises(PathError, match=rf"path 'a\.a\.a.*'\.\.\.: more than {MAX_PATH_PARTS} "
                                        r"parts$"):
        parse_path(deepest + ".a")
    assert parse_path("items[" + "9" * 18 + "]") == ("items", 10**18 - 1)
    # Past 18 digits an index is no index (int() of 5,000 digits raised a ValueError).
    with pytest.raises(PathError, match=r"^bad path 'items\[9+'\.\.\. at column 6$"):
        parse_path("items[" + "9" * 5000 + "]")
    with pytest.raises(TemplateError):
        compile_template("{state." + ".".join(["a"] * 100) + "}")
