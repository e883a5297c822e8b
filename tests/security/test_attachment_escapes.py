"""Hostile attachment sources: local paths that leave the workflow's directory with no
sandbox block, links and FIFOs planted beside the workflow, and URL attachments inside a
`map` body under `agentloom run` (a real loopback image server, the fake OpenAI server)."""

from __future__ import annotations

import base64
import json
import os
import threading
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from agentloom.messages import ImagePart
from agentloom.testing.scripted import ScriptedModel
from agentloom.workflow import RunStatus, StepStatus, arun_workflow, load_workflow

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
                       "+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
SECRET_PNG = PNG + b"SECRET"


class Factory:
    default_model = "test-model"
    default_provider = "scripted"

    def __init__(self, model: Any) -> None:
        self.model = model

    def client(self, *, model: str | None, provider: str | None = None,
               fallback: Sequence[Any] = (), retry: Any = None, budget: Any = None) -> Any:
        return self.model


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    flow, outside = tmp_path / "flow", tmp_path / "outside"
    flow.mkdir()
    outside.mkdir()
    (flow / "ok.png").write_bytes(PNG)
    (outside / "secret.png").write_bytes(SECRET_PNG)
    return flow, outside


def _flow(flow: Path, source: str, sandbox: str = "") -> Path:
    path = flow / "wf.yaml"
    path.write_text(f"""\
name: attach
{sandbox}
state: {{src: {json.dumps(source)}}}
steps:
  - id: look
    type: llm_call
    prompt: describe
    attachments: [{{source: "{{state.src}}"}}]
""")
    return path


async def _run(path: Path) -> tuple[Any, ScriptedModel]:
    model = ScriptedModel(["seen"])
    result = await arun_workflow(load_workflow(path), clients=Factory(model))
    return result, model


@pytest.mark.parametrize("source", ["../outside/secret.png", "ABSOLUTE", "link.png",
                                    "sub/../../outside/secret.png", "dirlink/secret.png"])
async def test_no_sandbox_block_keeps_files_inside_the_workflow_directory(
        layout: tuple[Path, Path], source: str) -> None:
    flow, outside = layout
    (flow / "link.png").symlink_to(outside / "secret.png")
    (flow / "dirlink").symlink_to(outside)
    (flow / "sub").mkdir()
    if source == "ABSOLUTE":
        source = str(outside / "secret.png")
    result, model = await _run(_flow(flow, source))
    look = result.steps["look"]
    assert look.status is StepStatus.FAILED
    assert "outside the workflow's directory" in str(look.error)
    assert model.requests == []  # nothing was sent


