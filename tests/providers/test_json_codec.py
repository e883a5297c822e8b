"""The wire modules' JSON helpers give what `json.dumps`/`json.loads` give, errors too."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentloom.providers._json import dump_body, load_body

BODIES: list[Any] = [
    {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]},
    {"text": "é ✓ \u2028 \"quoted\" \\ back\nslash\t", "n": [1, 2.5, -0.0, 1e300, None]},
    {"nested": {"a": [True, False, {"b": []}], "c": {}}, "big": 10**30},
    {"nan": float("nan"), "inf": float("inf"), "neg": float("-inf")},
    ["a", 1, None],
    "a string",
    42,
]


@pytest.mark.parametrize("obj", BODIES)
def test_dump_body_is_byte_for_byte_json_dumps(obj: Any) -> None:
    expected = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    assert dump_body(obj) == expected


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
]


@pytest.mark.parametrize("data", GOOD)
def test_load_body_reads_what_json_loads_reads(data: bytes | str) -> None:
    assert load_body(data) == json.loads(data)


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
