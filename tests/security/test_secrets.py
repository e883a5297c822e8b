"""No secret reaches a file a run writes or its stderr: not an API key a 401 echoes back,
not a key or state secret that a streamed reply splits across chunks or events."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from aiohttp import web
from bounds_helpers import HostileServer, llm_flow, run_cli

from agentloom.errors import ProviderError
from agentloom.http import AiohttpTransport
from agentloom.messages import Message, ModelRequest
from agentloom.providers import get_protocol, vendor_endpoint
from agentloom.recording._redact_stream import redact_stream
from agentloom.redact import Redactor
from agentloom.routing import ProviderClient

KEY = "hostile-key-0123456789abcdef"  # no vendor prefix: only knowing the key can catch it
SECRET = "hunter2-very-secret"
ENV = {"HOSTILE_KEY": KEY}


async def echo_key_401(request: web.Request) -> web.Response:
    token = request.headers.get("Authorization", "").split()[-1]
    return web.json_response(
        {"error": {"message": f"Incorrect API key provided: {token}. Check {token}.",
                   "type": "invalid_request_error", "param": token}}, status=401,
        headers={"x-echo": token})


def _event(text: str) -> bytes:
    return ("data: " + json.dumps({
        "id": "c", "object": "chat.completion.chunk", "model": "gpt-4o-mini",
        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]})
        + "\n\n").encode()


async def split_secrets(request: web.Request) -> web.StreamResponse:
    """The key cut across two SSE events; the state secret cut by a chunk boundary
    inside one event (the halves are written apart, so they arrive as two reads)."""
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    await resp.write(_event("key " + KEY[:10]))
    await resp.write(_event(KEY[10:] + " and "))
    inner = _event(f"pass {SECRET} end")
    cut = inner.index(SECRET.encode()) + 7
    await resp.write(inner[:cut])
    await asyncio.sleep(0.05)
    await resp.write(inner[cut:])
    await resp.write(("data: " + json.dumps({
        "id": "c", "object": "chat.completion.chunk", "model": "gpt-4o-mini",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}) + "\n\n"
        "data: [DONE]\n\n").encode())
    return resp


async def test_a_provider_error_carries_no_key_in_message_body_or_headers() -> None:
    with HostileServer(echo_key_401) as server:
        endpoint = vendor_endpoint("generic_openai", base_url=server.base_url, api_key=KEY)
        transport = AiohttpTransport()
        client = ProviderClient(endpoint, get_protocol("openai"), transport)
        try:
            with pytest.raises(ProviderError) as info:
                await client.complete(ModelRequest(model="gpt-4o-mini",
                                                   messages=(Message.user("hi"),)))
        finally:
            await transport.aclose()
    error = info.value
    assert error.status == 401
    assert KEY not in f"{error} {error.body} {error.headers}"
    assert error.headers["x-echo"] == "[REDACTED]"


def _files_text(root: Path) -> str:
    """Every byte the run left under `root`, the store's WAL included."""
    return "".join(p.read_bytes().decode("latin-1") for p in root.rglob("*") if p.is_file()
                   and p.name != "flow.yaml")


def test_a_401_that_echoes_the_key_leaves_it_nowhere(tmp_path: Path) -> None:
    with HostileServer(echo_key_401) as server:
        flow = llm_flow(tmp_path, server)
        child = run_cli(["run", str(flow), "--trace", "trace.jsonl", "--record", "rec.json"],
                        tmp_path, env=ENV)
    assert child.returncode == 1
    assert "HTTP 401" in child.stderr and "[REDACTED]" in child.stderr
    assert KEY not in child.stderr + child.stdout
    assert (tmp_path / ".agentloom" / "runs.db").is_file()
    written = _files_text(tmp_path)
    assert "Incorrect API key" in written  # the error is stored ...
    assert KEY not in written  # ... without the key


def _assembled(chunks: list[dict[str, str]]) -> str:
    text = "".join(c["text"] for c in chunks)
    out = []
    for line in text.splitlines():
        if line.startswith("data: {"):
            for choice in json.loads(line[6:])["choices"]:
                out.append(choice["delta"].get("content") or "")
    return "".join(out)


