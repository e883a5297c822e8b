"""A recording that no recorder wrote (edited by hand, from a bug report, from a model) is
refused when it is loaded, naming the exchange and the field: before, a reply stored as a
list or headers as a list failed the step later in Python's own words, a status of 999 or
"200" was replayed as if a server had sent it, and an endless time kept a latency replay
waiting for ever. Every field a recorder writes is checked against a real recording."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentloom.recording import Recording, RecordingError

BODY = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"},
                                "finish_reason": "stop"}]})
EXCHANGE: dict[str, Any] = {
    "step_id": "a", "turn": 1, "attempt": 1, "request_hash": "sha256:" + "0" * 64,
    "request": {"method": "POST", "url": "http://127.0.0.1:9/v1/chat/completions",
                "path": "/v1/chat/completions", "body": {"model": "m"}, "stream": False},
    "elapsed": 0.25,
    "response": {"status": 200, "headers": {"content-type": "application/json"},
                 "text": BODY},
}
STREAMED: dict[str, Any] = {
    **EXCHANGE, "response": {"status": 200, "headers": {}, "complete": False,
                             "chunks": [{"t": 0.0, "text": "data: {}\n\n"},
                                        {"t": 0.1, "b64": "AAEC"}],
                             "stream_error": {"message": "reset", "phase": "read",
                                              "request_sent": True, "t": 0.2}}}
FAILED: dict[str, Any] = {**{k: v for k, v in EXCHANGE.items() if k != "response"},
                          "error": {"message": "refused", "phase": "connect",
                                    "request_sent": False}}


def _file(tmp_path: Path, *exchanges: dict[str, Any]) -> Path:
    path = tmp_path / "rec.json"
    path.write_text(json.dumps({"format": "agentloom-recording", "version": 1,
                                "exchanges": list(exchanges)}))
    return path


def test_what_a_recorder_writes_loads(tmp_path: Path) -> None:
    loaded = Recording.load(_file(tmp_path, EXCHANGE, STREAMED, FAILED,
                                  {**EXCHANGE, "step_id": None, "turn": None}))
    assert len(loaded.exchanges) == 4


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    *parents, last = path.split(".")

    def change(exchange: dict[str, Any]) -> None:
        holder: Any = exchange
        for key in parents:
            holder = holder[int(key)] if key.isdigit() else holder[key]
        holder[int(last) if last.isdigit() else last] = value
    return change


@pytest.mark.parametrize(("base", "change", "message"), [
    (EXCHANGE, _set("response", []), "response must be an object"),
    (EXCHANGE, _set("response.status", "200"), "response.status must be an HTTP status"),
    (EXCHANGE, _set("response.status", 999), "response.status must be an HTTP status"),
    (EXCHANGE, _set("response.status", True), "response.status must be an HTTP status"),
    (EXCHANGE, _set("response.headers", [["a", "b"]]), "response.headers must be an object"),
    (EXCHANGE, _set("response.headers", {"retry-after": 5}), "response.headers must be an"),
    (EXCHANGE, _set("response.text", 5), "response.text must be a string"),
    (EXCHANGE, _set("response.b64", "not base64!"), "response.b64 must be base64 text"),
    (EXCHANGE, _set("elapsed", -1), "elapsed must be a finite number of seconds"),
    (EXCHANGE, _set("elapsed", "soon"), "elapsed must be a finite number of seconds"),
    (EXCHANGE, _set("turn", "one"), "turn must be a whole number from 0 to 1000000"),
    (EXCHANGE, _set("turn", 10**400), "turn must be a whole number from 0 to 1000000"),
    (EXCHANGE, _set("attempt", 1.5), "attempt must be a whole number"),
    (EXCHANGE, _set("step_id", ["a"]), "step_id must be a string"),
    (EXCHANGE, _set("request_hash", 5), "request_hash must be a string"),
    (EXCHANGE, _set("request", "POST"), "request must be an object"),
    (STREAMED, _set("response.chunks", {"t": 0}), "response.chunks must be a list"),
    (STREAMED, _set("response.chunks.0", "data: x"), "response.chunks[0] must be an object"),
    (STREAMED, _set("response.chunks.1.t", 1e308 * 10), "response.chunks[1].t must be a"),
    (STREAMED, _set("response.chunks.1.b64", 7), "response.chunks[1].b64 must be base64"),
    (STREAMED, _set("response.stream_error", "reset"), "response.stream_error must be an"),
    (STREAMED, _set("response.stream_error.t", -3), "response.stream_error.t must be a"),
    (FAILED, _set("error", ["refused"]), "error must be an object"),
    (FAILED, _set("error.request_sent", "no"), "error.request_sent must be true or false"),
    (FAILED, _set("error.max_bytes", -1), "error.max_bytes must be a whole number"),
    (FAILED, _set("error.message", {"a": 1}), "error.message must be a string"),
])
def test_a_field_no_recorder_writes_is_refused_at_load_naming_it(
        tmp_path: Path, base: dict[str, Any], change: Callable[[dict[str, Any]], None],
        message: str) -> None:
    bad = copy.deepcopy(base)
    change(bad)
    path = _file(tmp_path, EXCHANGE, bad)
    with pytest.raises(RecordingError) as info:
        Recording.load(path)
    assert str(info.value).startswith(f"{path}: exchange #1 (step ")
    assert message in str(info.value)


def test_an_exchange_with_neither_reply_nor_error_is_refused(tmp_path: Path) -> None:
    no_reply = {**FAILED, "error": None}
    with pytest.raises(RecordingError, match=r"exchange #0 \(step 'a'\): response must be"):
        Recording.load(_file(tmp_path, no_reply))
