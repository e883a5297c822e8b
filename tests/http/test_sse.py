"""The SSE and NDJSON parsers, fed bytes in every awkward split."""

from __future__ import annotations

import pytest

from agentloom.providers._sse import NDJSONParser, SSEEvent, SSEParser

STREAM = (
    b": a comment\r\n"
    b"event: message_start\r\n"
    b"id: 7\r\n"
    b"data: {\"a\": 1}\r\n"
    b"\r\n"
    b"data: line one\n"
    b"data: line two\n"
    b"\n"
    b"data:no-space\r\r"
    b"retry: 10\n"
    b"data: caf\xc3\xa9\n\n"
)
EXPECTED = [
    SSEEvent("message_start", '{"a": 1}', "7"),
    SSEEvent("message", "line one\nline two", "7"),
    SSEEvent("message", "no-space", "7"),
    SSEEvent("message", "café", "7"),
]


def test_whole_stream() -> None:
    parser = SSEParser()
    assert parser.feed(STREAM) + parser.close() == EXPECTED


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 13])
def test_any_chunking_gives_the_same_events(size: int) -> None:
    parser = SSEParser()
    events = []
    for i in range(0, len(STREAM), size):
        events += parser.feed(STREAM[i : i + size])
    assert events + parser.close() == EXPECTED


def test_crlf_split_between_chunks_is_one_line_break() -> None:
    parser = SSEParser()
    assert parser.feed(b"data: x\r") == []
    assert parser.feed(b"\n\r") == []
    assert parser.feed(b"\n") == [SSEEvent("message", "x")]


def test_event_without_data_is_not_dispatched_and_event_name_resets() -> None:
    parser = SSEParser()
    assert parser.feed(b"event: ping\n\ndata: y\n\n") == [SSEEvent("message", "y")]


def test_close_flushes_an_unterminated_event() -> None:
    parser = SSEParser()
    assert parser.feed(b"data: [DONE]") == []
    assert parser.close() == [SSEEvent("message", "[DONE]")]
    assert parser.close() == []


def test_empty_data_line_counts() -> None:
    parser = SSEParser()
    assert parser.feed(b"data\ndata: b\n\n") == [SSEEvent("message", "\nb")]


def test_ndjson_partial_lines_and_blank_lines() -> None:
    parser = NDJSONParser()
    assert parser.feed(b'{"a": 1}\n{"b"') == [{"a": 1}]
    assert parser.feed(b': 2}\n\n  \n[1,') == [{"b": 2}]
    assert parser.feed(b"2]") == []
    assert parser.close() == [[1, 2]]
    assert parser.close() == []


def test_ndjson_bad_line_raises_value_error() -> None:
    with pytest.raises(ValueError):
        NDJSONParser().feed(b"{oops}\n")