def test_a_stream_splitting_secrets_is_recorded_redacted(tmp_path: Path) -> None:
    with HostileServer(split_secrets) as server:
        flow = llm_flow(tmp_path, server, stream=True)
        text = flow.read_text().replace(
            "config:", "state_schema: {password: {redact: true}}\nconfig:")
        flow.write_text(text)
        child = run_cli(["run", str(flow), "--record", "rec.json", "--no-checkpoint",
                         "--state", f"password={SECRET}"], tmp_path, env=ENV)
    assert child.returncode == 0, child.stderr
    recording = json.loads((tmp_path / "rec.json").read_text())
    (exchange,) = recording["exchanges"]
    chunks = exchange["response"]["chunks"]
    reply = _assembled(chunks)
    assert reply == "key [REDACTED] and pass [REDACTED] end"
    stored = json.dumps(recording)
    for secret in (KEY, SECRET, KEY[10:], SECRET[7:]):
        assert secret not in stored


def test_replay_of_a_redacted_stream_gives_the_redacted_reply(tmp_path: Path) -> None:
    redactor = Redactor(secrets=[SECRET])
    raw = _event(f"a {SECRET[:5]}") + _event(f"{SECRET[5:]} b") + b"data: [DONE]\n\n"
    pieces = [(0.1, raw[:30]), (0.2, raw[30:200]), (0.3, raw[200:])]  # events are ~160 B
    chunks = redact_stream(pieces, redactor)
    assert chunks is not None
    assert [c["t"] for c in chunks] == [0.1, 0.2, 0.3]
    assert _assembled(chunks) == "a [REDACTED] b"
    assert "".join(c["text"] for c in chunks).endswith("data: [DONE]\n\n")


def test_a_stream_without_secrets_keeps_its_bytes() -> None:
    pieces = [(0.1, _event("caf\u00e9")[:40]), (0.2, _event("caf\u00e9")[40:])]
    assert redact_stream(pieces, Redactor(secrets=[SECRET])) is None


