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
  the id is the relative path. A file that is not UTF-8 text is a problem.

Readers are synchronous and lazy (a folder's files are read one at a time); `batch()`
drives them from a worker thread so the event loop never blocks on the disk.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentloom import _jsontext
from agentloom.errors import ConfigError
from agentloom.scale._types import BatchInput

JSONL_SUFFIXES = (".jsonl", ".ndjson")
CSV_SUFFIXES = (".csv",)
ID_FIELD = "id"


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
    """How many records `read_inputs` will yield (cheap: nothing is parsed as JSON)."""
    kind = input_kind(source)
    path = Path(source)
    if kind == "folder":
        return sum(1 for _ in _folder_files(path))
    if kind == "csv":
        with path.open(encoding="utf-8-sig", newline="") as f:
            return max(0, sum(1 for row in csv.reader(f) if row) - 1)
    with path.open("rb") as fb:
        return sum(1 for line in fb if line.strip())


def _read_jsonl(path: Path) -> Iterator[InputRecord]:
    name = str(path)
    with path.open(encoding="utf-8-sig", errors="replace") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            where = f"{name}:{lineno}"
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
    with path.open(encoding="utf-8-sig", errors="replace", newline="") as f:
        reader = csv.reader(f)
        header: list[str] | None = None
        row_number = 0
        line = 1
        for row in reader:
            where = f"{name}:{line}"
            line = reader.line_num + 1
            if not row:
                continue
            if header is None:
                header = [h.strip() for h in row]
                if len(set(header)) != len(header) or "" in header:
                    raise ConfigError(f"{where}: the header row needs unique, non-empty "
                                      f"column names, got {row!r}")
                continue
            row_number += 1
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


def _read_folder(path: Path) -> Iterator[InputRecord]:
    for file in _folder_files(path):
        rel = file.relative_to(path).as_posix()
        try:
            content = file.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            yield InputProblem(id=rel, source=str(file), reason="not UTF-8 text")
            continue
        except OSError as exc:
            yield InputProblem(id=rel, source=str(file),
                               reason=f"cannot read: {exc.strerror or exc}")
            continue
        yield BatchInput(id=rel, source=str(file),
                         state={"file": str(file.resolve()), "name": rel, "content": content})


def _folder_files(path: Path) -> Iterator[Path]:
    for root, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            file = Path(root, name)
            if not name.startswith(".") and file.is_file():
                yield file


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
