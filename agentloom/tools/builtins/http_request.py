"""`http_request`: fetch a URL for the model, checking every hop of a redirect chain.

The transport never follows redirects; this tool does, at most five, and runs the
sandbox's URL check (scheme, network switch, allowed domains, private addresses) before
each hop, so a redirect to 127.0.0.1 or to a metadata address is refused like a direct
request would be. Each hop is sent inside the policy's pin, so the connection goes only to
an address the same rules allow, judged on the lookup it connects with: a name that answers
a public address to the check and 127.0.0.1 to the connection (DNS rebinding) is refused.
The body is read as a stream and cut at the policy's output limit.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import urljoin, urlsplit

from agentloom.errors import ToolError
from agentloom.http.netguard import AddressRefused
from agentloom.tools._sandbox import SandboxPolicy, SandboxViolation
from agentloom.tools.builtins._base import SandboxedTool, arg, truncate
from agentloom.tools.contracts import ToolContext
from agentloom.transport import HttpRequest, HttpTimeout, Transport, TransportError

MAX_REDIRECTS = 5
_REDIRECTS = {301, 302, 303, 307, 308}
_METHODS = {"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}
_ORIGIN_BOUND_HEADERS = {"authorization", "cookie", "proxy-authorization"}


class HttpRequestTool(SandboxedTool):
    name = "http_request"
    description = "Make an HTTP request to a URL and return the response body."
    parameters = {
        "type": "object",
        "properties": {
            "url": {"type": "string", "description": "The full URL (http or https)."},
            "method": {
                "type": "string",
                "enum": sorted(_METHODS),
                "description": "HTTP method; GET by default.",
            },
            "headers": {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "description": "Request headers.",
            },
            "body": {"description": "Request body: text, or a JSON value sent as JSON."},
        },
        "required": ["url"],
    }

    def __init__(
        self,
        *,
        transport: Transport | None = None,
        policy: SandboxPolicy | None = None,
        timeout: float | None = None,
    ):
        super().__init__(policy=policy, timeout=timeout)
        self.transport = transport

    async def __call__(self, arguments: dict[str, Any], ctx: ToolContext) -> Any:
        if self.transport is None:
            raise ToolError("http_request: no HTTP transport was configured")
        url = arg(arguments, "url", str, tool=self.name)
        method = arg(
            arguments, "method", str, required=False, default="GET", tool=self.name
        ).upper()
        if method not in _METHODS:
            raise ToolError(f"http_request: unsupported method {method!r}")
        headers = {
            str(k): str(v)
            for k, v in (
                arg(arguments, "headers", dict, required=False, default={}, tool=self.name)
            ).items()
        }
        body = _encode_body(arguments.get("body"), headers)
        limit = self.call_timeout(arguments)
        try:
            async with asyncio.timeout(limit):
                return await self._fetch(method, url, headers, body, limit)
        except TimeoutError:
            raise ToolError(f"http_request: {url} timed out after {limit:g} s") from None

    async def _fetch(
        self, method: str, url: str, headers: dict[str, str], body: bytes | None, limit: float
    ) -> str:
        assert self.transport is not None
        for hop in range(MAX_REDIRECTS + 1):
            await self.policy.check_url(url)
            # The transport's own limit is a backstop: ours fires first, with a clear message.
            backstop = limit + 1.0
            request = HttpRequest(
                method=method,
                url=url,
                headers=headers,
                body=body,
                timeout=HttpTimeout(connect=backstop, read=backstop, total=backstop),
                stream=True,
            )
            try:
                with self.policy.pin():
                    response = await self.transport.handle(request)
            except AddressRefused as exc:
                raise SandboxViolation(
                    f"refused {url!r}: {exc}; allow it with sandbox.allowed_addresses or "
                    f"sandbox.allow_private_addresses"
                ) from None
            except TransportError as exc:
                raise ToolError(f"http_request: {method} {url} failed: {exc}") from None
            try:
                location = response.headers.get("location")
                if response.status in _REDIRECTS and location:
                    if hop == MAX_REDIRECTS:
                        raise ToolError(
                            f"http_request: more than {MAX_REDIRECTS} redirects from {url}"
                        )
                    try:
                        next_url = urljoin(url, location)
                        cross_origin = urlsplit(next_url)[:2] != urlsplit(url)[:2]
                    except ValueError as exc:  # `Location: http://[::1/`
                        raise ToolError(f"http_request: {url} redirects to a URL that is "
                                        f"not valid ({exc}): {location[:200]!r}") from None
                    if cross_origin:
                        headers = {
                            k: v
                            for k, v in headers.items()
                            if k.lower() not in _ORIGIN_BOUND_HEADERS
                        }
                    if response.status == 303 or (
                        response.status in (301, 302) and method == "POST"
                    ):
                        method, body = ("HEAD" if method == "HEAD" else "GET"), None
                    url = next_url
                    continue
                data = await _read_capped(response, self.policy.max_output_bytes)
            finally:
                await response.aclose()
            text = truncate(data, self.policy.max_output_bytes)
            if response.status >= 400:
                raise ToolError(
                    f"http_request: {method} {url} returned HTTP {response.status}: {text[:2000]}"
                )
            return text
        raise AssertionError("unreachable")


async def _read_capped(response: Any, limit: int) -> bytes:
    """At most limit+1 bytes (the +1 tells truncation apart), without reading the rest."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            break
    return b"".join(chunks)[: limit + 1]


def _encode_body(body: Any, headers: dict[str, str]) -> bytes | None:
    if body is None:
        return None
    if isinstance(body, str):
        return body.encode("utf-8")
    if not any(k.lower() == "content-type" for k in headers):
        headers["Content-Type"] = "application/json"
    return json.dumps(body).encode("utf-8")
