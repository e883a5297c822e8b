"""The provider-client table of a `Runtime`: one `ProviderClient` per endpoint and timeout.

Provider clients are stateless over the shared transport, so one per endpoint and timeout
serves every run, instead of a new one per step of every run. One is rebuilt only when
what it was built from changed: a provider re-added under the same name, a transport
swapped for recording or replay.
"""

from __future__ import annotations

import dataclasses

from agentloom.providers import Endpoint, ModelClient, get_protocol
from agentloom.routing._client import ProviderClient
from agentloom.transport import HttpTimeout, Transport


class ProviderClients:
    """The table: `(endpoint name, timeout)` -> the client, with the endpoint and the
    transport it was built from."""

    __slots__ = ("_clients",)

    def __init__(self) -> None:
        self._clients: dict[
            tuple[str | None, HttpTimeout | None], tuple[Endpoint, Transport, ModelClient]
        ] = {}

    def get(
        self,
        name: str | None,
        endpoint: Endpoint,
        timeout: HttpTimeout | None,
        transport: Transport,
    ) -> ModelClient:
        """The client of the endpoint called `name` (None: the embedded model's), as
        configured in `endpoint`, with `timeout` (None: the endpoint's) over `transport`."""
        key = (name, timeout)
        cached = self._clients.get(key)
        if cached is not None and cached[0] is endpoint and cached[1] is transport:
            return cached[2]
        resolved = endpoint
        if timeout is not None:
            resolved = dataclasses.replace(resolved, timeout=timeout)
        client = ProviderClient(resolved, get_protocol(resolved.protocol), transport)
        self._clients[key] = (endpoint, transport, client)
        return client
