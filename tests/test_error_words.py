"""A message about data a user wrote names the data's kind in the words of YAML and JSON
(`holds text`, `is a mapping`), not Python's (`holds a str`, `is a dict`, `a int`)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from agentloom.errors import kind_of


@pytest.mark.parametrize(("value", "words"), [
    (None, "null"), (True, "true/false"), (3, "a number"), (2.5, "a number"),
    ("x", "text"), ({"a": 1}, "a mapping"), ([1], "a list"), ((1,), "a list"),
    (Decimal(1), "a Decimal"), (object(), "an object"), (b"x", "a bytes"),
])
def test_each_kind_has_its_article(value: object, words: str) -> None:
    assert kind_of(value) == words
