"""`agentloom run --trace FILE`, `--trace-content` and `--otel`, in process against the fake
OpenAI server: the trace is ordered JSONL of every step's loop between run_start and
run_end; `--json` stdout is unchanged; spans go to stderr or an OTLP collector on
loopback; a secret of `state_schema`, the API key and Authorization headers reach no
artefact of the run (stdout, stderr, trace file, recording, run store, exported spans)."""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

from agentloom.cli import main
from agentloom.testing._server import FakeReply
from agentloom.testing.fake_openai import FakeOpenAIServer

SECRET = "tok-SuperSecret-4242"
API_KEY = "sk-test-key-123456789abcdef"

FLOW = """\
name: traced
config: {model: gpt-4o-mini, provider: openai}
state_schema: {api_token: {redact: true}}
state: {topic: tea}
steps:
  - id: one
    type: llm_call
    prompt: "write about {state.topic} with {state.api_token}"
    tools: [echo]
    output: a
  - {id: two, type: llm_call, depends_on: [one], prompt: "shorten: {state.a}", output: b}
"""

TOOLS = '''\
from agentloom import tool


@tool
def echo(text: str) -> str:
    """Echo a text back."""
    return "echoed " + text
'''


def _reply(body: dict[str, Any]) -> FakeReply:
    last = body["messages"][-1]
    if body.get("tools") and last["role"] == "user":
        # The model passes the prompt (secret included) to the tool.
        return FakeReply(tool_calls=[("echo", {"text": last["content"]})])
    return FakeReply(text="done: " + str(last["content"])[:50], input_tokens=12,
                     output_tokens=5)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeOpenAIServer]:
    s = FakeOpenAIServer(responder=_reply)
    s.start_in_thread()
    monkeypatch.chdir(tmp_path)
    for name in ("ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "OLLAMA_HOST",
                 "AGENTLOOM_PROVIDER", "AGENTLOOM_MODEL"):
        monkeypatch.delenv(name, raising=False)
    for name in [k for k in os.environ if k.startswith("OTEL_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", s.openai_base_url)
    (tmp_path / "flow.yaml").write_text(FLOW)
    (tmp_path / "tools.py").write_text(TOOLS)
    try:
        yield s
    finally:
        s.stop_thread()


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["run", "flow.yaml", "--tools", "tools.py", "--state",
                 f"api_token={SECRET}", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def _events(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def test_trace_file_is_ordered_jsonl_of_every_step_and_json_stdout_is_unchanged(
        server: FakeOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, plain_out, err = _run(capsys, "--json", "--no-checkpoint")
    assert code == 0, err
    code, out, err = _run(capsys, "--json", "--no-checkpoint", "--trace", "run.jsonl")
    assert code == 0, err
    data = json.loads(out)  # stdout is only the JSON, with the same shape as without
    assert set(data) == set(json.loads(plain_out))
    assert data["steps"]["one"]["summary"]["tool_calls"] == {"echo": 1}
    events = _events(tmp_path / "run.jsonl")
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[0]["event"] == "run_start" and events[-1]["event"] == "run_end"
    run_id = data["run_id"]
    assert events[0]["run_id"] == run_id and events[0]["workflow"] == "traced"
    steps = {e["step_id"] for e in events if "step_id" in e}
    assert steps == {"one", "two"}
    one = [e["event"] for e in events if e.get("step_id") == "one"]
    assert one[0] == "conversation_start" and one[-1] == "conversation_end"
    assert {"tool_start", "tool_end", "request", "response"} <= set(one)
    end = events[-1]
    assert end["status"] == "success" and end["summary"]["steps"] == {"success": 2}
    assert end["summary"]["tokens"] == data["summary"]["tokens"]
    # Metadata only by default.
    text = (tmp_path / "run.jsonl").read_text()
    for needle in ("write about", "echoed", "done:", SECRET, API_KEY):
        assert needle not in text, needle


def test_a_secret_reaches_no_artefact_even_with_content(
        server: FakeOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    code, out, err = _run(capsys, "--json", "--record", "rec.json", "--run-id", "s1",
                          "--trace", "run.jsonl", "--trace-content", "--otel")
    assert code == 0, err
    # The model and the tool did get the secret: it is the artefacts that must not.
    assert SECRET in json.dumps(server.requests[0].json)
    trace = (tmp_path / "run.jsonl").read_text()
    assert "write about tea with [REDACTED]" in trace  # content is captured, redacted
    assert "echoed write about tea" in trace
    assert "invoke_workflow traced" in err  # the console exporter wrote the spans
    artefacts = {"stdout": out, "stderr": err, "trace": trace,
                 "recording": (tmp_path / "rec.json").read_text()}
    for path in (tmp_path / ".agentloom").iterdir():
        artefacts[path.name] = path.read_bytes().decode("utf-8", "replace")
    for name, text in artefacts.items():
        assert SECRET not in text, name
        assert API_KEY not in text, name
        assert "Bearer " + API_KEY not in text, name
    assert '"authorization"' not in trace.lower()
    assert json.loads(out)["state"]["api_token"] == "[REDACTED]"


class _Collector(BaseHTTPRequestHandler):
    received: list[tuple[str, dict[str, str], bytes]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        _Collector.received.append((self.path, dict(self.headers), body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[str]:
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
    _Collector.received = []
    httpd = HTTPServer(("127.0.0.1", 0), _Collector)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_otel_exports_the_span_tree_over_otlp(
        server: FakeOpenAIServer, collector: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20collector-tok")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "flows")
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
    code, out, err = _run(capsys, "--json", "--no-checkpoint", "--otel", "--trace-content")
    assert code == 0, err
    json.loads(out)
    paths = {p for p, _h, _b in _Collector.received}
    assert paths == {"/v1/traces"}
    assert all(h.get("authorization") == "Bearer collector-tok"
               for _p, h, _b in _Collector.received)
    spans: dict[bytes, Any] = {}
    service = set()
    for _p, _h, body in _Collector.received:
        req = ExportTraceServiceRequest.FromString(body)
        for rs in req.resource_spans:
            service |= {a.value.string_value for a in rs.resource.attributes
                        if a.key == "service.name"}
            for ss in rs.scope_spans:
                for span in ss.spans:
                    spans[span.span_id] = span
    assert service == {"flows"}
    root = next(s for s in spans.values() if s.name == "invoke_workflow traced")
    assert not root.parent_span_id
    agents = [s for s in spans.values() if s.name.startswith("invoke_agent")]
    assert len(agents) == 2 and all(a.parent_span_id == root.span_id for a in agents)
    tools = [s for s in spans.values() if s.name == "execute_tool echo"]
    assert len(tools) == 1 and spans[tools[0].parent_span_id] in agents
    blob = b"".join(b for _p, _h, b in _Collector.received)
    assert SECRET.encode() not in blob and API_KEY.encode() not in blob
    assert b"[REDACTED]" in blob  # content was captured, redacted
    assert "collector-tok" not in out + err


def test_otel_without_the_sdk_is_one_clear_line(
        server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)
    code, out, err = _run(capsys, "--otel")
    assert code == 2
    assert err == "agentloom: error: --otel needs the OpenTelemetry SDK: pip install " \
                  "'agentloom-engine[otel]'\n"
    assert out == "" and not server.requests


def test_otlp_without_its_exporter_package_is_one_clear_line(
        server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.grpc", None)
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.grpc.trace_exporter",
                        None)
    code, _out, err = _run(capsys, "--otel")
    assert code == 2
    assert "needs opentelemetry-exporter-otlp-proto-grpc" in err
    assert err.count("\n") == 1 and not server.requests


def test_a_trace_into_a_fifo_nobody_reads_is_a_usage_error_not_a_hang(
        server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "t.fifo")
    code, out, err = _run(capsys, "--trace", "t.fifo")
    assert code == 2, err
    assert err == "agentloom: error: --trace t.fifo: can't write it: a FIFO nobody reads\n"
    assert out == "" and not server.requests


def test_a_trace_into_a_fifo_that_is_read_streams_the_events(
        server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # `--trace >(jq .)`: the shell hands over a pipe somebody reads.
    os.mkfifo(tmp_path / "t.fifo")
    reader = os.open(tmp_path / "t.fifo", os.O_RDONLY | os.O_NONBLOCK)
    os.set_blocking(reader, True)
    # Held open so the reader sees no end of file before the run opens its end.
    keeper = os.open(tmp_path / "t.fifo", os.O_WRONLY | os.O_NONBLOCK)
    received: list[bytes] = []

    def drain() -> None:
        while chunk := os.read(reader, 65536):  # b"" once both ends for writing closed
            received.append(chunk)

    thread = threading.Thread(target=drain)
    thread.start()
    try:
        code, _out, err = _run(capsys, "--trace", "t.fifo")
    finally:
        os.close(keeper)
        thread.join()
        os.close(reader)
    assert code == 0, err
    events = [json.loads(line) for line in b"".join(received).decode().splitlines()]
    assert events[0]["event"] == "run_start" and events[-1]["event"] == "run_end"


@pytest.mark.parametrize(("args", "env", "message"), [
    (["--trace-content"], {}, "--trace-content needs --trace FILE or --otel"),
    (["--trace", "no/such/dir/t.jsonl"], {}, "--trace no/such/dir/t.jsonl: can't write it"),
    (["--otel"], {"OTEL_TRACES_EXPORTER": "zipkin"}, "OTEL_TRACES_EXPORTER='zipkin'"),
    (["--otel"], {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_HEADERS": "tok-abc"},
     "OTEL_EXPORTER_OTLP_TRACES_HEADERS: expected key=value pairs"),
])
def test_bad_trace_flags_are_usage_errors(
        server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, args: list[str], env: dict[str, str],
        message: str) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    code, out, err = _run(capsys, *args)
    assert code == 2, err
    assert message in err and err.count("\n") == 1
    assert "tok-abc" not in err
    assert out == "" and not server.requests
