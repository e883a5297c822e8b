"""HTTP for AgentLoom: the `Transport` seam and its implementations.

`AiohttpTransport` is imported lazily (aiohttp takes well over 100 ms to import), and so are
the wrappers, so importing this package stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentloom.http._base import (
    BodyTooLarge,
    BufferedResponse,
    HttpRequest,
    HttpResponse,
    HttpTimeout,
    Transport,
    TransportError,
)

if TYPE_CHECKING:
    from agentloom.http._aiohttp import AiohttpTransport
    from agentloom.http._fault import Fault, FaultTransport
    from agentloom.http._mock import MockTransport

__all__ = [
    "AiohttpTransport",
    "BodyTooLarge",
    "BufferedResponse",
    "Fault",
    "FaultTransport",
    "HttpRequest",
    "HttpResponse",
    "HttpTimeout",
    "MockTransport",
    "Transport",
    "TransportError",
]

_LAZY = {
    "AiohttpTransport": "agentloom.http._aiohttp",
    "MockTransport": "agentloom.http._mock",
    "FaultTransport": "agentloom.http._fault",
    "Fault": "agentloom.http._fault",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(name)
