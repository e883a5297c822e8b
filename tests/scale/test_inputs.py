"""Input readers: JSONL, CSV and folders, with bad records reported by file:line."""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

import pytest

from agentloom.errors import ConfigError
from agentloom.scale import BatchInput, InputProblem, input_kind, read_inputs
from agentloom.scale._input_files import MAX_RECORD_BYTES, bounded_lines
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


# --- hostile inputs: every size bounded, nothing followed or waited on ------------------

BIG = MAX_RECORD_BYTES + 1


def test_a_fifo_named_as_the_inputs_is_refused_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "inputs.jsonl"
    os.mkfifo(fifo)  # no writer: opening it to read would block for ever
    for reader in (read_inputs, count_inputs, input_kind):
        with pytest.raises(ConfigError, match="not a regular file or a folder"):
            list(reader(fifo)) if reader is read_inputs else reader(fifo)


def test_an_endless_jsonl_line_is_one_problem_read_past_in_bounded_memory(
        tmp_path: Path) -> None:
    path = tmp_path / "inputs.jsonl"
    with path.open("wb") as f:
        f.write(b'{"id": "a"}\n{"id": "b", "text": "')
        f.write(b"x" * (5 * MAX_RECORD_BYTES))  # 40 MiB on one line
        f.write(b'"}\n{"id": "c"}\n')
    tracemalloc.start()
    try:
        records = list(read_inputs(path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [r.id for r in records if isinstance(r, BatchInput)] == ["a", "c"]
    assert [str(r) for r in records if isinstance(r, InputProblem)] == [
        f"{path}:2: a line longer than 8 MiB"]
    # Bounded by the limit (a read of up to 8 MiB and its copy), not by the 40 MiB line.
    assert peak < 3 * MAX_RECORD_BYTES
    assert count_inputs(path) == 3


def test_csv_rows_too_large_are_problems_and_the_rest_is_read(tmp_path: Path) -> None:
    path = tmp_path / "inputs.csv"
    with path.open("wb") as f:
        f.write(b"id,text\nr1,ok\n")
        f.write(b"r2," + b"y" * 200_000 + b"\n")  # over csv's own field limit (128 KiB)
        f.write(b'r3,"a quoted field\nover lines ' + b"z" * BIG + b'"\n')  # a line over 8 MiB
        f.write(b"r4,after\n")
    records = list(read_inputs(path))
    assert [(r.id, r.state) for r in records if isinstance(r, BatchInput)] == [
        ("r1", {"id": "r1", "text": "ok"}), ("r4", {"id": "r4", "text": "after"})]
    assert [str(r) for r in records if isinstance(r, InputProblem)] == [
        f"{path}:3: unreadable row: field larger than field limit (131072)",
        f"{path}:5: a line longer than 8 MiB",
    ]
    assert count_inputs(path) == 4


def test_a_csv_header_that_cannot_be_read_is_an_error_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "inputs.csv"
    path.write_bytes(b"id," + b"h" * BIG + b"\nr1,x\n")
    with pytest.raises(ConfigError, match=r"inputs\.csv:1: the header row can't be read: "
                                          r"a line longer than 8 MiB"):
        list(read_inputs(path))


def test_a_folder_reports_links_and_oversized_files_and_passes_over_fifos(
        tmp_path: Path) -> None:
    secret = tmp_path / "id_rsa"
    secret.write_text("PRIVATE KEY", encoding="utf-8")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "more.txt").write_text("PRIVATE TOO", encoding="utf-8")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_bytes(b"line one\r\nline two\r\n")
    (docs / "key.txt").symlink_to(secret)
    (docs / "linked").symlink_to(outside, target_is_directory=True)
    (docs / "big.txt").write_bytes(b"b" * BIG)
    os.mkfifo(docs / "pipe.txt")  # would block a plain read
    records = list(read_inputs(docs))
    good = [r for r in records if isinstance(r, BatchInput)]
    assert [(r.id, r.state["content"]) for r in good] == [("a.txt", "line one\nline two\n")]
    assert [str(r) for r in records if isinstance(r, InputProblem)] == [
        f"{docs / 'big.txt'}: larger than 8 MiB",
        f"{docs / 'key.txt'}: a symbolic link, not followed",
        f"{docs / 'linked'}: a symbolic link, not followed",
    ]
    assert not any("PRIVATE" in str(r.state) for r in good)
    assert count_inputs(docs) == 4


def test_a_folder_named_through_a_link_is_read(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("hello", encoding="utf-8")
    alias = tmp_path / "alias"
    alias.symlink_to(docs, target_is_directory=True)
    [record] = list(read_inputs(alias))
    assert isinstance(record, BatchInput)
    assert record.state == {"file": str(docs.resolve() / "a.txt"), "name": "a.txt",
                            "content": "hello"}
    assert count_inputs(alias) == 1


def test_bounded_lines_counts_lines_and_skips_a_long_one_whole(tmp_path: Path) -> None:
    path = tmp_path / "lines"
    path.write_bytes(b"one\n" + b"x" * 25 + b"\nthree")
    with path.open("rb") as handle:
        assert list(bounded_lines(handle, limit=10)) == [
            (1, b"one\n"), (2, None), (3, b"three")]


def test_csv_lines_may_end_in_a_lone_carriage_return(tmp_path: Path) -> None:
    path = tmp_path / "mac.csv"  # as Excel for Mac writes "Macintosh" CSV
    path.write_bytes(b'id,text\rr1,one\rr2,"two\rlines"\rr3\r')
    records = list(read_inputs(path))
    assert [(r.id, r.state["text"]) for r in records if isinstance(r, BatchInput)] == [
        ("r1", "one"), ("r2", "two\rlines")]
    assert [str(r) for r in records if isinstance(r, InputProblem)] == [
        f"{path}:5: 1 fields, the header has 2"]
    assert count_inputs(path) == 3
    crlf = tmp_path / "dos.csv"
    crlf.write_bytes(b'id,text\r\nr1,"a\r\nb"\r\nr2,c\r\n')
    assert [(r.id, r.state["text"]) for r in read_inputs(crlf)] == [
        ("r1", "a\r\nb"), ("r2", "c")]


def test_a_csv_that_is_not_utf8_is_counted_and_read_with_replacement(tmp_path: Path) -> None:
    path = tmp_path / "latin.csv"
    path.write_bytes(b"id,city\nr1,Z\xfcrich\n")  # Latin-1: counting it used to raise
    assert count_inputs(path) == 1
    [record] = list(read_inputs(path))
    assert isinstance(record, BatchInput) and record.state["city"] == "Z\ufffdrich"
