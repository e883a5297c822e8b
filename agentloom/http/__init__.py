"""HTTP for AgentLoom: the `Transport` seam and its implementations.

`AiohttpTransport` is imported lazily (aiohttp takes ~190 ms to import), so importing this
package stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentloom.http._base import (
    BufferedResponse as BufferedResponse,
    HttpRequest as HttpRequest,
    HttpResponse as HttpResponse,
    HttpTimeout as HttpTimeout,
    Transport as Transport,
    TransportError as TransportError,
)

if TYPE_CHECKING:
    from agentloom.http._aiohttp import AiohttpTransport as AiohttpTransport
    from agentloom.http._mock import MockTransport as MockTransport

_LAZY = {
    "AiohttpTransport": "agentloom.http._aiohttp",
    "MockTransport": "agentloom.http._mock",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(name)