async def test_a_file_beside_the_workflow_is_read_from_any_working_directory(
        layout: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    flow, outside = layout
    monkeypatch.chdir(outside)  # relative sources resolve against the workflow file
    result, model = await _run(_flow(flow, "ok.png"))
    assert result.status is RunStatus.SUCCESS, result.error
    part = model.requests[0].messages[-1].parts[1]
    assert isinstance(part, ImagePart) and part.data == PNG


async def test_a_fifo_beside_the_workflow_fails_the_step_without_blocking(
        layout: tuple[Path, Path]) -> None:
    flow, _ = layout
    os.mkfifo(flow / "pipe.png")
    result, model = await _run(_flow(flow, "pipe.png"))
    assert result.steps["look"].status is StepStatus.FAILED
    assert "not a regular file" in str(result.steps["look"].error)
    assert model.requests == []


async def test_a_sandbox_block_with_paths_allows_those_only(
        layout: tuple[Path, Path]) -> None:
    flow, _ = layout
    data = flow / "data"
    data.mkdir()
    (data / "in.png").write_bytes(PNG)
    block = f"config:\n  sandbox: {{readable_paths: [{json.dumps(str(data))}]}}"
    result, _ = await _run(_flow(flow, "ok.png", block))
    assert result.steps["look"].status is StepStatus.FAILED  # beside the file, not in data
    result, _ = await _run(_flow(flow, "data/in.png", block))
    assert result.status is RunStatus.SUCCESS, result.error


async def test_enabled_false_reads_any_file(layout: tuple[Path, Path]) -> None:
    flow, outside = layout
    result, model = await _run(_flow(flow, str(outside / "secret.png"),
                                     "config:\n  sandbox: {enabled: false}"))
    assert result.status is RunStatus.SUCCESS, result.error
    assert model.requests[0].messages[-1].parts[1].data == SECRET_PNG  # type: ignore[union-attr]


# --- URL attachments in a map body, under `agentloom run` --------------------------------


@pytest.fixture
def image_server() -> Iterator[tuple[str, list[str]]]:
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.send_header("Content-Length", str(len(PNG)))
            self.end_headers()
            self.wfile.write(PNG)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def openai_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    from agentloom.testing._server import FakeReply
    from agentloom.testing.fake_openai import FakeOpenAIServer

    fake = FakeOpenAIServer(responder=lambda _b: FakeReply(text="a pixel"))
    fake.start_in_thread()
    for name in ("ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "OLLAMA_HOST",
                 "AGENTLOOM_PROVIDER", "AGENTLOOM_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_BASE_URL", fake.openai_base_url)
    try:
        yield fake
    finally:
        fake.stop_thread()


def test_url_attachments_in_a_map_body_download_under_agentloom_run(
        tmp_path: Path, image_server: tuple[str, list[str]], openai_server: Any,
        capsys: pytest.CaptureFixture[str]) -> None:
    from agentloom.cli import main

    address, seen = image_server
    urls = [f"http://{address}/a.png", f"http://{address}/b.png"]
    (tmp_path / "wf.yaml").write_text(f"""\
name: map-urls
config:
  provider: openai
  model: gpt-4o-mini
  sandbox: {{allow_network: true, allowed_addresses: ["{address}"]}}
state: {{images: {json.dumps(urls)}}}
steps:
  - id: each
    type: map
    over: state.images
    as: url
    step:
      id: look
      type: llm_call
      prompt: describe
      attachments: [{{source: "{{state.url}}"}}]
      output: seen
    output: results
""")
    code = main(["run", str(tmp_path / "wf.yaml"), "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err + out.out
    assert sorted(seen) == ["/a.png", "/b.png"]
    sent = json.dumps([r.json for r in openai_server.requests])
    assert sent.count(base64.b64encode(PNG).decode()) == 2  # each image reached the model


async def test_a_symlink_swapped_in_while_attachments_load_never_leaks(
        layout: tuple[Path, Path]) -> None:
    from agentloom.errors import ConfigError
    from agentloom.http import MockTransport
    from agentloom.tools.attachments import AttachmentPolicy, AttachmentSpec, load_attachment

    flow, outside = layout
    target = flow / "f.png"
    target.write_bytes(PNG)
    stop, started = threading.Event(), threading.Event()

    def flip() -> None:
        while not stop.is_set():
            if target.is_symlink():
                (flow / ".regular").write_bytes(PNG)
                os.replace(flow / ".regular", target)
            else:
                (flow / ".link").unlink(missing_ok=True)
                (flow / ".link").symlink_to(outside / "secret.png")
                os.replace(flow / ".link", target)
            started.set()

    flipper = threading.Thread(target=flip, daemon=True)
    flipper.start()
    started.wait()
    unused = MockTransport(lambda _r: pytest.fail("a local file needs no HTTP"))
    escapes = 0
    try:
        for _ in range(1000):
            try:
                part = await load_attachment(AttachmentSpec(source="f.png"), base_dir=flow,
                                             transport=unused, policy=AttachmentPolicy())
            except ConfigError:
                continue
            escapes += part.data == SECRET_PNG  # type: ignore[union-attr]
    finally:
        stop.set()
        flipper.join()
    assert escapes == 0
