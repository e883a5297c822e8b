"""MockTransport: plain and async handlers, and the requests it saw."""

from __future__ import annotations

from agentloom.http import BufferedResponse, HttpRequest, MockTransport, Transport


async def test_sync_and_async_handlers() -> None:
    sync = MockTransport(lambda req: BufferedResponse(status=201, body=req.body or b""))

    async def handler(req: HttpRequest) -> BufferedResponse:
        return BufferedResponse(status=200, chunks=[b"a", b"b"])

    asynchronous = MockTransport(handler)
    assert isinstance(sync, Transport)
    r1 = await sync.handle(HttpRequest(method="POST", url="http://x/", body=b"hi"))
    assert (r1.status, await r1.read()) == (201, b"hi")
    r2 = await asynchronous.handle(HttpRequest(method="GET", url="http://x/"))
    assert [c async for c in r2.aiter_bytes()] == [b"a", b"b"]
    assert [r.method for r in sync.requests + asynchronous.requests] == ["POST", "GET"]
