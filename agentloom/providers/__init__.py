"""Providers: wire protocols (pure encode/decode), endpoints (data) and the client that
joins them to a transport.

Protocol modules load on first use through `get_protocol(name)`, so `import agentloom`
pays for none of them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from agentloom.errors import ConfigError
from agentloom.providers._base import (
    AttemptRecord as AttemptRecord,
)
from agentloom.providers._base import (
    Capabilities as Capabilities,
)
from agentloom.providers._base import (
    Endpoint as Endpoint,
)
from agentloom.providers._base import (
    ModelClient as ModelClient,
)
from agentloom.providers._base import (
    StreamDecoder as StreamDecoder,
)
from agentloom.providers._base import (
    WireProtocol as WireProtocol,
)

if TYPE_CHECKING:
    from agentloom.messages import ModelRequest
    from agentloom.providers._client import ProviderClient as ProviderClient
    from agentloom.providers._endpoints import (
        endpoints_from_env as endpoints_from_env,
    )
    from agentloom.providers._endpoints import (
        vendor_endpoint as vendor_endpoint,
    )
    from agentloom.providers.local import LocalModelServer as LocalModelServer

PROTOCOLS: dict[str, str] = {
    "openai": "agentloom.providers.openai",
    "anthropic": "agentloom.providers.anthropic",
    "gemini": "agentloom.providers.gemini",
    "ollama": "agentloom.providers.ollama",
    "openai_responses": "agentloom.providers.openai_responses",
}

_LAZY = {
    "ProviderClient": "agentloom.providers._client",
    "vendor_endpoint": "agentloom.providers._endpoints",
    "endpoints_from_env": "agentloom.providers._endpoints",
    "LocalModelServer": "agentloom.providers.local",
}


def get_protocol(name: str) -> WireProtocol:
    """The wire protocol called `name` (`openai`, `openai_responses`, `anthropic`,
    `gemini`, `ollama`)."""
    module = PROTOCOLS.get(name)
    if module is None:
        raise ConfigError(
            f"unknown wire protocol {name!r}; known protocols: {', '.join(PROTOCOLS)}"
        )
    protocol: WireProtocol = importlib.import_module(module).PROTOCOL
    return protocol


def structured_mode(request: ModelRequest) -> str | None:
    """How the request's `response_format` reaches the model: `native` (the provider's
    JSON-schema or JSON mode) or `prompted` (the schema in the system prompt; Claude models
    without the native output format); None without a response format."""
    if request.response_format is None:
        return None
    if request.model.startswith("claude-"):
        from agentloom.providers.anthropic import structured_mode as anthropic_mode

        return anthropic_mode(request)
    return "native"


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(name)
    return getattr(importlib.import_module(module), name)
