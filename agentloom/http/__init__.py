"""HTTP for AgentLoom: the `Transport` seam and its implementations.

Job: moves bytes: the `Transport` implementations (aiohttp, mock, fault) and the address
guard; knows no vendor. May import: the types layer (`transport`, `errors`, `_clock`,
...) (tests/test_layers.py holds the rule).

`AiohttpTransport` is imported lazily (aiohttp takes well over 100 ms to import), and so are
the wrappers, so importing this package stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentloom._lazy import lazy_getattr
from agentloom.transport import (
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


__getattr__ = lazy_getattr(__name__, _LAZY, globals())
