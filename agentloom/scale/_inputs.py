"""Reading a batch's inputs: a JSONL file, a CSV file, or a folder of files.

Each reader is a generator that yields a `BatchInput` per good record and an
`InputProblem` per bad one, so one bad line is reported with its `file:line` and the
batch goes on. Ids must be unique: a repeated id is a problem, because "done exactly
once" and `--resume` are keyed on it.

- JSONL (`.jsonl`, `.ndjson`): one JSON object per line, the whole object is the state;
  the id is its `id` field (a string or an integer) or else the line number.
- CSV (`.csv`): a header row; each row is a state of strings keyed by the header; the id
  is the `id` column or else the row number (1 = the first row after the header).
- Folder: every regular, non-hidden file below it, in sorted order, is one input with
  state `{"file": absolute path, "name": path relative to the folder, "content": text}`;
  the id is the relative path. A file that is not UTF-8 text, or is a symbolic link (not
  followed), is a problem.

No record may be larger than `MAX_RECORD_BYTES` (a JSONL or CSV line, a folder's file):
a larger one is a problem at its line and the batch goes on (`_input_files`).

Readers are synchronous and lazy (a folder's files are read one at a time); `batch()`
drives them from a worker thread so the event loop never blocks on the disk.
"""

from __future__ import annotations

import csv
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from agentloom import _jsontext
from agentloom._files import size_text
from agentloom.errors import ConfigError
from agentloom.scale._input_files import (
    MAX_RECORD_BYTES,
    bounded_lines,
    folder_entries,
    open_inputs,
)
from agentloom.scale._types import BatchInput

JSONL_SUFFIXES = (".jsonl", ".ndjson")
CSV_SUFFIXES = (".csv",)
ID_FIELD = "id"
_TOO_LONG = f"a line longer than {size_text(MAX_RECORD_BYTES)}"
_LONE_CR = re.compile(r"(?<=\r)(?!\n)")


@dataclass(slots=True, kw_only=True)
class InputProblem:
    """An input that cannot run. `str()` is `file:line: reason`."""

    id: str
    source: str
    reason: str

    def __str__(self) -> str:
        return f"{self.source}: {self.reason}"


InputRecord = BatchInput | InputProblem


def input_kind(source: str | os.PathLike[str]) -> str:
    """`jsonl`, `csv` or `folder`; a ConfigError names what is accepted otherwise."""
    path = Path(source)
    if path.is_dir():
        return "folder"
    if not path.exists():
        raise ConfigError(f"inputs not found: {path}")
    if not path.is_file():  # a FIFO with no writer would block the batch for ever
        raise ConfigError(f"inputs {path}: not a regular file or a folder")
    suffix = path.suffix.lower()
    if suffix in JSONL_SUFFIXES:
        return "jsonl"
    if suffix in CSV_SUFFIXES:
        return "csv"
    raise ConfigError(f"inputs {path}: expected a .jsonl or .csv file or a folder, "
                      f"got {suffix or 'a file without suffix'!r}")


def read_inputs(source: str | os.PathLike[str]) -> Iterator[InputRecord]:
    """Every input of `source`, good or bad, in file order."""
    kind = input_kind(source)
    records = {"jsonl": _read_jsonl, "csv": _read_csv, "folder": _read_folder}[kind](
        Path(source))
    seen: dict[str, str] = {}
    for record in records:
        if isinstance(record, BatchInput):
            first = seen.get(record.id)
            if first is not None:
                yield InputProblem(id=record.id, source=record.source,
                                   reason=f"duplicate id {record.id!r} (first at {first})")
                continue
            seen[record.id] = record.source
        yield record


def count_inputs(source: str | os.PathLike[str]) -> int:
    """How many records `read_inputs` will yield (cheap: nothing is parsed as JSON, no
    file of a folder is read)."""
    kind = input_kind(source)
    path = Path(source)
    if kind == "folder":
        return sum(1 for _ in folder_entries(path.resolve(), read=False))
    with open_inputs(path) as handle:
        if kind == "csv":
            return max(0, sum(1 for _, row in _csv_rows(handle) if row) - 1)
        return sum(1 for _, line in bounded_lines(handle) if line is None or line.strip())


