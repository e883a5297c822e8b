"""Input readers: JSONL, CSV and folders, with bad records reported by file:line."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentloom.errors import ConfigError
from agentloom.scale import BatchInput, InputProblem, read_inputs
from agentloom.scale._inputs import count_inputs


def test_jsonl_ids_line_numbers_and_bad_lines(tmp_path: Path) -> None:
    path = tmp_path / "inputs.jsonl"
    path.write_text(
        '{"id": "a", "text": "x"}\n'
        '{"text": "no id"}\n'
        "\n"
        "not json\n"
        "[1, 2]\n"
        '{"id": 7}\n'
        '{"id": "a", "text": "again"}\n'
        '{"id": true}\n',
        encoding="utf-8",
    )
    records = list(read_inputs(path))
    good = [r for r in records if isinstance(r, BatchInput)]
    bad = [r for r in records if isinstance(r, InputProblem)]
    assert [(r.id, r.source) for r in good] == [
        ("a", f"{path}:1"), ("2", f"{path}:2"), ("7", f"{path}:6")]
    assert good[0].state == {"id": "a", "text": "x"}
    assert [str(p) for p in bad] == [
        f"{path}:4: invalid JSON: Expecting value: line 1 column 1 (char 0)",
        f"{path}:5: not a JSON object (got an array)",
        f"{path}:7: duplicate id 'a' (first at {path}:1)",
        f"{path}:8: field 'id' must be a non-empty string or an integer",
    ]
    assert count_inputs(path) == 7


def test_csv_header_id_column_and_short_rows(tmp_path: Path) -> None:
    path = tmp_path / "inputs.csv"
    path.write_text('id,text\nr1,hello\nr2,"two, with comma"\nr3\n,empty id\n', encoding="utf-8")
    records = list(read_inputs(path))
    assert [(r.id, r.state) for r in records if isinstance(r, BatchInput)] == [
        ("r1", {"id": "r1", "text": "hello"}), ("r2", {"id": "r2", "text": "two, with comma"})]
    assert [str(r) for r in records if isinstance(r, InputProblem)] == [
        f"{path}:4: 1 fields, the header has 2", f"{path}:5: column 'id' is empty"]
    assert count_inputs(path) == 4


def test_csv_without_id_column_uses_row_numbers(tmp_path: Path) -> None:
    path = tmp_path / "q.csv"
    path.write_text("question\nwhy?\nhow?\n", encoding="utf-8")
    assert [(r.id, r.state) for r in read_inputs(path)] == [
        ("1", {"question": "why?"}), ("2", {"question": "how?"})]


def test_folder_files_become_inputs(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "b.txt").write_text("bee", encoding="utf-8")
    (docs / "a.md").write_text("# a", encoding="utf-8")
    (docs / "sub" / "c.txt").write_text("sea", encoding="utf-8")
    (docs / ".hidden").write_text("no", encoding="utf-8")
    (docs / "bin.dat").write_bytes(b"\xff\xfe\x00bad")
    records = list(read_inputs(docs))
    good = [r for r in records if isinstance(r, BatchInput)]
    assert [r.id for r in good] == ["a.md", "b.txt", "sub/c.txt"]
    assert good[2].state == {"file": str((docs / "sub" / "c.txt").resolve()),
                             "name": "sub/c.txt", "content": "sea"}
    assert [str(r) for r in records if isinstance(r, InputProblem)] == [
        f"{docs / 'bin.dat'}: not UTF-8 text"]
    assert count_inputs(docs) == 4


def test_unknown_kind_and_missing_source(tmp_path: Path) -> None:
    other = tmp_path / "inputs.txt"
    other.write_text("x", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"expected a \.jsonl or \.csv file or a folder"):
        list(read_inputs(other))
    with pytest.raises(ConfigError, match="inputs not found"):
        list(read_inputs(tmp_path / "nope.jsonl"))


def test_importing_the_package_loads_neither_ray_nor_aiohttp() -> None:
    import subprocess
    import sys

    code = ("import sys, agentloom.scale, agentloom.scale._batch, agentloom.cli.batch; "
            "print(sorted(m for m in ('ray', 'aiohttp', 'rich') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"
