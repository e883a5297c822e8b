"""The record makers build what the constructors build, and only for classes they fit."""

from __future__ import annotations

import dataclasses
import pickle
from decimal import Decimal
from typing import Any

import pytest

from agentloom.messages import ModelResponse, TextPart, Usage
from agentloom.providers import AttemptRecord, make_attempt, make_response, make_text, make_usage
from agentloom.providers._records import record_maker

CASES: list[tuple[Any, type, dict[str, Any]]] = [
    (make_usage, Usage, {}),
    (make_usage, Usage, {"input_tokens": 3, "output_tokens": 1, "cache_read_tokens": 2,
                         "cache_write_tokens": 0, "reasoning_tokens": 1,
                         "cost_usd": Decimal("0.0012"), "input_includes_cached": True,
                         "cost_estimated": True}),
    (make_text, TextPart, {"text": "hi"}),
    (make_response, ModelResponse, {"parts": (TextPart(text="hi"),), "usage": Usage(),
                                    "finish_reason": "stop", "model": "m", "provider": "p"}),
    (make_response, ModelResponse, {"parts": (), "usage": Usage(input_tokens=1),
                                    "finish_reason": None, "model": "m", "provider": "p",
                                    "response_id": "r", "time_to_first_token": 0.5}),
    (make_attempt, AttemptRecord, {"provider": "p", "model": "m", "attempt": 1, "ok": True,
                                   "duration_seconds": 0.25}),
    (make_attempt, AttemptRecord, {"provider": "p", "model": "m", "attempt": 2, "ok": False,
                                   "duration_seconds": 1.0, "wait_before_seconds": 0.5,
                                   "status": 503, "phase": "status", "request_sent": True,
                                   "error_type": "ProviderError"}),
]


@pytest.mark.parametrize(("make", "cls", "fields"), CASES)
def test_a_made_record_is_the_constructed_record(make: Any, cls: Any,
                                                 fields: dict[str, Any]) -> None:
    made: Any = make(**fields)
    built: Any = cls(**fields)
    assert type(made) is cls
    assert made == built and hash(made) == hash(built) and repr(made) == repr(built)
    assert dataclasses.astuple(made) == dataclasses.astuple(built)
    assert pickle.loads(pickle.dumps(made)) == built
    name = dataclasses.fields(built)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(made, name, None)


def test_a_maker_refuses_what_the_constructor_refuses() -> None:
    with pytest.raises(TypeError):
        make_text()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        make_usage(tokens=3)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        make_text("hi")  # type: ignore[misc]


@dataclasses.dataclass(slots=True, frozen=True, kw_only=True)
class _Checked:
    n: int

    def __post_init__(self) -> None:
        if self.n < 0:
            raise ValueError("negative")


@dataclasses.dataclass(slots=True, frozen=True, kw_only=True)
class _Factory:
    items: list[int] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True, kw_only=True)
class _NoSlots:
    n: int = 0


@dataclasses.dataclass(slots=True, frozen=True)
class _Positional:
    n: int


@pytest.mark.parametrize("cls", [_Checked, _Factory, _NoSlots, _Positional])
def test_a_class_the_maker_does_not_fit_gets_its_own_constructor(cls: type) -> None:
    assert record_maker(cls) is cls
