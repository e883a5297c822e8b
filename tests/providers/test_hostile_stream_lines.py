"""A hostile stream that sends one line and never ends it: each piece that arrives costs
the SSE and NDJSON parsers work in proportion to the piece, not to the line so far (the
old parsers copied and rescanned the whole unfinished line on every piece, so a 16 MiB
line in 4 KiB pieces held the event loop for tens of seconds). Measured by the memory a
single feed allocates, which is deterministic, not by time."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable

import pytest

from agentloom.providers._sse import NDJSONParser, SSEEvent, SSEParser

LINE = 1024 * 1024  # the unfinished line's length when the next piece arrives
PIECE = 4096


def _extra_memory_of_one_feed(feed: Callable[[bytes], object]) -> int:
    """Bytes allocated at the peak of one more piece of the unfinished line."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        feed(b"y" * PIECE)
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("make", [SSEParser, NDJSONParser])
def test_a_piece_of_an_unending_line_costs_the_piece_not_the_line(make: type) -> None:
    parser = make()
    parser.feed(b'data: "' if make is SSEParser else b'"')
    for _ in range(LINE // PIECE):
        assert parser.feed(b"x" * PIECE) == []
    extra = _extra_memory_of_one_feed(parser.feed)
    assert extra < 16 * PIECE, f"one {PIECE}-byte piece allocated {extra} bytes"


def test_the_long_line_still_arrives_whole_once_it_ends() -> None:
    sse = SSEParser()
    text = "x" * 100_000
    out: list[SSEEvent] = []
    raw = b"data: " + json.dumps({"t": text}).encode() + b"\r"
    for i in range(0, len(raw), 1000):
        out += sse.feed(raw[i:i + 1000])
    out += sse.feed(b"\n\r")  # the CRLF split across pieces, then a lone CR line
    out += sse.feed(b"\n")
    assert [json.loads(e.data)["t"] for e in out] == [text]

    nd = NDJSONParser()
    values: list[object] = []
    raw = json.dumps({"t": text}).encode()
    for i in range(0, len(raw), 1000):
        values += nd.feed(raw[i:i + 1000])
    assert values == []
    values += nd.feed(b"\n{}")
    assert values == [{"t": text}] and nd.close() == [{}]


def test_a_lone_cr_ends_a_line_even_when_the_next_piece_has_no_line_break() -> None:
    sse = SSEParser()
    assert sse.feed(b"data: a\r\r") == []  # the last CR may still be a CRLF's half
    assert sse.feed(b"data: b") == [SSEEvent("message", "a")]
    assert sse.close() == [SSEEvent("message", "b")]
