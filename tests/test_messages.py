"""The message types behave as frozen, slotted, keyword-only dataclasses: equality and
hashing by fields, repr, immutability, copying, pickling and `dataclasses` introspection."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from decimal import Decimal
from typing import Any

import pytest

from agentloom import messages as m

ALL_TYPES: list[type[Any]] = [
    m.TextPart, m.ImagePart, m.DocumentPart, m.AudioPart, m.ToolCallPart, m.ToolResultPart,
    m.ReasoningPart, m.Message, m.Usage, m.ToolSpec, m.NamedToolChoice, m.ReasoningConfig,
    m.ResponseFormat, m.ModelRequest, m.ModelResponse, m.TextDelta, m.ReasoningDelta,
    m.ToolCallDelta, m.UsageEvent, m.FinishEvent,
]


def _sample() -> list[object]:
    usage = m.Usage(input_tokens=3, output_tokens=5, cost_usd=Decimal("0.01"))
    text = m.TextPart(text="hi")
    return [
        text, m.ImagePart(data=b"\x89PNG"), m.DocumentPart(url="https://x/y.pdf"),
        m.AudioPart(data=b"RIFF"), m.ToolCallPart(id="c1", name="f", arguments="{}"),
        m.ToolResultPart(call_id="c1", name="f", content="ok", is_error=True),
        m.ReasoningPart(text="hmm", signature="sig"), m.Message.user("hi", name="ann"),
        usage, m.ToolSpec(name="f"), m.NamedToolChoice(name="f"),
        m.ReasoningConfig(enabled=True, budget_tokens=100), m.ResponseFormat(),
        m.ModelRequest(model="x", messages=(m.Message.user("hi"),), extra={"seed": 1}),
        m.ModelResponse(parts=(text,), usage=usage, finish_reason="stop", model="x",
                        provider="openai"),
        m.TextDelta(text="h"), m.ReasoningDelta(), m.ToolCallDelta(index=0),
        m.UsageEvent(usage=usage), m.FinishEvent(finish_reason="stop"),
    ]


@pytest.mark.parametrize("value", _sample(), ids=lambda v: type(v).__name__)
def test_value_behaviour(value: object) -> None:
    cls = type(value)
    fields = dataclasses.fields(value)  # type: ignore[arg-type]
    twin = cls(**{f.name: getattr(value, f.name) for f in fields})
    assert twin == value and (twin != value) is False
    assert value != object() and value != 1
    assert repr(value) == (f"{cls.__qualname__}("
                           + ", ".join(f"{f.name}={getattr(value, f.name)!r}" for f in fields)
                           + ")")
    assert copy.copy(value) == value and copy.deepcopy(value) == value
    assert pickle.loads(pickle.dumps(value)) == value
    assert dataclasses.replace(value) == value  # type: ignore[type-var]
    assert not hasattr(value, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(value, fields[0].name, None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        delattr(value, fields[0].name)
    # A new attribute is refused too (Python 3.11's slotted frozen dataclasses say so with
    # a TypeError rather than FrozenInstanceError); the value is unchanged either way.
    with pytest.raises((dataclasses.FrozenInstanceError, TypeError)):
        value.not_a_field = 1  # type: ignore[attr-defined]


def test_equality_and_hash_follow_every_field() -> None:
    a = m.ToolCallPart(id="1", name="f", arguments="{}")
    assert a != m.ToolCallPart(id="1", name="f", arguments="{ }")
    assert hash(a) == hash(m.ToolCallPart(id="1", name="f", arguments="{}"))
    assert m.NamedToolChoice(name="f") != m.NamedToolChoice(name="g")
    assert len({m.NamedToolChoice(name="f"), m.NamedToolChoice(name="f")}) == 1
    # Same fields, different types: never equal (as generated dataclasses).
    assert m.TextDelta(text="x", kind="text_delta") != m.TextPart(text="x")
    with pytest.raises(TypeError):
        hash(m.ToolSpec(name="f"))  # a dict field: unhashable, as before


def test_keyword_only_defaults_and_fresh_factories() -> None:
    with pytest.raises(TypeError):
        m.TextPart("hi")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        m.TextPart()  # type: ignore[call-arg]
    one = m.ModelRequest(model="x", messages=())
    two = m.ModelRequest(model="x", messages=())
    assert one.extra == {} and one.extra is not two.extra and one.headers is not two.headers
    assert m.ToolSpec(name="f").parameters == {"type": "object", "properties": {}}
    assert m.ToolSpec(name="f").parameters is not m.ToolSpec(name="f").parameters
    assert one.replace(model="y").model == "y"
    assert (m.Usage(input_tokens=1) + m.Usage(output_tokens=2)).total_tokens == 3


def test_dataclass_introspection_matches_the_declared_fields() -> None:
    for cls in ALL_TYPES:
        assert cls.__match_args__ == ()
        names = tuple(f.name for f in dataclasses.fields(cls))
        assert cls.__slots__ == names
        assert dataclasses.is_dataclass(cls)
        assert all(f.kw_only for f in dataclasses.fields(cls))
    defaults = {f.name: f for f in dataclasses.fields(m.ModelRequest)}
    assert defaults["extra"].default_factory is dict
    assert defaults["stream"].default is False
    assert dataclasses.asdict(m.Message.user("x")) == {
        "role": "user", "parts": ({"text": "x", "kind": "text"},), "name": None}


def test_pattern_matching_by_keyword() -> None:
    match m.TextPart(text="hi"):
        case m.TextPart(text=text):
            assert text == "hi"
        case _:
            pytest.fail("no match")
