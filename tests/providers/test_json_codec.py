"""The wire modules' JSON helpers give what `json.dumps`/`json.loads` give, errors too."""

from __future__ import annotations

import json
import math
import random
import struct
from typing import Any

import pytest

from agentloom.errors import NonFiniteNumber
from agentloom.providers import _json
from agentloom.providers._json import dump_body, load_body

BODIES: list[Any] = [
    {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]},
    {"text": "é ✓ \u2028 \"quoted\" \\ back\nslash\t", "n": [1, 2.5, -0.0, 1e300, None]},
    {"nested": {"a": [True, False, {"b": []}], "c": {}}, "big": 10**30},
    ["a", 1, None],
    "a string",
    42,
]


@pytest.mark.parametrize("obj", BODIES)
def test_dump_body_is_byte_for_byte_json_dumps(obj: Any) -> None:
    expected = json.dumps(obj, ensure_ascii=False, separators=(",", ":"),
                          allow_nan=False).encode("utf-8")
    assert dump_body(obj) == expected


@pytest.mark.parametrize(("obj", "where"), [
    ({"model": "m", "temperature": float("inf")}, "temperature is inf"),
    ({"tools": [{"parameters": {"maximum": float("-inf")}}]},
     "tools.0.parameters.maximum is -inf"),
    ({"messages": [{"n": 1.5}, {"n": float("nan")}]}, "messages.1.n is nan"),
    (float("nan"), "body is nan"),
])
def test_dump_body_refuses_a_non_finite_number_by_its_path(obj: Any, where: str) -> None:
    # json.dumps would write `Infinity` / `NaN`, which is not JSON: every provider
    # answers it with a 400 after the request was paid for in time.
    with pytest.raises(NonFiniteNumber, match=f"the request's {where}: JSON has no"):
        dump_body(obj)


def test_dump_body_refuses_what_json_dumps_refuses() -> None:
    loop: dict[str, Any] = {}
    loop["self"] = loop
    with pytest.raises(ValueError, match="Circular reference detected"):
        dump_body(loop)
    # The markers of the failed call do not leak into the next one.
    shared: dict[str, Any] = {"x": 1}
    assert dump_body({"a": shared, "b": shared}) == b'{"a":{"x":1},"b":{"x":1}}'
    with pytest.raises(TypeError, match="not JSON serializable"):
        dump_body({"bytes": b"x"})
    with pytest.raises(UnicodeEncodeError):
        dump_body({"lone": "\ud800"})


GOOD: list[bytes | str] = [
    b'{"a": 1, "b": [1, 2, {"c": null}]}',
    b'[1, 2, 3]',
    b'{"a": "\xc3\xa9"}',
    b'{"a": 1}\n',
    b'{"a": 1} \r\n\t',
    b'  {"a": 1}',
    b'"text"',
    b"12",
    b'\xef\xbb\xbf{"a": 1}',  # UTF-8 with a BOM: json.loads takes it as utf-8-sig
    '{"a": 1}'.encode("utf-16"),
    '{"a": 1}'.encode("utf-16-le"),
    '[1]'.encode("utf-32-le"),
    '{"a": "é"}',
    '[true, false]\n',
    '{"surrogate": "\\ud800"}',
    b'{"surrogate": "\\ud800", "then": 1}',
    b'{"a": "\xed\xa0\x80"}',  # a surrogate written as UTF-8: json.loads passes it
    b"[" * 200 + b"]" * 200,  # as deep as a body may be (`_jsontext.MAX_DEPTH`)
    b'{"a": 1, "a": 2, "b": 3}',  # the last of duplicate keys wins, in the first's place
    b'{"big": 123456789012345678901234567890, "neg": -0, "f": -0.0, "e": 1E2}',
    b'{"inf": 1e400, "tiny": 5e-324, "sub": 2.2250738585072011e-308}',
    bytearray(b'{"a": [1]}'),
]


@pytest.mark.parametrize("data", GOOD)
def test_load_body_reads_what_json_loads_reads(data: bytes | str) -> None:
    assert _typed(load_body(data)) == _typed(json.loads(data))


def test_load_body_reads_nan_and_infinity_as_json_loads_does() -> None:
    got = load_body(b'{"n": NaN, "i": Infinity, "m": -Infinity}')
    assert math.isnan(got["n"]) and got["i"] == math.inf and got["m"] == -math.inf


