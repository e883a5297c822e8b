"""A webhook receiver on 127.0.0.1 for the tests of a gate's `notify`: it records every
POST it gets (headers and body) and answers 200."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
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
