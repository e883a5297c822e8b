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


@pytest.mark.parametrize(("pair", "said"), [
    # Was {"items": {0: "x"}}: an int key, which a checkpoint's JSON turns into "0".
    ("items[0]=x", "cannot write 'items[0]': there is no list 'items'"),
    ("report.items[0].title=x", "cannot write 'report.items[0].title': there is no list "
                                "'report.items'"),
    ("none[1]=x", "cannot write 'none[1]': there is no list 'none'"),
    ("mapping[0]=x", "cannot write 'mapping[0]': 'mapping' holds a mapping, not a list"),
])
def test_an_index_where_there_is_no_list_is_a_usage_error(tmp_path: Path, pair: str,
                                                          said: str) -> None:
    f = tmp_path / "s.yaml"
    f.write_text("none: null\nmapping: {a: 1}\nlist: [a, b]\n")
    with pytest.raises(UsageError) as info:
        parse_state([pair], str(f))
    assert str(info.value) == f"--state {pair!r}: {said}"


def test_an_index_into_a_list_still_writes(tmp_path: Path) -> None:
    f = tmp_path / "s.yaml"
    f.write_text("list: [a, {t: b}]\n")
    assert parse_state(["list[0]=x", "list[-1].t=y", "report.title=T"], str(f)) == {
        "list": ["x", {"t": "y"}], "report": {"title": "T"}}


def test_run_says_so_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    from agentloom.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "flow.yaml").write_text(
        "name: f\nsteps:\n  - {id: a, type: llm_call, prompt: hi}\n")
    assert main(["run", "flow.yaml", "--no-checkpoint", "--state", "items[0]=x"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == ("agentloom: error: --state 'items[0]=x': cannot write "
                                 "'items[0]': there is no list 'items'\n")


def test_a_refused_path_leaves_the_state_as_it_was() -> None:
    # The same write as a step's `output: report.a.items[0]`: no mapping is left made.
    from agentloom.workflow.lang.paths import PathError, assign, parse_path

    state: dict[str, object] = {"report": {}}
    with pytest.raises(PathError, match=r"there is no list 'report\.a\.items'"):
        assign(state, parse_path("report.a.items[0]"), "x")
    assert state == {"report": {}}