def _typed(value: Any) -> Any:
    """A value with every number's type and sign kept, for exact comparison: 1 == 1.0 and
    0.0 == -0.0 in Python, but json.loads tells them apart and so must load_body."""
    if isinstance(value, dict):
        return [(k, _typed(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [_typed(v) for v in value]
    if isinstance(value, float):
        return ("float", struct.pack("<d", value))
    return (type(value).__name__, value)


def _number(rng: random.Random, i: int) -> str:
    kind = i % 4
    if kind == 0:  # any finite double, as repr writes it
        while True:
            x = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
            if math.isfinite(x):
                return repr(x)
    if kind == 1:  # long mantissas, exponents from subnormal to overflow
        return (f"{rng.randint(0, 10 ** rng.randint(1, 25))}."
                f"{rng.randint(0, 10 ** rng.randint(1, 25))}e{rng.randint(-330, 310)}")
    if kind == 2:  # integers past 64 bits
        bound = 10 ** rng.randint(1, 40)
        return str(rng.randint(-bound, bound))
    digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 30)))
    return f"{digits.lstrip('0') or '0'}.{digits}E{rng.choice('+-')}{rng.randint(0, 400)}"


_PIECES = ['"', "\\", "/", "b", "f", "n", "r", "t", "u", "a", "0", "D", "8", "e", " ",
           "\x00", "\x1f", "\x7f", "é", "\u2028", "😀", "{", "}", "[", "]", ":", ","]


def _text(rng: random.Random, i: int) -> bytes:
    kind = i % 3
    if kind == 0:  # any code point, surrogates too, escaped or not
        s = "".join(chr(rng.choice([rng.randint(0, 0x7F), rng.randint(0x80, 0xFFFF),
                                    rng.randint(0x10000, 0x10FFFF),
                                    rng.randint(0xD800, 0xDFFF)]))
                    for _ in range(rng.randint(0, 12)))
        return json.dumps({s: [s]}, ensure_ascii=rng.random() < 0.5).encode(
            "utf-8", "surrogatepass")
    if kind == 1:  # any bytes between the quotes
        return b'{"k":"' + bytes(rng.randrange(256) for _ in range(rng.randint(0, 10))) + b'"}'
    return ('{"k":"' + "".join(rng.choice(_PIECES) for _ in range(rng.randint(0, 14)))
            + '"}').encode()


def _outcome(load: Any, data: bytes) -> Any:
    try:
        return _typed(load(data))
    except Exception as exc:  # the error is what is compared
        return (type(exc), str(exc))


def test_load_body_matches_json_loads_on_random_numbers_and_strings() -> None:
    """Seeded, so every run checks the same 12,000 bodies: numbers to the bit (the
    parsers round on their own), strings with escapes, surrogates, control characters
    and stray bytes. Each gives json.loads's value, or json.loads's error word for word."""
    rng = random.Random(20261206)
    for i in range(6000):
        number = f"[{_number(rng, i)}]".encode()
        assert _outcome(load_body, number) == _outcome(json.loads, number), number
        text = _text(rng, i)
        assert _outcome(load_body, text) == _outcome(json.loads, text), text


def test_a_well_formed_body_never_reaches_json_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(data: Any) -> Any:
        raise AssertionError("json.loads was called")

    monkeypatch.setattr(_json.json, "loads", refuse)
    assert load_body(b'{"choices": [{"message": {"content": "hi \\u00e9"}}], "n": 1.5}') == {
        "choices": [{"message": {"content": "hi é"}}], "n": 1.5}
    with pytest.raises(AssertionError, match=r"json\.loads was called"):
        load_body(b"\xef\xbb\xbf{}")  # a BOM: pydantic_core refuses, json.loads reads it


BAD: list[bytes | str] = [
    b"",
    b"{",
    b'{"a": 1} extra',
    b'{"a": 1}{"b": 2}',
    b"[1, 2",
    b'{"a": nope}',
    b"\xff\xfe\xfd",
    b'{"a": "\xff"}',
    b"{\x00",
    "{'a': 1}",
    '{"a": 1}\u00a0',  # a no-break space is not JSON whitespace
    "",
]


@pytest.mark.parametrize("data", BAD)
def test_load_body_fails_as_json_loads_fails(data: bytes | str) -> None:
    with pytest.raises(Exception) as expected:
        json.loads(data)
    with pytest.raises(type(expected.value)) as got:
        load_body(data)
    assert str(got.value) == str(expected.value)
