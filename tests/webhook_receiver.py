"""A webhook receiver on 127.0.0.1 for the tests of a gate's `notify`: it records every
POST it gets (headers and body) and answers 200. `webhook_receiver` serves on the test's
event loop; `threaded_webhook_receiver` on a thread, for tests that drive processes."""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from aiohttp import web


@dataclass
class Receiver:
    url: str
    posts: list[tuple[dict[str, str], bytes]] = field(default_factory=list)

    def bodies(self) -> list[Any]:
        """The JSON bodies received, in order."""
        return [json.loads(body) for _, body in self.posts]


@asynccontextmanager
async def webhook_receiver() -> AsyncIterator[Receiver]:
    """A receiver listening at `Receiver.url` (`http://127.0.0.1:PORT/hook`) until the
    block ends."""
    holder: list[Receiver] = []

    async def hook(request: web.Request) -> web.Response:
        holder[0].posts.append((dict(request.headers), await request.read()))
        return web.json_response({"ok": True})

    app = web.Application()
    app.router.add_post("/hook", hook)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    holder.append(Receiver(url=f"http://127.0.0.1:{port}/hook"))
    try:
        yield holder[0]
    finally:
        await runner.cleanup()


@contextmanager
def threaded_webhook_receiver(status: int = 200) -> Iterator[Receiver]:
    """The same receiver on a thread of its own, while the block runs, answering
    `status`."""
    posts: list[tuple[dict[str, str], bytes]] = []

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = min(int(self.headers.get("Content-Length") or 0), 1 << 20)
            posts.append((dict(self.headers), self.rfile.read(length)))
            self.send_response(status)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Receiver(url=f"http://127.0.0.1:{server.server_port}/hook", posts=posts)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
