"""JSON nested deeper than the parser can recurse, from every outside source that sends
JSON text: a provider's reply and error body (also while recording it), a model's tool
arguments, a model's answer to an output schema, a tool's output, a recording, a mock
responses file and a batch's input lines. 100 KB of `[` is enough to make `json.loads` raise
RecursionError, which no reader of JSON text expected: it ended the run. Each is now the
answer that source gives for any text that isn't JSON. Servers are real, on loopback."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agentloom import Agent, _jsontext
from agentloom.errors import ProviderError
from agentloom.http import AiohttpTransport
from agentloom.loop import Transcript
from agentloom.messages import (
    Message,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolResultPart,
    Usage,
)
from agentloom.providers import get_protocol, vendor_endpoint
from agentloom.providers.llamacpp import decode_reply
from agentloom.recording import Recorder, Recording, RecordingError, RecordTransport
from agentloom.recording.mock_responses import load_agentloom_mock_responses
from agentloom.routing import ProviderClient
from agentloom.routing.runtime import Runtime
from agentloom.scale import read_inputs
from agentloom.structured import extract_json, parse_forced_tool_call
from agentloom.testing._server import FakeBadBody, FakeError, FakeReply
from agentloom.testing.fake_openai import FakeOpenAIServer
from agentloom.tools import ToolRegistry
from agentloom.workflow import arun_workflow, load_workflow

DEEP = "[" * 100_000
DEEP_OBJECT = '{"a":' * 50_000


@pytest.mark.parametrize("text", [DEEP, DEEP_OBJECT, DEEP.encode(), bytearray(DEEP.encode())])
def test_loads_names_deep_nesting_as_bad_json(text: str | bytes | bytearray) -> None:
    with pytest.raises(RecursionError):
        json.loads(text)  # the parser's own behaviour, which the helper replaces
    with pytest.raises(json.JSONDecodeError, match=_jsontext.TOO_DEEP):
        _jsontext.loads(text)


CLOSED = "[" * 600 + "]" * 600
"""Deep, but not too deep for json.loads: the walkers of a parsed value recurse on it."""
BOUND = _jsontext.MAX_DEPTH


@pytest.mark.parametrize("text", [
    CLOSED,
    '{"a": ' * (BOUND + 1) + "1" + "}" * (BOUND + 1),
    # Text pydantic_core refuses for another reason goes to json.loads, whose value is
    # held to the same bound: a BOM, a lone surrogate.
    b"\xef\xbb\xbf" + b"[" * (BOUND + 1) + b"]" * (BOUND + 1),
    '[{"s": "\\ud800", "deep": ' + "[" * BOUND + "]" * BOUND + "}]",
])
def test_loads_bounds_the_depth_of_what_it_reads(text: str | bytes) -> None:
    with pytest.raises(json.JSONDecodeError, match=_jsontext.TOO_DEEP):
        _jsontext.loads(text)


@pytest.mark.parametrize("text", [
    "[" * BOUND + "]" * BOUND,
    '{"a": ' * BOUND + "1" + "}" * BOUND,
    b"\xef\xbb\xbf" + b"[" * BOUND + b"]" * BOUND,
    '[{"s": "\\ud800", "deep": ' + "[" * (BOUND - 2) + "]" * (BOUND - 2) + "}]",
])
def test_loads_reads_up_to_the_bound(text: str | bytes) -> None:
    assert _jsontext.loads(text) == json.loads(text)


@pytest.mark.parametrize("text", ['{"a": [1, {"b": null}]}', "[" * 50 + "]" * 50, "1e400",
                                  b'{"a": 1}', "not json", ""])
def test_loads_is_json_loads_otherwise(text: str | bytes) -> None:
    try:
        expected: Any = ("ok", json.loads(text))
    except json.JSONDecodeError as exc:
        expected = ("error", str(exc))
    try:
        got: Any = ("ok", _jsontext.loads(text))
    except json.JSONDecodeError as exc:
        got = ("error", str(exc))
    assert got == expected


@pytest.fixture
async def server() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as s:
        yield s  # type: ignore[misc]


async def test_a_deep_reply_body_is_a_body_error(server: FakeOpenAIServer) -> None:
    transport = AiohttpTransport()
    endpoint = vendor_endpoint("openai", api_key="sk", base_url=server.openai_base_url)
    client = ProviderClient(endpoint, get_protocol("openai"), transport)
    request = ModelRequest(model="gpt-4o", messages=(Message.user("hi"),))
    server.script(FakeBadBody(body=DEEP.encode()),
                  FakeError(status=500, body=DEEP))
    try:
        with pytest.raises(ProviderError) as body_error:
            await client.complete(request)
        with pytest.raises(ProviderError) as status_error:
            await client.complete(request)
    finally:
        await transport.aclose()
    err = body_error.value
    assert (err.phase, err.status, err.retryable, err.request_sent) == ("body", 200, True, True)
    # An error body that isn't readable JSON: the status error keeps its first bytes.
    assert (status_error.value.phase, status_error.value.status) == ("status", 500)
    assert "[[[[" in str(status_error.value)


async def test_deep_tool_arguments_are_a_tool_error_the_model_reads(
        server: FakeOpenAIServer) -> None:
    ran: list[Any] = []

    def echo(text: str) -> str:
        """Echo a text."""
        ran.append(text)
        return text

    server.script(FakeReply(tool_calls=[("echo", DEEP)]), "I could not call it.")
    env = {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": server.openai_base_url,
           "AGENTLOOM_MODEL": "gpt-4o-mini"}
    async with Agent.from_env(env, tools=[echo]) as agent:
        result = await agent.arun_result("echo something")
    assert result.text == "I could not call it." and ran == []
    assert result.summary.status.succeeded and result.summary.tool_errors == {"echo": 1}
    told = server.requests[1].json["messages"][-1]
    assert told["role"] == "tool" and _jsontext.TOO_DEEP in told["content"]


def test_a_deep_answer_to_an_output_schema_is_no_json_object() -> None:
    with pytest.raises(ValueError, match="JSON") as info:
        extract_json(DEEP)
    assert not isinstance(info.value, RecursionError)


def test_deep_arguments_of_a_forced_answer_call_are_a_re_ask() -> None:
    reply = ModelResponse(parts=(ToolCallPart(id="c1", name="answer", arguments=DEEP),),
                          usage=Usage(), finish_reason="tool_calls", model="m", provider="p")
    with pytest.raises(ValueError, match="arguments of `answer` are not valid JSON: "
                                         + _jsontext.TOO_DEEP):
        parse_forced_tool_call(reply, expected="answer")


async def test_a_tool_step_keeps_deep_output_as_text() -> None:
    def deep() -> str:
        """A page that is all brackets."""
        return DEEP

    flow = load_workflow("name: deep\nsteps:\n  - {id: s, type: tool, tool_name: deep, "
                         "output: page}\n")
    runtime = Runtime.from_env({})  # no model is asked: the one step is a tool
    result = await arun_workflow(flow, clients=runtime, tools=ToolRegistry([deep]))
    assert result.ok, result.error
    assert result.state["page"] == DEEP


@pytest.mark.parametrize("provider", ["anthropic", "gemini"])
def test_deep_arguments_sent_back_to_a_vendor_that_wants_an_object(provider: str) -> None:
    """Anthropic and Gemini take a tool call's arguments as an object: arguments that
    don't read as one go back wrapped, so the next request is still valid JSON."""
    call = ToolCallPart(id="c1", name="echo", arguments=DEEP)
    request = ModelRequest(model="m", messages=(
        Message.user("echo"), Message(role="assistant", parts=(call,)),
        Message(role="tool", parts=(ToolResultPart(call_id="c1", name="echo", content="no"),))))
    endpoint = vendor_endpoint(provider, api_key="k", base_url="http://127.0.0.1:9")
    body = get_protocol(provider).encode(request, endpoint).body
    assert isinstance(body, bytes) and b'"_raw_arguments":"[[[' in body


