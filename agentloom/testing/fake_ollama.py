"""A fake Ollama server on 127.0.0.1, for our tests and yours.

It speaks the real wire format: `POST /api/chat` streams NDJSON chunks unless the request
says `"stream": false` (Ollama streams by default), the last chunk `done: true` with
`done_reason` and the eval counts. Thinking text is sent only when the request sets
`think`, as a thinking model does. `GET /api/tags` lists one model.

    async with FakeOllamaServer() as server:
        server.script("Hello from a local model")
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from agentloom.testing._server import (
    FakeError,
    FakeReply,
    FakeServer,
    split_text,
)

_CREATED = "2026-01-01T00:00:00.000000Z"


def _args(args: dict[str, Any] | str) -> dict[str, Any]:
    if isinstance(args, str):
        value = json.loads(args) if args else {}
        return value if isinstance(value, dict) else {}
    return args


class FakeOllamaServer(FakeServer):
    """Serves POST /api/chat and GET /api/tags."""

    def routes(self) -> list[web.RouteDef]:
        return [web.post("/api/chat", self._chat), web.get("/api/tags", self._tags)]

    async def _tags(self, request: web.Request) -> web.Response:
        return web.json_response({"models": [{"name": "llama3.2:3b", "model": "llama3.2:3b",
                                              "size": 0, "digest": "fake"}]})

    def error_body(self, entry: FakeError) -> FakeError:
        """A plain-text scripted error, wrapped as Ollama wraps its errors."""
        if isinstance(entry.body, dict):
            return entry
        return FakeError(status=entry.status, headers=entry.headers, body={"error": entry.body})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await self.record(request)
        taken = self.take(request, body)
        if isinstance(taken, web.StreamResponse):
            return taken
        entry, drop_after = taken
        if not isinstance(body, dict) or body.get("stream", True):
            return await self.stream_lines(request, self.lines(body, entry),
                                           content_type="application/x-ndjson",
                                           drop_after=drop_after)
        return web.json_response(self.final(body, entry, whole=True))

    @staticmethod
    def _model(body: Any, reply: FakeReply) -> str:
        model = reply.model or (body.get("model") if isinstance(body, dict) else None)
        return model or "llama3.2:3b"

    @staticmethod
    def _thinks(body: Any, reply: FakeReply) -> bool:
        return bool(reply.reasoning) and isinstance(body, dict) and bool(body.get("think"))

    def final(self, body: Any, reply: FakeReply, *, whole: bool) -> dict[str, Any]:
        """The `done: true` object: the whole reply, or a streamed reply's last line."""
        message: dict[str, Any] = {"role": "assistant", "content": reply.text if whole else ""}
        if whole and self._thinks(body, reply):
            message["thinking"] = reply.reasoning
        if reply.tool_calls and whole:
            message["tool_calls"] = [{"function": {"name": name, "arguments": _args(args)}}
                                     for name, args in reply.tool_calls]
        return {
            "model": self._model(body, reply), "created_at": _CREATED, "message": message,
            "done": True, "done_reason": reply.finish_reason or "stop",
            "total_duration": 1000, "load_duration": 10, "prompt_eval_count": reply.input_tokens,
            "prompt_eval_duration": 100, "eval_count": reply.output_tokens,
            "eval_duration": 500,
        }

    def lines(self, body: Any, reply: FakeReply) -> list[bytes]:
        """The NDJSON lines of a streamed reply."""
        model = self._model(body, reply)

        def line(message: dict[str, Any]) -> bytes:
            obj = {"model": model, "created_at": _CREATED,
                   "message": {"role": "assistant", "content": "", **message}, "done": False}
            return json.dumps(obj).encode() + b"\n"

        out: list[bytes] = []
        if self._thinks(body, reply):
            out.extend(line({"thinking": piece})
                       for piece in split_text(reply.reasoning or "", None))
        out.extend(line({"content": piece}) for piece in split_text(reply.text, reply.chunks))
        if reply.tool_calls:
            # Ollama sends the calls whole, in one chunk before the final one.
            out.append(line({"tool_calls": [
                {"function": {"name": name, "arguments": _args(args)}}
                for name, args in reply.tool_calls]}))
        out.append(json.dumps(self.final(body, reply, whole=False)).encode() + b"\n")
        return out
