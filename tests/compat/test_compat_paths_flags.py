"""Two drop-in defects: `StateManager` keys are the engine's state paths (`items[0].name`),
and their command-line flags are translated only before a `--`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentloom.cli import main
from agentloom.cli.public_flags import translate
from agentloom.compat import StateManager
from agentloom.workflow.lang.paths import MISSING, lookup, parse_path

STATE: dict[str, Any] = {"items": [{"name": "a"}, {"name": "b"}], "matrix": [[1, 2], [3, 4]],
                         "user": "alice", "my key": {"0": "zero"}}


# --- 1. StateManager bracket paths -------------------------------------------------------

@pytest.mark.parametrize(("key", "expected"), [
    ("items[0].name", "a"),
    ("items[1]", {"name": "b"}),
    ("items[-1].name", "b"),
    ("matrix[0][1]", 2),
    ("matrix[1][-2]", 3),
])
async def test_get_reads_bracket_paths(key: str, expected: Any) -> None:
    assert await StateManager(initial_state=STATE).get(key) == expected


@pytest.mark.parametrize("key", ["items[2]", "items[-3].name", "items[9].name", "matrix[0][5]",
                                 "user[0]", "items.name", "nothing[0]"])
async def test_get_of_a_missing_item_is_the_default_as_theirs(key: str) -> None:
    assert await StateManager(initial_state=STATE).get(key, "D") == "D"


async def test_set_and_update_write_through_bracket_paths() -> None:
    sm = StateManager(initial_state=STATE)
    await sm.set("items[1]", "x")
    await sm.set("items[0].name", "n")
    await sm.set("matrix[-1][0]", 30)
    assert await sm.update("matrix[0][0]", lambda v: v + 10) == 11
    snapshot = await sm.get_state_snapshot()
    assert snapshot["items"] == [{"name": "n"}, "x"]
    assert snapshot["matrix"] == [[11, 2], [30, 4]]
    assert STATE["items"] == [{"name": "a"}, {"name": "b"}]  # the initial state is copied


@pytest.mark.parametrize(("key", "message"), [
    ("items[2]", "cannot write 'items[2]': 'items' is a list of 2, with no item [2]"),
    ("items[-3].name", "'items' is a list of 2, with no item [-3]"),
    ("new[0]", "cannot write 'new[0]': there is no list 'new'"),
    ("new.deep[1].x", "there is no list 'new.deep'"),
])
async def test_set_of_a_missing_index_is_an_index_error_and_changes_nothing(
        key: str, message: str) -> None:
    # Theirs: IndexError, lists are not grown by set(). Unlike theirs, `new[0]` leaves no
    # empty `new` mapping behind.
    sm = StateManager(initial_state=STATE)
    with pytest.raises(IndexError, match=message.replace("[", r"\[")):
        await sm.set(key, 1)
    with pytest.raises(IndexError):
        await sm.update(key, lambda v: 1)
    assert await sm.get_state_snapshot() == STATE


@pytest.mark.parametrize("key", ["user.name", "user[0]", "items.name", "items[0].name.x"])
async def test_set_of_a_name_below_no_mapping_is_a_type_error(key: str) -> None:
    sm = StateManager(initial_state=STATE)
    with pytest.raises(TypeError, match=r"^cannot write .*not a mapping$"):
        await sm.set(key, 1)
    assert await sm.get_state_snapshot() == STATE


@pytest.mark.parametrize("key", ["items[0].name", "items[-1]", "matrix[1][0]", "user",
                                 "items[7]", "matrix[0].x", "a.b"])
async def test_a_script_and_a_workflow_read_the_same_places(key: str) -> None:
    expected = lookup(STATE, parse_path(key))
    got = await StateManager(initial_state=STATE).get(key, MISSING)
    assert got == expected


async def test_keys_our_grammar_has_no_words_for_stay_literal_keys() -> None:
    # As theirs: a segment such as "my key" or "0" is a mapping's key as written.
    sm = StateManager(initial_state=STATE)
    assert await sm.get("my key.0") == "zero"
    await sm.set("my key.1", "one")
    await sm.set("café", {"prix": [5]})
    await sm.set("café.prix[0]", 6)
    snapshot = await sm.get_state_snapshot()
    assert snapshot["my key"] == {"0": "zero", "1": "one"}
    assert snapshot["café"] == {"prix": [6]}


# --- 2. their flags stop at `--` ---------------------------------------------------------

def test_words_after_a_double_dash_are_not_translated(tmp_path: Path) -> None:
    store = ["--store", str(Path("d") / "runs.db")]
    assert translate(["resume", "--approve", "--", "--lite"]) == [
        "resume", "--approve", "--", "--lite"]
    assert translate(["resume", "--checkpoint-dir", "d", "--", "--checkpoint-dir"]) == [
        "resume", *store, "--", "--checkpoint-dir"]
    # The store flag goes before the `--`, where it is still a flag.
    assert translate(["resume", "--checkpoint-dir", "d", "--", "r1"]) == [
        "resume", *store, "--", "r1"]
    assert translate(["run", "--lite", "--", "-b"]) == ["run", "--", "-b"]
    ours = tmp_path / "rec.json"
    ours.write_text(json.dumps({"format": "agentloom-recording", "exchanges": []}))
    assert translate(["replay", "-r", str(ours), "--observability", "--", "--observability"]
                     ) == ["replay", str(ours), "--", "--observability"]


def test_flag_values_are_passed_on_as_typed() -> None:
    # Each word is one argument: a value holding their flag's name is no flag.
    line = ["run", "wf.yaml", "-s", "x=--lite", "--state=--lite", "-s",
            "y=--checkpoint-dir", "--lite"]
    assert translate(line) == line[:-1]


def test_resume_takes_a_run_id_spelt_like_their_flag(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    for run_id in ("--lite", "--checkpoint-dir"):
        code = main(["resume", "--approve", "--checkpoint-dir", "ck", "--", run_id])
        err = capsys.readouterr().err
        assert code == 1, err
        assert f"no run '{run_id}' in the store {Path('ck') / 'runs.db'}" in err


def test_run_takes_a_workflow_file_spelt_like_their_flag(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "-b").write_text("name: echo\nconfig:\n  provider: mock\n"
                                 "  responses_file: mock.json\nsteps:\n  - id: ask\n"
                                 "    type: llm_call\n    prompt: hi\n    output: answer\n")
    (tmp_path / "mock.json").write_text(json.dumps({"ask": "ok"}))
    code = main(["run", "--no-checkpoint", "--json", "--", "-b"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert json.loads(captured.out)["outputs"] == {"answer": "ok"}


async def test_get_gives_the_default_itself_as_theirs() -> None:
    default: list[str] = []
    assert await StateManager(initial_state=STATE).get("items[5]", default) is default