def test_the_embedded_model_keeps_a_deep_constrained_reply_as_text() -> None:
    parts, is_call = decode_reply(DEEP)
    assert not is_call and [getattr(p, "text", None) for p in parts] == [DEEP]


async def test_recording_a_deep_reply_records_it_and_fails_the_call_cleanly(
        server: FakeOpenAIServer, tmp_path: Path) -> None:
    path = tmp_path / "rec.json"
    recorder = Recorder(path)
    transport = RecordTransport(AiohttpTransport(), recorder)
    endpoint = vendor_endpoint("openai", api_key="sk", base_url=server.openai_base_url)
    client = ProviderClient(endpoint, get_protocol("openai"), transport)
    server.script(FakeBadBody(body=DEEP.encode()), FakeBadBody(body=CLOSED.encode()))
    request = ModelRequest(model="gpt-4o", messages=(Message.user("hi"),))
    try:
        for _ in range(2):
            with pytest.raises(ProviderError) as info:
                await client.complete(request)
            assert info.value.phase == "body"
        await recorder.flush()
    finally:
        await transport.aclose()
    recorded = Recording.parse(path.read_text(encoding="utf-8"), path=path)
    assert len(recorded.exchanges) == 2


def test_deep_files_are_named_errors(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text(DEEP, encoding="utf-8")
    with pytest.raises(RecordingError, match=rf"deep\.json: not valid JSON.*{_jsontext.TOO_DEEP}"):
        Recording.parse(deep.read_text(encoding="utf-8"), path=deep)
    with pytest.raises(RecordingError, match=r"deep\.json: not a readable JSON mock"):
        load_agentloom_mock_responses(deep)
    inputs = tmp_path / "inputs.jsonl"
    inputs.write_text('{"id": "a", "x": 1}\n' + DEEP + "\n", encoding="utf-8")
    records = list(read_inputs(inputs))
    assert [type(r).__name__ for r in records] == ["BatchInput", "InputProblem"]
    assert records[1].source == f"{inputs}:2"
    assert _jsontext.TOO_DEEP in records[1].reason  # type: ignore[union-attr]


def test_the_callback_server_takes_a_deep_webhook_body_as_raw_text(tmp_path: Path) -> None:
    """The one JSON reader of ours listening on a socket: a body deep enough to stop the
    parser (60 KB, under the server's 64 KB cap) is a notification like any other."""
    log = tmp_path / "server.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "agentloom.cli", "callback-server", "--checkpoint-dir",
             str(tmp_path / "ckpt"), "--port", "0", "--token", "s3cret"],
            cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT, text=True)
    try:
        base = _listening_on(log, server)
        request = urllib.request.Request(base + "/webhook", method="POST",
                                         data=b"[" * 60_000,
                                         headers={"Authorization": "Bearer s3cret"})
        with urllib.request.urlopen(request, timeout=60) as resp:
            assert (resp.status, json.loads(resp.read())) == (200, {"status": "received"})
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert '[WEBHOOK] Notification received: {"raw": "[[[' in log.read_text()


def _listening_on(log: Path, server: subprocess.Popen[str]) -> str:
    for _ in range(600):  # the server's first line, within a minute
        text = log.read_text()
        if "listening on " in text:
            return text.split("listening on ", 1)[1].split()[0]
        if server.poll() is not None:
            raise AssertionError(f"callback-server exited: {text}")
        time.sleep(0.1)
    raise AssertionError("callback-server did not start")


def test_a_stored_transcript_that_is_too_deep_is_bad_json() -> None:
    with pytest.raises(json.JSONDecodeError, match=_jsontext.TOO_DEEP):
        Transcript.from_json(DEEP)
