"""Providers: wire protocols that turn requests into bytes and back, with no I/O.

One job: encode a `ModelRequest` for a vendor's wire format and decode its replies (whole
bodies, SSE/NDJSON streams) into `ModelResponse`s and stream events, through one response
assembler; endpoints are data and model capability facts live in `profiles`. May import
only the bottom types layer (`messages`, `errors`, `transport`, `_record`, `_jsontext`,
...); the migration faces (`gateway`, `google`, and the public AgentLoom's provider
class names of `openai`, `anthropic`, `ollama`) alone reach up into `agentloom.compat`.
Sending bytes is `agentloom.http`'s job; retries and fallbacks are `agentloom.routing`'s.

Protocol modules load on first use through `get_protocol(name)`, so `import agentloom`
pays for none of them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from agentloom.errors import ConfigError
from agentloom.providers._assemble import ResponseBuilder as ResponseBuilder
from agentloom.providers._base import AttemptRecord as AttemptRecord
from agentloom.providers._base import AttemptSink as AttemptSink
from agentloom.providers._base import Capabilities as Capabilities
from agentloom.providers._base import Endpoint as Endpoint
from agentloom.providers._base import EventSink as EventSink
from agentloom.providers._base import ModelClient as ModelClient
from agentloom.providers._base import ReasoningStyle as ReasoningStyle
from agentloom.providers._base import StreamDecoder as StreamDecoder
from agentloom.providers._base import WireProtocol as WireProtocol
from agentloom.providers._endpoints import VENDORS as VENDORS
from agentloom.providers._endpoints import endpoints_from_env as endpoints_from_env
from agentloom.providers._endpoints import vendor_endpoint as vendor_endpoint
from agentloom.providers.profiles import check_attachments as check_attachments

if TYPE_CHECKING:
    from agentloom.messages import ModelRequest

PROTOCOLS: dict[str, str] = {
    "openai": "agentloom.providers.openai",
    "anthropic": "agentloom.providers.anthropic",
    "gemini": "agentloom.providers.gemini",
    "ollama": "agentloom.providers.ollama",
    "llamacpp": "agentloom.providers.llamacpp",
    "openai_responses": "agentloom.providers.openai_responses",
}

_LOADED: dict[str, WireProtocol] = {}


def get_protocol(name: str) -> WireProtocol:
    """The wire protocol called `name` (`openai`, `openai_responses`, `anthropic`,
    `gemini`, `ollama`, `llamacpp`)."""
    protocol = _LOADED.get(name)
    if protocol is not None:
        return protocol  # routing asks on every client it builds: no import machinery
    module = PROTOCOLS.get(name)
    if module is None:
        raise ConfigError(
            f"unknown wire protocol {name!r}; known protocols: {', '.join(PROTOCOLS)}"
        )
    loaded: WireProtocol = importlib.import_module(module).PROTOCOL
    _LOADED[name] = loaded
    return loaded


def structured_mode(request: ModelRequest) -> str | None:
    """How the request's `response_format` reaches the model: `native` (the provider's
    JSON-schema or JSON mode) or `prompted` (the schema in the system prompt; Claude models
    without the native output format); None without a response format."""
    if request.response_format is None:
        return None
    if request.model.startswith("claude-"):
        mode: str | None = importlib.import_module(
            "agentloom.providers.anthropic").structured_mode(request)
        return mode
    return "native"


