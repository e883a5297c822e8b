"""The store's JSON text: the encoder made once writes what `json.dumps` with the same
options writes, and refuses what it refuses."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from agentloom.messages import ModelResponse, TextPart, Usage, VendorPart
from agentloom.store import JsonSerializer, StoreError

_REFERENCE = json.JSONEncoder(separators=(",", ":"), allow_nan=False)


@pytest.mark.parametrize("value", [
    {"a": 1, "b": [1.5, None, True, "é\"x\n"], "c": {"d": []}},
    "text", 3, None, [], {},
    [{"k": -0.0}, {"k": 1e300}, ("t", 2)],
])
def test_plain_values_are_written_as_json_dumps_writes_them(value: Any) -> None:
    assert JsonSerializer().dumps(value) == _REFERENCE.encode(value)


def test_tagged_values_come_back_as_they_were() -> None:
    serde = JsonSerializer()
    response = ModelResponse(parts=(TextPart(text="ok"),),
                             usage=Usage(input_tokens=3, cost_usd=Decimal("0.01")),
                             finish_reason="stop", model="m", provider="p")
    value = {"r": response, "cost": Decimal("1.20"), "raw": b"\x00\xff"}
    assert serde.loads(serde.dumps(value)) == value


def test_what_json_cannot_hold_is_refused_by_name() -> None:
    serde = JsonSerializer()
    with pytest.raises(StoreError, match="Out of range float"):
        serde.dumps({"x": float("nan")})
    with pytest.raises(StoreError, match="dict key of type int"):
        serde.dumps({"x": {1: "a"}})
    looped: dict[str, Any] = {}
    looped["self"] = looped  # a reply's part, which the walk hands to the encoder as it is
    reply = ModelResponse(parts=(VendorPart(provider="x", data=looped),), usage=Usage(),
                          finish_reason=None, model="m", provider="x")
    with pytest.raises(StoreError, match="cannot store a value as JSON"):
        serde.dumps({"r": reply})