def _read_jsonl(path: Path) -> Iterator[InputRecord]:
    name = str(path)
    with open_inputs(path) as handle:
        for lineno, raw in bounded_lines(handle):
            where = f"{name}:{lineno}"
            if raw is None:
                yield InputProblem(id=str(lineno), source=where, reason=_TOO_LONG)
                continue
            line = raw.decode("utf-8", errors="replace")
            if lineno == 1:
                line = line.removeprefix("\ufeff")
            if not line.strip():
                continue
            try:
                obj = _jsontext.loads(line)
            except ValueError as exc:
                yield InputProblem(id=str(lineno), source=where,
                                   reason=f"invalid JSON: {_first_line(exc)}")
                continue
            if not isinstance(obj, dict):
                yield InputProblem(id=str(lineno), source=where,
                                   reason=f"not a JSON object (got {_json_type(obj)})")
                continue
            ident = _id_of(obj.get(ID_FIELD), default=str(lineno))
            if ident is None:
                yield InputProblem(id=str(lineno), source=where,
                                   reason=f"field {ID_FIELD!r} must be a non-empty string "
                                          f"or an integer")
                continue
            yield BatchInput(id=ident, state=obj, source=where)


def _read_csv(path: Path) -> Iterator[InputRecord]:
    name = str(path)
    with open_inputs(path) as handle:
        header: list[str] | None = None
        row_number = 0
        for line, row in _csv_rows(handle):
            where = f"{name}:{line}"
            if not row:
                continue
            if header is None:
                if isinstance(row, str):
                    raise ConfigError(f"{where}: the header row can't be read: {row}")
                header = [h.strip() for h in row]
                if len(set(header)) != len(header) or "" in header:
                    raise ConfigError(f"{where}: the header row needs unique, non-empty "
                                      f"column names, got {row!r}")
                continue
            row_number += 1
            if isinstance(row, str):
                yield InputProblem(id=str(row_number), source=where, reason=row)
                continue
            if len(row) != len(header):
                yield InputProblem(id=str(row_number), source=where,
                                   reason=f"{len(row)} fields, the header has {len(header)}")
                continue
            state: dict[str, Any] = dict(zip(header, row, strict=True))
            ident = _id_of(state.get(ID_FIELD), default=str(row_number))
            if ident is None:
                yield InputProblem(id=str(row_number), source=where,
                                   reason=f"column {ID_FIELD!r} is empty")
                continue
            yield BatchInput(id=ident, state=state, source=where)


class _LongLine(Exception):
    def __init__(self, lineno: int) -> None:
        self.lineno = lineno


class _CsvLines:
    """The file's lines as text for `csv.reader`, counted; a line over the size bound
    raises `_LongLine` (and is skipped). A lone `\r` ends a line too, as in a text read
    (Excel for Mac writes such files). An iterator object, not a generator, so that it
    goes on after raising."""

    def __init__(self, handle: BinaryIO) -> None:
        self._lines = bounded_lines(handle)
        self._rest: list[str] = []
        """The pieces of a line that lone `\r`s split, last first."""
        self.lineno = 0

    def __iter__(self) -> _CsvLines:
        return self

    def __next__(self) -> str:
        if not self._rest:
            _, raw = next(self._lines)
            if raw is None:
                self.lineno += 1
                raise _LongLine(self.lineno)
            text = raw.decode("utf-8", errors="replace")
            if self.lineno == 0:
                text = text.removeprefix("\ufeff")
            self._rest = ([piece for piece in _LONE_CR.split(text) if piece][::-1]
                          if "\r" in text else [text])
        self.lineno += 1
        return self._rest.pop()


def _csv_rows(handle: BinaryIO) -> Iterator[tuple[int, list[str] | str]]:
    """(the line a row starts on, its fields) for each row, a blank line's fields empty;
    (line, why) for a row that can't be read, and the rows after it are read on."""
    lines = _CsvLines(handle)
    reader = csv.reader(lines)
    while True:
        start = lines.lineno + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except _LongLine as exc:
            yield exc.lineno, _TOO_LONG
            reader = csv.reader(lines)  # the cut row's quoting must not run on
            continue
        except csv.Error as exc:
            yield start, f"unreadable row: {exc}"
            continue
        yield start, row


def _read_folder(path: Path) -> Iterator[InputRecord]:
    base = path.resolve()
    for entry in folder_entries(base):
        source = str(path / entry.rel)
        if entry.data is None:
            yield InputProblem(id=entry.rel, source=source, reason=entry.problem or "")
            continue
        try:
            content = entry.data.decode("utf-8")
        except UnicodeDecodeError:
            yield InputProblem(id=entry.rel, source=source, reason="not UTF-8 text")
            continue
        # Newlines as a text read gives them (the file's own are \r\n on Windows).
        content = content.replace("\r\n", "\n").replace("\r", "\n")
        yield BatchInput(id=entry.rel, source=source,
                         state={"file": str(base / entry.rel), "name": entry.rel,
                                "content": content})


def _id_of(value: Any, *, default: str) -> str | None:
    if value is None:
        return default
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and value.strip():
        return value
    return None


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return "a number"


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
