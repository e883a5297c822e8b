"""`--state k=v` values are typed as YAML scalars; `--state-file` comes first."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentloom.cli import UsageError
from agentloom.cli._common import parse_state


def test_values_are_typed_and_dotted_keys_nest(tmp_path: Path) -> None:
    state = parse_state(["n=3", "f=0.5", "b=true", "s=hello world", "empty=", "none=null",
                         "list=[1, 2]", "colon=a: b", "report.title=T", "state.x=1"], None)
    assert state == {"n": 3, "f": 0.5, "b": True, "s": "hello world", "empty": "",
                     "none": None, "list": [1, 2], "colon": "a: b",
                     "report": {"title": "T"}, "x": 1}


def test_state_file_then_flags(tmp_path: Path) -> None:
    f = tmp_path / "s.yaml"
    f.write_text("a: 1\nb: {c: 2}\n")
    assert parse_state(["a=9", "b.d=3"], str(f)) == {"a": 9, "b": {"c": 2, "d": 3}}


@pytest.mark.parametrize("pair", ["k", "=v", "a..b=1", "[0]=x"])
def test_bad_pairs_are_usage_errors(pair: str) -> None:
    with pytest.raises(UsageError, match=r"--state"):
        parse_state([pair], None)


def test_state_file_must_be_a_mapping(tmp_path: Path) -> None:
    f = tmp_path / "s.json"
    f.write_text("[1, 2]")
    with pytest.raises(UsageError, match="expected a mapping"):
        parse_state([], str(f))
