"""The serializer writes the values every step stores (a step result, its usage, a model
reply, a delta) as JSON text directly: the bytes must be those of the generic path
(`_encode`, then the C encoder), so stored rows and old databases read the same."""

from __future__ import annotations

import enum
import random
from collections import OrderedDict
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from agentloom.messages import (
    ImagePart,
    Message,
    ModelResponse,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    Usage,
    VendorPart,
)
from agentloom.store import EncodeOnce, JsonSerializer, StoreError
from agentloom.store._serde import _encode, _to_json


def generic(value: Any) -> str:
    return _to_json(_encode(value))


class _Color(enum.IntEnum):
    RED = 1


class _Name(str):
    pass


TEXTS = ["", "ok", "naïve", "日本", "🧵", 'q"\\', "a\nb\t\x00\x1f", "\u2028", "x" * 200]
NUMBERS = [0, 1, -7, 10**20, 0.0, -0.0, 0.1, 1e300, 7065.031033472, 2.5e-308, True, False]


def _usage(rng: random.Random) -> Usage:
    return Usage(input_tokens=rng.choice([None, 0, 10]), output_tokens=rng.choice([None, 5]),
                 cache_read_tokens=rng.choice([None, 3]), reasoning_tokens=rng.choice([None, 2]),
                 cost_usd=rng.choice([None, Decimal("0.0012"), Decimal("1E-7")]),
                 input_includes_cached=rng.choice([None, True, False]),
                 cost_estimated=rng.random() < 0.5)


def _part(rng: random.Random) -> Any:
    return rng.choice([
        TextPart(text=rng.choice(TEXTS)),
        ToolCallPart(id="c1", name="t", arguments='{"q": 1}'),
        ImagePart(data=b"\x89PNG\x00"),
        ReasoningPart(text="hm", signature="s"),
        VendorPart(provider="openai", data={"type": "x", "n": (1, 2), "f": 0.5}),
    ])


def _value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(16 if depth < 4 else 4)
    if kind == 0:
        return rng.choice(TEXTS)
    if kind == 1:
        return rng.choice(NUMBERS)
    if kind == 2:
        return None
    if kind == 3:
        return rng.choice([Decimal("0.12"), b"\x00\xff", datetime(2026, 1, 2, tzinfo=UTC),
                           _Color.RED, _Name("sub")])
    if kind in (4, 5, 6):
        return {rng.choice(["id", "status", "output", "é", "k" + str(rng.randrange(9))]):
                _value(rng, depth + 1) for _ in range(rng.randrange(6))}
    if kind == 7:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if kind == 8:
        return tuple(_value(rng, depth + 1) for _ in range(rng.randrange(3)))
    if kind == 9:
        return _usage(rng)
    if kind == 10:
        return ModelResponse(parts=tuple(_part(rng) for _ in range(rng.randrange(3))),
                             usage=_usage(rng), finish_reason=rng.choice([None, "stop"]),
                             model="m", provider="p", response_id=rng.choice([None, "r1"]),
                             time_to_first_token=rng.choice([None, 0.25]))
    if kind == 11:
        return Message.user(rng.choice(TEXTS))
    if kind == 12:
        return _part(rng)
    if kind == 13:
        return OrderedDict([("b", 1), ("a", _value(rng, depth + 1))])
    if kind == 14:
        return EncodeOnce({"id": "s1", "usage": _usage(rng)})
    return {"state": {"o1": "ok"}, "step_results": {"s1": {
        "id": "s1", "status": "success", "output": _value(rng, depth + 1), "attempts": 1,
        "usage": _usage(rng), "started_at": 7065.03, "duration_seconds": 0.0003}}}


def test_the_text_is_the_generic_paths_over_varied_values() -> None:
    rng = random.Random(13)
    serde = JsonSerializer()
    for _ in range(2000):
        value = _value(rng)
        assert serde.dumps(value) == generic(value), value


@pytest.mark.parametrize("bad", [
    {"x": float("nan")}, {"a": [1, {"b": float("inf")}]}, {1: "int key"},
    {"ok": 1, "n": float("nan"), 2: "key after"}, {"x": object()},
    ModelResponse(parts=(), usage=Usage(), finish_reason=None, model="m", provider="p",
                  time_to_first_token=float("nan")),
])
def test_what_the_generic_path_refuses_is_refused_the_same_way(bad: Any) -> None:
    with pytest.raises(Exception) as old:
        try:
            generic(bad)
        except (ValueError, RecursionError) as exc:
            raise StoreError(f"cannot store a value as JSON: {exc}") from exc
    with pytest.raises(type(old.value)) as new:
        JsonSerializer().dumps(bad)
    assert str(new.value) == str(old.value)
