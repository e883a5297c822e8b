"""Hostile workflow files: alias bombs, huge files, bad encodings. Each is refused with
one `file:line` line, in `validate` and `run` alike, with memory bounded."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest
from bounds_helpers import one_line, run_cli

from agentloom.cli import UsageError, main
from agentloom.cli._common import parse_state
from agentloom.errors import ConfigError, WorkflowError
from agentloom.pricing import PriceTable
from agentloom.workflow import load_workflow
from agentloom.workflow.load import yaml_source

PEAK_MB = 300


def laughs(indent: str) -> str:
    """Nine levels of nine aliases: 9**9 (387 million) strings once expanded."""
    rows = [f'{indent}a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    names = "abcdefghi"
    for prev, cur in pairwise(names):
        rows.append(f"{indent}{cur}: &{cur} [" + ",".join([f"*{prev}"] * 9) + "]")
    return "\n".join(rows) + "\n"


TAIL = """\
steps:
  - id: pick
    type: router
    conditions: []
    default: done
  - id: done
    type: tool
    depends_on: [pick]
    tool_name: file_read
    tool_args:
{args}
"""


def bomb_in_state(tmp_path: Path) -> Path:
    path = tmp_path / "laughs.yaml"
    path.write_text("name: laughs\nstate:\n" + laughs("  ")
                    + TAIL.format(args='      path: "x"'))
    return path


def test_alias_bomb_in_state_is_refused_by_run(tmp_path: Path) -> None:
    child = run_cli(["run", str(bomb_in_state(tmp_path)), "--no-checkpoint"], tmp_path)
    assert not child.killed, "hung"
    assert child.returncode == 1
    assert "laughs.yaml:" in child.stderr and "YAML bomb" in child.stderr, child.stderr
    assert "Traceback" not in child.stderr
    assert child.peak_rss_mb < PEAK_MB


def test_alias_bomb_under_tool_args_is_refused_by_validate(tmp_path: Path) -> None:
    path = tmp_path / "args.yaml"
    path.write_text("name: args\n" + TAIL.format(args=laughs("      ")))
    child = run_cli(["validate", str(path)], tmp_path)
    assert not child.killed, "hung"
    assert child.returncode == 1
    line = one_line(child.stderr.replace("1 problem found", ""))
    assert line.startswith(f"{path}:") and "YAML bomb" in line, child.stderr
    assert "MemoryError" not in child.stderr
    assert child.peak_rss_mb < PEAK_MB


def test_a_recursive_alias_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "rec.yaml"
    path.write_text("name: rec\nstate:\n  a: &a [*a]\n" + TAIL.format(args='      path: x'))
    with pytest.raises(WorkflowError, match=r"rec.yaml:3: YAML nested deeper"):
        load_workflow(path)


def _cli_err(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr().err


def test_a_non_utf8_byte_is_one_line_naming_file_and_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"name: x\n# caf\xe9\n" + TAIL.format(args="      path: x").encode())
    code, err = _cli_err(capsys, "run", str(path), "--no-checkpoint")
    assert code == 1
    assert err.splitlines()[0].startswith(f"{path}:2: not valid UTF-8: byte 0xe9")
    assert "Traceback" not in err


def test_a_utf16_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "u16.yaml"
    path.write_bytes(("name: x\n" + TAIL.format(args="      path: x")).encode("utf-16"))
    code, err = _cli_err(capsys, "validate", str(path))
    assert code == 1
    assert "UTF-16-encoded; save it as UTF-8" in err.splitlines()[0]


def test_utf16_without_a_bom_is_named_too(tmp_path: Path) -> None:
    path = tmp_path / "u16le.yaml"
    path.write_bytes("name: x\n".encode("utf-16-le"))
    with pytest.raises(WorkflowError, match="NUL bytes"):
        load_workflow(path)


def test_a_utf8_bom_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "bom.yaml"
    path.write_bytes(b"\xef\xbb\xbfname: bom\n" + TAIL.format(args="      path: x").encode())
    assert load_workflow(path).name == "bom"


def test_a_huge_file_is_refused_unread(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "keys.yaml"
    with path.open("w") as f:  # the 5 MB file of 200k keys
        f.write("name: big\nstate:\n")
        f.writelines(f"  key_number_{i:07d}: {i}\n" for i in range(200_000))
    assert path.stat().st_size > 5_000_000
    code, err = _cli_err(capsys, "validate", str(path))
    assert code == 1
    assert err.strip() == f"{path}: workflow file is larger than 1 MB"


def test_many_plain_keys_under_the_size_cap_are_refused_by_count(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yaml_source, "MAX_NODES", 1000)  # the real cap, 50,000, works alike
    path = tmp_path / "keys.yaml"
    path.write_text("name: big\nstate:\n" + "".join(f"  k{i}: 1\n" for i in range(600)))
    with pytest.raises(WorkflowError, match=r"keys.yaml:3: YAML expands to more than 1000 "
                                            r"values here$"):
        load_workflow(path)


def test_state_file_and_state_flags_have_the_same_bounds(tmp_path: Path) -> None:
    state_file = tmp_path / "state.yaml"
    state_file.write_text(laughs(""))
    with pytest.raises(UsageError, match="YAML bomb"):
        parse_state([], str(state_file))
    flow = "{" + laughs("").replace("\n", ", ").rstrip(", ") + "}"
    with pytest.raises(UsageError, match="YAML bomb"):
        parse_state([f"x={flow}"], None)
    state_file.write_bytes(b"a: \xff\n")
    with pytest.raises(UsageError, match="not valid UTF-8"):
        parse_state([], str(state_file))
    assert parse_state(["x=[1, 2]", "y=not: yaml: [", "z=3"], None) == {
        "x": [1, 2], "y": "not: yaml: [", "z": 3}


def test_batch_reads_the_workflow_with_the_same_bounds(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inputs = tmp_path / "in.jsonl"
    inputs.write_text('{"id": "a"}\n')
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"name: x\n# caf\xe9\n" + TAIL.format(args="      path: x").encode())
    code, err = _cli_err(capsys, "batch", str(path), str(inputs))
    assert code == 1
    assert err.strip() == (f"{path}:2: not valid UTF-8: byte 0xe9 at column 6; "
                           "save the file as UTF-8")
    code, err = _cli_err(capsys, "batch", str(bomb_in_state(tmp_path)), str(inputs))
    assert code == 1 and "YAML bomb" in err


def price_bomb(tmp_path: Path, providers: int = 300) -> Path:
    """Each provider aliases one mapping of 300 models: 90,000 prices from 12 KB."""
    path = tmp_path / "prices.yaml"
    rows = ["models: &m"] + [f"  model{i}: {{input: 1, output: 2}}" for i in range(300)]
    rows += [f"p{i}: *m" for i in range(providers)]
    path.write_text("\n".join(rows) + "\n")
    return path


def test_a_price_file_is_measured_before_its_prices_are_built(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        PriceTable.from_file(price_bomb(tmp_path))
    assert str(caught.value) == (
        f"price file {tmp_path / 'prices.yaml'}:1: YAML expands to more than 50000 values "
        "here (aliases repeating aliases: a YAML bomb?)")


def test_a_price_file_under_the_bound_keeps_its_aliases(tmp_path: Path) -> None:
    table = PriceTable.from_file(price_bomb(tmp_path, providers=3))
    assert table.lookup("p2", "model299") == table.lookup("p0", "model0")
    assert table.lookup("p2", "model299") is not None


def test_a_workflows_price_file_bomb_fails_the_run_in_one_line(tmp_path: Path) -> None:
    price_bomb(tmp_path)
    flow = tmp_path / "flow.yaml"
    flow.write_text("name: priced\nconfig:\n  prices: prices.yaml\n"
                    "steps:\n  - id: ask\n    type: llm_call\n    prompt: hi\n")
    child = run_cli(["run", str(flow), "--no-checkpoint"], tmp_path)
    assert not child.killed, "hung"
    assert child.returncode == 1
    assert one_line(child.stderr) == (
        f"agentloom: error: price file {tmp_path / 'prices.yaml'}:1: YAML expands to more "
        "than 50000 values here (aliases repeating aliases: a YAML bomb?)"), child.stderr
    child = run_cli(["run", str(flow), "--no-checkpoint", "--prices", "prices.yaml"],
                    tmp_path)
    assert child.returncode == 2
    assert "--prices: price file prices.yaml:1: YAML expands" in child.stderr
