"""Files somebody else may have put where a workflow, recording, price or inputs file is
expected: a FIFO with no writer, a device, an oversized file. Each is refused at once with
an error naming the file, never waited on or read whole (`agentloom/_files.py`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentloom._files import (
    FileTooLarge,
    NoReader,
    NotRegularFile,
    create_private,
    open_private,
    read_regular,
)
from agentloom.errors import ConfigError, WorkflowError
from agentloom.pricing import PriceTable
from agentloom.recording import Recording, RecordingError
from agentloom.recording.mock_responses import load_agentloom_mock_responses
from agentloom.workflow import load_workflow


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "planted.yaml"
    os.mkfifo(path)  # no writer: a plain open for reading would block for ever
    return path


def test_read_regular_refuses_what_is_no_regular_file(tmp_path: Path, fifo: Path) -> None:
    with pytest.raises(NotRegularFile, match="not a regular file"):
        read_regular(fifo, 100)
    with pytest.raises(NotRegularFile, match="not a regular file"):
        read_regular("/dev/zero", 100)  # endless: a read() would never stop
    with pytest.raises(NotRegularFile, match="a directory"):
        read_regular(tmp_path, 100)
    with pytest.raises(FileNotFoundError):
        read_regular(tmp_path / "gone", 100)


def test_read_regular_reads_up_to_its_bound_and_refuses_one_byte_more(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 100)
    assert read_regular(path, 100) == b"x" * 100
    with pytest.raises(FileTooLarge, match="larger than 99 bytes") as info:
        read_regular(path, 99)
    assert isinstance(info.value, OSError) and info.value.filename == str(path)


def test_a_fifo_nobody_reads_is_refused_for_writing_not_waited_on(fifo: Path) -> None:
    # A plain open of a FIFO to write waits for a reader: the run never started.
    with pytest.raises(NoReader, match="a FIFO nobody reads") as info:
        open_private(fifo)
    assert info.value.filename == str(fifo)
    with pytest.raises(NoReader):
        open_private(fifo, append=True)
    # A database is looked at, not opened (its locks): a FIFO is no regular file at once.
    with pytest.raises(NotRegularFile, match="not a regular file"):
        create_private(fifo)


def test_a_file_that_must_be_regular_refuses_a_read_fifo_and_a_device(fifo: Path) -> None:
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        with pytest.raises(NotRegularFile, match="not a regular file"):
            create_private(fifo)  # SQLite's database: it can't live in a FIFO
    finally:
        os.close(reader)
    with pytest.raises(NotRegularFile, match="not a regular file"):
        create_private("/dev/null")


def test_a_fifo_that_is_read_is_written_as_a_stream_and_blocks_as_a_pipe(fifo: Path) -> None:
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        with open_private(fifo) as out:
            assert os.get_blocking(out.fileno())  # a full pipe waits, it doesn't lose lines
            out.write("line\n")
        assert os.read(reader, 100) == b"line\n"
    finally:
        os.close(reader)


def test_a_workflow_path_that_is_a_fifo_is_an_error_not_a_hang(fifo: Path) -> None:
    with pytest.raises(WorkflowError, match="cannot read workflow file: not a regular file"):
        load_workflow(fifo)


def test_recordings_and_mock_responses_that_are_fifos_or_too_big(
        tmp_path: Path, fifo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(RecordingError, match=r"cannot read the recording: not a regular file$"):
        Recording.load(fifo)
    with pytest.raises(RecordingError, match=r"mock responses file \(not a regular file\)"):
        load_agentloom_mock_responses(fifo)
    big = tmp_path / "big.json"
    big.write_text('{"format": "agentloom-recording", "version": 1, "exchanges": []}' +
                   " " * 200, encoding="utf-8")
    monkeypatch.setattr("agentloom.recording._format.MAX_RECORDING_BYTES", 100)
    with pytest.raises(RecordingError,
                       match=r"cannot read the recording: larger than 100 bytes$"):
        Recording.load(big)


def test_price_files_that_are_fifos_or_not_utf8_are_config_errors(
        tmp_path: Path, fifo: Path) -> None:
    with pytest.raises(ConfigError, match=r"cannot read price file .*not a regular file"):
        PriceTable.from_file(fifo)
    latin = tmp_path / "prices.json"
    latin.write_bytes(b'{"openai": {"caf\xe9": {"input": 1, "output": 2}}}')
    with pytest.raises(ConfigError, match=r"cannot read price file .*utf-8"):
        PriceTable.from_file(latin)