def _reply(text: str) -> web.Response:
    return web.json_response({
        "id": "c1", "object": "chat.completion", "created": 0, "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}})


async def echo_everything(request: web.Request) -> web.Response:
    """A model that repeats the key it was sent, and (for `http_request`, which posts with
    a query) a page that repeats its query."""
    if request.query_string:
        return web.Response(text=f"page for {request.query_string}")
    token = request.headers.get("Authorization", "").split()[-1]
    return _reply(f"you sent me {token}")


def _provider(server: HostileServer) -> str:
    return ("providers:\n"
            "  hostile: {type: openai, base_url: " + server.base_url + ", "
            "api_key_env: HOSTILE_KEY}\n"
            "config: {provider: hostile, model: gpt-4o-mini}\n")


def test_a_pause_whose_prompt_quotes_a_key_stores_and_prints_it_redacted(
        tmp_path: Path) -> None:
    flow = tmp_path / "flow.yaml"
    with HostileServer(echo_everything) as server:
        flow.write_text("name: gate\n" + _provider(server) + (
            "steps:\n"
            "  - {id: review, type: approval_gate, message: 'Send {state.note}?'}\n"),
            encoding="utf-8")
        child = run_cli(["run", str(flow), "--state", f"note=the key {KEY}"], tmp_path,
                        env=ENV)
    assert child.returncode == 3, child.stderr
    assert "Send the key [REDACTED]?" in child.stderr  # told once, with how to resume
    assert child.stderr.count("[REDACTED]") == 1 and "resume with:" in child.stderr
    assert KEY not in child.stderr + child.stdout
    assert KEY not in _files_text(tmp_path)
    run_id = child.stderr.split("agentloom resume ")[1].split()[0]
    shown = run_cli(["runs", "show", run_id], tmp_path, env=ENV)
    assert "waiting for approval at review: Send the key [REDACTED]?" in shown.stdout, (
        shown.stderr)


def test_a_step_error_quoting_a_key_is_stored_redacted(tmp_path: Path) -> None:
    flow = tmp_path / "flow.yaml"
    with HostileServer(echo_everything) as server:
        flow.write_text("name: fetch\n" + _provider(server) + (
            "steps:\n"
            "  - id: get\n"
            "    type: tool\n"
            "    tool_name: http_request\n"  # the network is off: refused, URL quoted
            "    tool_args: {url: 'http://127.0.0.1:9/?k={state.note}'}\n"),
            encoding="utf-8")
        child = run_cli(["run", str(flow), "--state", f"note={KEY}"], tmp_path, env=ENV)
    assert child.returncode == 1
    assert "refused 'http://127.0.0.1:9/?k=[REDACTED]'" in child.stderr
    written = _files_text(tmp_path)
    assert "network access is off" in written  # the error is stored ...
    assert KEY not in written  # ... without the key


@pytest.mark.parametrize("store", [False, True])
def test_a_batch_writes_no_key_and_its_tools_reach_the_network(
        tmp_path: Path, store: bool) -> None:
    flow = tmp_path / "flow.yaml"
    inputs = tmp_path / "in.jsonl"
    inputs.write_text(json.dumps({"note": "x"}) + "\n", encoding="utf-8")
    with HostileServer(echo_everything) as server:
        flow.write_text("name: batch\n" + _provider(server).replace("config: {", (
            "config: {sandbox: {allow_network: true, allow_private_addresses: true}, ")) + (
            "steps:\n"
            "  - {id: ask, type: llm_call, prompt: hi, output: said}\n"
            "  - id: get\n"
            "    type: tool\n"
            "    depends_on: [ask]\n"
            "    tool_name: http_request\n"
            "    tool_args: {url: '" + server.base_url + "/chat/completions?k={state.said}',"
            " method: POST}\n"
            "    output: page\n"), encoding="utf-8")
        child = run_cli(["batch", str(flow), str(inputs), "-o", "out.jsonl",
                         *(["--store", "runs.db"] if store else [])], tmp_path, env=ENV)
    assert child.returncode == 0, child.stderr
    (line,) = (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()
    result = json.loads(line)
    assert result["status"] == "success", result  # the provider's key_env reached it
    # The tool's page (through the runtime's transport) echoes the model's reply, which
    # echoed the key.
    assert result["outputs"]["page"] == "page for k=you sent me [REDACTED]"
    assert KEY not in _files_text(tmp_path)


PROXY_PASSWORD = "proxy-pass-5678"


async def behind_basic_auth(request: web.Request) -> web.Response:
    import base64

    expected = "Basic " + base64.b64encode(f"team:{PROXY_PASSWORD}".encode()).decode()
    if request.headers.get("Authorization") != expected:
        return web.json_response({"error": {"message": "who are you?"}}, status=401)
    return web.json_response({
        "id": "c1", "object": "chat.completion", "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "through the proxy"}}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 3, "total_tokens": 6}})


def test_a_password_in_a_base_url_reaches_the_proxy_and_no_file(tmp_path: Path) -> None:
    """`base_url: http://team:PASSWORD@proxy/v1` (a model server behind basic auth): the
    request carries it, and the recording's URL, the trace and the store don't."""
    with HostileServer(behind_basic_auth) as server:
        with_password = server.base_url.replace("http://", f"http://team:{PROXY_PASSWORD}@")
        (tmp_path / "flow.yaml").write_text(
            "name: proxied\nproviders:\n  proxy:\n    type: openai\n"
            f"    base_url: {with_password}\n"
            "config: {provider: proxy, model: gpt-4o-mini}\n"
            "steps:\n  - {id: ask, type: llm_call, prompt: hello, output: answer}\n")
        child = run_cli(["run", "flow.yaml", "--trace", "trace.jsonl", "--trace-content",
                         "--record", "rec.json", "--json"], tmp_path)
    assert child.returncode == 0, child.stderr
    assert json.loads(child.stdout)["outputs"]["answer"] == "through the proxy"
    recorded = json.loads((tmp_path / "rec.json").read_text())["exchanges"][0]["request"]
    assert recorded["url"].startswith("http://team:[REDACTED]@127.0.0.1:")
    assert PROXY_PASSWORD not in _files_text(tmp_path) + child.stdout + child.stderr
