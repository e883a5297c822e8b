"""The HTTP client for streamable-HTTP MCP servers, with a bound on each message.

The SDK reads a JSON reply whole (`response.aread()`), however long: a server answering
a call with 64 MB of JSON cost about 136 MB (the result is then cut to `max_output_bytes`
anyway), and one whose body never ends grows memory for as long as it runs. Here the
client the SDK is given counts each reply's bytes as httpx hands them out (decoded, so
a compressed reply is counted at its real size): a JSON body, or one event of an SSE
stream (the bytes since its last blank line), longer than `max_message_bytes` stops the
read, that response's connection is dropped, the call waiting on it fails, and
`on_fault` hears why. Otherwise it is the SDK's own client: its timeouts, our headers.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import Any

_EVENT_ENDS = (b"\n\n", b"\r\r", b"\n\r")
"""Two line ends in a row (LF, CR or CRLF each), which is how an SSE event ends: a field
never holds a CR or LF, so these bytes occur in a stream nowhere else."""


def bounded_http_client(
    headers: Mapping[str, str] | None, *, max_message_bytes: int,
    on_fault: Callable[[str], None],
) -> Any:
    """An `httpx2.AsyncClient` for `streamable_http_client(http_client=...)`, made as the
    SDK's `create_mcp_http_client` makes it (its timeouts, our headers), whose replies
    are bounded as above. It asks for uncompressed replies (unless `headers` say
    otherwise)."""
    import httpx2
    from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

    transport = _classes()[1](max_message_bytes, on_fault)
    return httpx2.AsyncClient(
        headers={"accept-encoding": "identity", **(headers or {})},
        timeout=httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
        transport=transport,
    )


@functools.cache
def _classes() -> tuple[type[Exception], Any]:
    """(MessageTooLarge, the bounded transport), made once the optional SDK's httpx2 is
    imported (when the first HTTP server starts)."""
    import httpx2

    class MessageTooLarge(httpx2.SSEError, httpx2.StreamError):
        """A reply over the bound. Both an SSEError and a StreamError: the SDK resolves
        the waiting call with an error for either (SSE and JSON replies), and reconnects
        for neither."""

        def __init__(self, message: str) -> None:
            httpx2.SSEError.__init__(self, message)

    class BoundedResponse(httpx2.Response):
        limit: int
        on_fault: Callable[[str], None]

        async def aiter_bytes(self, chunk_size: int | None = None
                              ) -> AsyncGenerator[bytes, None]:
            # Decoded bytes, which `aread`, `aiter_text` and the SSE parser all read.
            content_type = self.headers.get("content-type", "").partition(";")[0]
            sse = content_type.strip().lower() == "text/event-stream"
            size, last = 0, b""
            async for chunk in super().aiter_bytes(chunk_size):
                if sse:
                    joined = last + chunk
                    cut = max(joined.rfind(end) for end in _EVENT_ENDS)
                    size = len(joined) - cut - 2 if cut >= 0 else size + len(chunk)
                    last = chunk[-1:]
                else:
                    size += len(chunk)
                if size > self.limit:
                    reason = (f"the server sent a message larger than {self.limit} bytes; "
                              "the connection was closed")
                    self.on_fault(reason)
                    raise MessageTooLarge(reason)
                yield chunk

    class BoundedTransport(httpx2.AsyncBaseTransport):
        def __init__(self, limit: int, on_fault: Callable[[str], None]) -> None:
            self._inner = httpx2.AsyncHTTPTransport()
            self._limit, self._on_fault = limit, on_fault

        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            inner = await self._inner.handle_async_request(request)
            response = BoundedResponse(inner.status_code, headers=inner.headers,
                                       stream=inner.stream, extensions=inner.extensions)
            response.limit, response.on_fault = self._limit, self._on_fault
            return response

        async def aclose(self) -> None:
            await self._inner.aclose()

    return MessageTooLarge, BoundedTransport
